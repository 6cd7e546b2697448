"""``focused export CRAWL.sqlite --warc OUT.warc.gz``: the pages a crawl database stores, as a WARC file.

One WARC ``response`` record per stored page, in fetch order: its status, a
``Content-Type`` header (the page's type, ``charset=utf-8``: the database keeps
the decoded HTML, written back as UTF-8), a ``Date`` header and ``WARC-Date``
of when the crawl fetched it, and the HTML. The database holds the HTML only
when the crawl ran with ``FOCUSED_DB_STORE_HTML`` on (the default). For the
headers and bodies exactly as fetched, and the request records, crawl with
``-s FOCUSED_WARC=DIR`` instead (docs/output.md).

``focused replay OUT.warc.gz`` serves the file, ``warcio index OUT.warc.gz`` lists it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path

from focused.cli import CommandError, probability


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``export`` to the ``focused`` command line."""
    parser = subparsers.add_parser(
        "export",
        help="write the pages a crawl database stores to a WARC file",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("db", metavar="CRAWL.sqlite", help="the crawl database")
    parser.add_argument(
        "--warc", required=True, metavar="OUT.warc.gz", help="the WARC file to write (.warc.gz, or .warc uncompressed)"
    )
    parser.add_argument(
        "--relevant", action="store_true", help="only the pages the critic judged relevant (Pr(c*|v) >= --threshold)"
    )
    parser.add_argument("--threshold", type=probability, default=0.5, help="Pr(c*|v) of a relevant page (0.5)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from focused.crawldb import CrawlDBError, iter_pages
    from focused.replay.files import StoreError
    from focused.replay.store import StoredResponse
    from focused.replay.warc import write_warc

    db, out = Path(args.db), Path(args.warc)
    if not out.name.endswith((".warc.gz", ".warc")):
        raise CommandError(f"--warc {out}: the name must end in .warc.gz (or .warc), as WARC tools expect")
    if not out.parent.is_dir():
        raise CommandError(f"--warc {out}: the folder {out.parent} does not exist")
    try:
        counts = _scan(db, args.relevant, args.threshold)
    except CrawlDBError as exc:
        raise CommandError(str(exc)) from exc
    stored, with_html, chosen = counts
    if not stored:
        raise CommandError(f"{db} holds no pages: nothing to export")
    if not with_html:
        raise CommandError(
            f"{db} stores no HTML (the crawl ran with FOCUSED_DB_STORE_HTML=False): nothing to export; "
            "crawl with -s FOCUSED_WARC=DIR to write the pages as they are fetched"
        )
    if not chosen:
        raise CommandError(f"{db}: none of its {stored} pages has Pr(c*|v) >= {args.threshold:g}: nothing to export")

    def responses() -> Iterator[StoredResponse]:
        for page in iter_pages(db, with_html=True):
            if page.html_blob is None or (args.relevant and page.relevance < args.threshold):
                continue
            body = page.html.encode("utf-8")
            headers = [
                ("Content-Type", f"{page.content_type or 'text/html'}; charset=utf-8"),
                ("Content-Length", str(len(body))),
                ("Date", formatdate(page.fetched_at, usegmt=True)),
            ]
            yield StoredResponse(page.url, page.status, headers, body)

    try:
        written = write_warc(out, responses())
    except (OSError, StoreError) as exc:
        raise CommandError(f"cannot write {out}: {getattr(exc, 'strerror', None) or exc}") from exc
    skipped = stored - with_html
    which = f"relevant (Pr(c*|v) >= {args.threshold:g}) " if args.relevant else ""
    note = f"; {skipped} stored without HTML left out" if skipped else ""
    print(f"Wrote {written} {which}pages of {stored} to {out}{note}")
    return 0


def _scan(db: Path, relevant: bool, threshold: float) -> tuple[int, int, int]:
    """``(pages, pages with HTML, pages to export)`` (one pass without the HTML)."""
    from focused.crawldb import open_readonly

    conn = open_readonly(db)
    try:
        row = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(html IS NOT NULL), 0), "
            "COALESCE(SUM(html IS NOT NULL AND (? = 0 OR relevance >= ?)), 0) FROM pages",
            (int(relevant), threshold),
        ).fetchone()
    finally:
        conn.close()
    return int(row[0]), int(row[1]), int(row[2])
