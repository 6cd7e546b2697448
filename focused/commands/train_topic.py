"""``focused train-topic``: a critic for a topic given by example pages (docs/topic.md).

ACHE's main workflow: the user has pages about a topic that no shipped taxonomy
has. The positives are pages (files, folders of files), URLs (fetched, with the
crawl's address rules: ``--allow-internal`` as ``FOCUSED_ALLOW_INTERNAL``) or URLs
whose pages are looked up in crawl databases or WARC files (``--from``). The
background, by default the pages of the shipped taxonomies' corpora (WebKB and
Wikispeedia, from the corpora folder, ``$FOCUSED_CORPORA``), is *unlabelled*: it may
hold pages of the topic too. The critic is a positive-unlabelled learner
(:mod:`focused.learning.critic.examples`): Pr(topic | page) >= 0.5 means on topic. A
k-fold cross-validation says how held-out examples fare, and one line warns when
the model would reject its own examples. ``scrapy crawl focused -a examples=...``
trains the same critic at the start of a crawl. The corpora's pages are read once and
kept as text in the default folder of ``FOCUSED_EXAMPLES_CACHE``, as a crawl keeps them:
the next topics read those files instead.
"""

from __future__ import annotations

import argparse
import logging
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from focused.cli import positive_int
from focused.commands.markines import fail
from focused.errors import ConfigError
from focused.settings import defaults

if TYPE_CHECKING:
    from focused.core.examples import Examples

logger = logging.getLogger(__name__)

_URL_RE = re.compile(r"^https?://\S+$", re.IGNORECASE)


class InputError(ConfigError):
    """Bad input for train-topic: one line for the user."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train-topic",
        help="train a critic for a topic from example pages (against an unlabelled background)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--positive",
        action="append",
        required=True,
        metavar="FILE_OR_URLS",
        help="an example page (file), a folder of pages, a file listing URLs or paths, or URL[,URL...] (repeatable)",
    )
    parser.add_argument("--out", "-o", required=True, metavar="M.npz", help="critic model file to write")
    parser.add_argument("--name", help="topic name (default: the output file's stem)")
    parser.add_argument(
        "--negative",
        action="append",
        default=[],
        metavar="FILE_OR_URLS",
        help="pages known to be off topic, in the forms of --positive (optional, repeatable)",
    )
    parser.add_argument(
        "--keyword", action="append", default=[], metavar="WORDS", help="words of the topic (optional, repeatable)"
    )
    parser.add_argument(
        "--from",
        dest="sources",
        action="append",
        default=[],
        metavar="CRAWL.sqlite|FILE.warc.gz",
        help="where to find the pages of positive URLs (repeatable; default: fetch them)",
    )
    parser.add_argument(
        "--allow-internal",
        default="",
        metavar="HOSTS",
        help="internal hosts the URLs may be fetched from, as FOCUSED_ALLOW_INTERNAL (e.g. 127.0.0.1:8000)",
    )
    parser.add_argument(
        "--background",
        action="append",
        metavar="webkb|wiki|PATH",
        help="unlabelled pages: a shipped corpus or a folder, WARC or crawl database (default: webkb and wiki)",
    )
    parser.add_argument(
        "--max-background",
        type=positive_int,
        default=defaults.FOCUSED_EXAMPLES_MAX_BACKGROUND,
        help="background pages sampled at most (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default: 0)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except ConfigError as exc:
        return fail(str(exc))


def _run(args: argparse.Namespace) -> int:
    # here, not at the top: `focused --help` and every other command import this module
    from focused.addresses import AddressPolicy, AllowListError
    from focused.core.background import BACKGROUNDS, check_background
    from focused.core.examples import topic_name, train_topic
    from focused.paths import project_path

    out = Path(args.out)
    name = topic_name("", args.name or out.name.split(".")[0])
    try:  # before the training
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--out {out}: cannot make its folder ({exc.strerror or exc})") from None
    try:
        policy = AddressPolicy.from_setting(args.allow_internal)
    except AllowListError as exc:
        raise InputError(str(exc)) from exc
    start = time.perf_counter()
    examples = read_positives(args.positive, args.sources, policy)
    negatives = read_positives(args.negative, args.sources, policy) if args.negative else None
    backgrounds = args.background or list(BACKGROUNDS)
    try:
        check_background(backgrounds)
    except ConfigError as exc:
        raise InputError(f"--{exc}") from exc
    cache = project_path(defaults.FOCUSED_EXAMPLES_CACHE)  # the corpora's texts, kept as a crawl keeps them
    trained = train_topic(
        examples,
        name,
        backgrounds,
        args.max_background,
        args.seed,
        negatives=negatives,
        keywords=args.keyword,
        cache=cache,
    )
    for line in trained.report.lines():
        print(line)
    try:
        trained.critic.save(out)
    except OSError as exc:
        raise InputError(f"--out {out}: cannot write it ({exc.strerror or exc})") from None
    print(
        f"topic {name!r}: {trained.report.positives} example pages, {trained.report.background} background pages "
        f"({', '.join(map(str, backgrounds))}) in {time.perf_counter() - start:.1f} s"
    )
    seeds = " -a seeds=URL" if not examples.urls else ""
    print(f"wrote {out}; crawl with: scrapy crawl focused -a model={out} -a topic={name}{seeds}")
    return 0


# ---------------------------------------------------------------------- positives


def read_positives(specs: list[str], sources: list[str], policy: object) -> Examples:
    """The example pages of ``specs``; with ``sources`` their URLs are looked up there instead of fetched."""
    from focused.addresses import AddressPolicy
    from focused.core.examples import Examples, read_examples

    assert isinstance(policy, AddressPolicy)
    if not sources:
        try:
            return read_examples(specs, policy=policy)
        except ConfigError as exc:
            raise InputError(f"--positive: {exc}") from exc
    local = [s for s in specs if not all(_URL_RE.match(p.strip()) for p in s.split(",") if p.strip())]
    urls = [p.strip() for s in specs if s not in local for p in s.split(",") if p.strip()]
    found = read_examples(local, policy=policy, fetch_urls=False) if local else Examples([], [])
    found.urls.extend(urls)
    listed = found.urls
    pages = lookup_pages(listed, sources)
    missing = [u for u in listed if u not in pages]
    if missing:
        more = f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""
        raise InputError(
            f"{len(missing)} of {len(listed)} positive URLs are in none of {', '.join(sources)}: "
            f"{', '.join(missing[:3])}{more}"
        )
    for url in listed:  # decoded by the charset they were stored with, as fetched examples are
        body, charset = pages[url]
        if charset:
            found.charsets[len(found.bodies)] = charset
        found.bodies.append(body)
        found.names.append(url)
    return found


def lookup_pages(urls: list[str], sources: list[str]) -> dict[str, tuple[bytes, str | None]]:
    """The stored page of each URL found (``dir``, ``dir/`` and ``dir/index.html`` alike), and its charset."""
    from focused.core.background import stored_pages
    from focused.learning.apprentice.data import fetch_key

    wanted: dict[str, list[str]] = {}
    for url in urls:
        try:
            wanted.setdefault(fetch_key(url), []).append(url)
        except ValueError as exc:
            raise InputError(f"positive URL {url!r} is not a valid absolute URL") from exc
    found: dict[str, tuple[bytes, str | None]] = {}
    for source in sources:
        for url, body, charset in stored_pages(Path(source)):
            try:
                key = fetch_key(url)
            except ValueError:
                continue
            for original in wanted.get(key, []):
                found.setdefault(original, (body, charset))
    return found
