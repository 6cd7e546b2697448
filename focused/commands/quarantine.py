"""``focused quarantine``: list or purge the frontier entries a crawl could not read back.

A stored request that does not decode (not JSON, a request class or a callback
focused does not write, binary data) is never handed to Scrapy: the frontier
store moves it to its quarantine with the reason and the time, and the crawl
goes on (``focused/frontier/quarantined`` counts them). This command shows
what is there and deletes it once you have looked::

    focused quarantine list --jobdir crawls/job1
    focused quarantine purge --redis-url redis://127.0.0.1:6379/0 --prefix focused

Listing reads only; purging a job directory's store needs the crawl stopped.
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Any

from focused.cli import CommandError

#: Characters of a quarantined request shown by ``list`` (``--full`` shows all).
PREVIEW = 160


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``quarantine`` to the ``focused`` command line."""
    parser = subparsers.add_parser(
        "quarantine",
        help="list or purge frontier entries that could not be read back",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("action", choices=("list", "purge"), help="list the entries, or delete them")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--jobdir", metavar="DIR", help="the crawl's JOBDIR (its frontier.sqlite)")
    where.add_argument("--frontier", metavar="FILE", help="a frontier store file (JOBDIR/frontier.sqlite)")
    where.add_argument("--redis-url", metavar="URL", help="the shared frontier's Redis (redis://HOST:PORT/DB)")
    parser.add_argument(
        "--prefix", default="focused", help="the Redis keys' prefix (FOCUSED_REDIS_PREFIX, else the spider's name)"
    )
    parser.add_argument("--full", action="store_true", help="list: show whole requests, not their beginning")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.redis_url:
        entries, purge = _redis(args.redis_url, args.prefix, args.action == "purge")
        where = f"Redis frontier {args.prefix} at {args.redis_url}"
    else:
        path = Path(args.frontier) if args.frontier else Path(args.jobdir, "frontier.sqlite")
        entries, purge = _sqlite(path, args.action == "purge")
        where = str(path)
    if args.action == "purge":
        print(f"purged {purge} quarantined entries from {where}")
        return 0
    for entry in entries:
        print(_line(entry, args.full))
    print(f"{len(entries)} quarantined entries in {where}")
    return 0


def _sqlite(path: Path, purge: bool) -> tuple[list[dict[str, Any]], int]:
    from focused.frontier.sqlitefile import purge_quarantine, read_quarantine
    from focused.frontier.store import StoreError

    try:
        if purge:
            return [], purge_quarantine(path)
        return read_quarantine(path), 0
    except StoreError as exc:
        raise CommandError(str(exc)) from None


def _redis(url: str, prefix: str, purge: bool) -> tuple[list[dict[str, Any]], int]:
    import redis

    from focused.frontier.redis import connect, purge_quarantine, read_quarantine

    try:
        client = connect(url, timeout=5.0)
    except ValueError as exc:  # not a redis:// URL
        raise CommandError(f"--redis-url {url}: {exc}") from None
    try:
        if purge:
            return [], purge_quarantine(client, prefix)
        return [{"key": key, **record} for key, record in read_quarantine(client, prefix).items()], 0
    except redis.RedisError as exc:
        raise CommandError(f"--redis-url {url}: Redis does not answer ({exc})") from None
    finally:
        client.close()


def _line(entry: dict[str, Any], full: bool) -> str:
    """One entry: when, its key, why, and (the beginning of) what was stored."""
    at = entry.get("at")
    when = dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ") if isinstance(at, int | float) else "?"
    item = entry.get("item")
    shown = repr(item) if not full or not isinstance(item, str) else item
    if not full and len(shown) > PREVIEW:
        shown = shown[:PREVIEW] + "..."
    return f"{when}  {entry.get('key')}  {entry.get('reason')}  {shown}"
