"""``focused train-topic``: a binary critic for a topic given by example pages.

ACHE's main workflow: the user has pages about a topic that no shipped taxonomy
has. The positives are pages (files, folders of files) or URLs whose pages are
looked up in crawl databases or WARC files (``--from``); the negatives are a
background of pages about everything else, by default the pages of the shipped
taxonomies' corpora (WebKB and Wikispeedia, read from the configurable corpora
folder, ``$FOCUSED_CORPORA``). The result is an ordinary naive Bayes critic with
two classes, the topic and ``background``, with equal class priors (the size of
the background is arbitrary) and the positive URLs as the topic's example seeds,
so ``scrapy crawl focused -a model=M.npz -a topic=NAME`` uses it as it is.

A background page about the topic (a course page of WebKB when the topic is
courses) is a wrong negative; drop such sources with ``--background``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from focused.cli import positive_int
from focused.commands.markines import fail

if TYPE_CHECKING:
    from focused.learning.critic.naive_bayes import Critic

logger = logging.getLogger(__name__)

BACKGROUNDS = ("webkb", "wiki")
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")
_URL_RE = re.compile(r"^https?://\S+$", re.IGNORECASE)


class InputError(Exception):
    """Bad input for train-topic: one line for the user."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train-topic",
        help="train a binary critic for a topic from example pages (against a background of other pages)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--positive",
        action="append",
        required=True,
        metavar="FILE_OR_URLS",
        help="an example page (file), a folder of pages, a file listing URLs, or URL[,URL...] (repeatable)",
    )
    parser.add_argument("--out", "-o", required=True, metavar="M.npz", help="critic model file to write")
    parser.add_argument("--name", help="topic name (default: the output file's stem)")
    parser.add_argument(
        "--from",
        dest="sources",
        action="append",
        default=[],
        metavar="CRAWL.sqlite|FILE.warc.gz",
        help="where to find the pages of positive URLs (repeatable)",
    )
    parser.add_argument(
        "--background",
        action="append",
        metavar="webkb|wiki|PATH",
        help="negative pages: a shipped corpus or a folder, WARC or crawl database (default: webkb and wiki)",
    )
    parser.add_argument(
        "--max-background",
        type=positive_int,
        default=3000,
        help="background pages sampled at most (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default: 0)")
    parser.add_argument(
        "--holdout",
        type=float,
        default=0.0,
        metavar="FRACTION",
        help="first train without this fraction of the positives and of the background and print how the "
        "held-out pages rank (ROC AUC); the model written is then trained on all (default: 0, no check)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except InputError as exc:
        return fail(str(exc))


def _run(args: argparse.Namespace) -> int:
    from focused.page.text import html_to_text

    out = Path(args.out)
    name = args.name or out.name.split(".")[0]
    if not _NAME_RE.match(name) or name == "background":
        raise InputError(
            f"topic name {name!r}: use letters, digits, '_' or '-' (dots for a hierarchy), not 'background'; "
            "pass --name NAME"
        )
    if not 0.0 <= args.holdout < 1.0:
        raise InputError(f"--holdout {args.holdout}: a fraction in [0, 1)")
    start = time.perf_counter()
    pages, urls = read_positives(args.positive, args.sources)
    texts = [html_to_text(body) for body in pages]
    texts = [t for t in texts if t.split()]
    if len(texts) < 2:
        raise InputError(f"need at least 2 positive pages with text, got {len(texts)}")
    backgrounds = args.background or list(BACKGROUNDS)
    negatives = read_background(backgrounds, args.max_background, args.seed, exclude=set(texts), exclude_urls=urls)
    if len(negatives) < 2:
        raise InputError(f"need at least 2 background pages, got {len(negatives)} from {', '.join(backgrounds)}")
    if args.holdout:
        print(holdout_check(name, texts, negatives, args.holdout, args.seed))
    meta = {
        "topic_from_examples": {
            "positives": len(texts),
            "background": len(negatives),
            "background_sources": [str(b) for b in backgrounds],
        }
    }
    train_topic_critic(name, texts, negatives, metadata=meta, examples={name: urls[:20]}).save(out)
    print(
        f"topic {name!r}: {len(texts)} positive pages, {len(negatives)} background pages "
        f"({', '.join(map(str, backgrounds))}) in {time.perf_counter() - start:.1f} s"
    )
    print(f"wrote {out}; crawl with: scrapy crawl focused -a model={out} -a topic={name} -a seeds=URL")
    return 0


def train_topic_critic(name: str, positives: list[str], negatives: list[str], **kw: Any) -> Critic:
    """A two-class critic (``name`` vs ``background``) with equal class priors: the background's size
    says nothing about how common the topic is."""
    from focused.learning.critic.naive_bayes import Critic

    labels = [name] * len(positives) + ["background"] * len(negatives)
    critic = Critic.train(positives + negatives, labels, **kw)
    return Critic(
        critic.classes,
        np.ones(len(critic.classes)),
        critic.feature_count_,
        alpha=critic.alpha,
        n_features=critic.n_features,
        length_scale=critic.length_scale,
        metadata=critic.metadata,
        examples=critic.examples,
    )


def holdout_check(name: str, positives: list[str], negatives: list[str], fraction: float, seed: int) -> str:
    """Train without ``fraction`` of each side; how the held-out pages rank, as one line."""
    from sklearn.metrics import roc_auc_score

    rng = random.Random(seed)
    pos, neg = positives[:], negatives[:]
    rng.shuffle(pos)
    rng.shuffle(neg)
    n_pos, n_neg = max(1, round(len(pos) * fraction)), max(1, round(len(neg) * fraction))
    if len(pos) - n_pos < 1 or len(neg) - n_neg < 1:
        raise InputError(f"--holdout {fraction}: too few pages to hold some out ({len(pos)} positives)")
    critic = train_topic_critic(name, pos[n_pos:], neg[n_neg:])
    topic = critic.resolve_topic(name)
    held = critic.relevance(pos[:n_pos] + neg[:n_neg], topic)
    y = np.array([1] * n_pos + [0] * n_neg)
    auc = roc_auc_score(y, held)
    return (
        f"held out {n_pos} positive and {n_neg} background pages: ROC AUC {auc:.3f}; "
        f"relevance > 0.5 for {np.mean(held[:n_pos] > 0.5):.0%} of the positives and "
        f"{np.mean(held[n_pos:] > 0.5):.1%} of the background"
    )


# ---------------------------------------------------------------------- positives


def _is_url_list(path: Path) -> list[str] | None:
    try:
        lines = [ln.split("#", 1)[0].strip() for ln in path.read_text(encoding="utf-8").splitlines()]
    except (OSError, UnicodeDecodeError):
        return None
    lines = [ln for ln in lines if ln]
    return lines if lines and all(_URL_RE.match(ln) for ln in lines) else None


def read_positives(specs: list[str], sources: list[str]) -> tuple[list[bytes], list[str]]:
    """Page bodies of the positives, and the URLs among them (in the order given)."""
    bodies: list[bytes] = []
    urls: list[str] = []
    for spec in specs:
        parts = [p.strip() for p in spec.split(",") if p.strip()]
        if parts and all(_URL_RE.match(p) for p in parts):
            urls.extend(parts)
            continue
        path = Path(spec)
        if not path.exists():
            raise InputError(f"--positive {spec!r}: no such file or folder, and not http(s) URLs")
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
            if not files:
                raise InputError(f"--positive {spec}: the folder holds no files")
            bodies.extend(p.read_bytes() for p in files)
            continue
        listed = _is_url_list(path)
        if listed is not None:
            urls.extend(listed)
        else:
            bodies.append(path.read_bytes())
    if urls:
        if not sources:
            raise InputError(
                f"{len(urls)} positive URLs but no --from: pass the crawl databases or WARC files holding their pages"
            )
        found = lookup_pages(urls, sources)
        missing = [u for u in urls if u not in found]
        if missing:
            more = f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""
            raise InputError(
                f"{len(missing)} of {len(urls)} positive URLs are in none of {', '.join(sources)}: "
                f"{', '.join(missing[:3])}{more}"
            )
        bodies.extend(found[u] for u in urls)
    return bodies, urls


def _stored_pages(source: str) -> Iterator[tuple[str, bytes]]:
    """(URL, body) of the pages of a crawl database or a WARC file."""
    from focused.crawldb import CrawlDBError, iter_pages
    from focused.replay.files import StoreError
    from focused.replay.warc import iter_warc

    path = Path(source)
    if not path.is_file():
        raise InputError(f"{source}: no such file (expected a crawl database .sqlite or a WARC .warc[.gz])")
    try:
        if path.name.endswith((".warc", ".warc.gz")):
            for resp in iter_warc(path):
                if resp.status == 200:
                    yield resp.url, resp.body
        else:
            for page in iter_pages(path, with_html=True):
                if page.html_blob:
                    yield page.url, page.html.encode("utf-8")
    except (CrawlDBError, StoreError) as exc:
        raise InputError(f"{source}: {exc}") from exc


def lookup_pages(urls: list[str], sources: list[str]) -> dict[str, bytes]:
    """The stored page of each URL found (``dir``, ``dir/`` and ``dir/index.html`` alike)."""
    from focused.learning.apprentice.data import fetch_key

    wanted: dict[str, list[str]] = {}
    for url in urls:
        try:
            wanted.setdefault(fetch_key(url), []).append(url)
        except ValueError as exc:
            raise InputError(f"positive URL {url!r} is not a valid absolute URL") from exc
    found: dict[str, bytes] = {}
    for source in sources:
        for url, body in _stored_pages(source):
            try:
                key = fetch_key(url)
            except ValueError:
                continue
            for original in wanted.get(key, []):
                found.setdefault(original, body)
    return found


# ---------------------------------------------------------------------- background


def _background_texts(source: str) -> Iterator[tuple[str, str]]:
    """(URL or file name, visible text) of every page of one background source."""
    from focused.corpora import corpora_dir
    from focused.corpora.webkb import ArchiveError, iter_webkb
    from focused.page.text import html_to_text

    if source == "webkb":
        archive = corpora_dir() / "webkb-dev.tar.gz"
        try:
            for page in iter_webkb(archive):
                if page.status == 200:
                    yield page.url, html_to_text(page.body)
        except ArchiveError as exc:
            raise InputError(f"background webkb: {exc} (set FOCUSED_CORPORA, or pass --background PATH)") from exc
        return
    if source == "wiki":
        from focused.corpora.wikispeedia import WikispeediaError, load_wikispeedia

        try:
            wiki = load_wikispeedia(corpora_dir() / "wikispeedia.tar.gz")
        except WikispeediaError as exc:
            raise InputError(f"background wiki: {exc} (set FOCUSED_CORPORA, or pass --background PATH)") from exc
        from focused.wiki.render import article_url

        for name, article in wiki.articles.items():  # under its URL on the rendered site, to leave positives out
            yield article_url(name), f"{article.title}\n{article.text}"
        return
    path = Path(source)
    if path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")):
            yield str(file), html_to_text(file.read_bytes())
    elif path.is_file():
        for url, body in _stored_pages(source):
            yield url, html_to_text(body)
    else:
        raise InputError(
            f"--background {source!r}: not {' or '.join(BACKGROUNDS)}, and no such folder, WARC or crawl database"
        )


def read_background(
    sources: list[str], limit: int, seed: int, *, exclude: set[str], exclude_urls: list[str]
) -> list[str]:
    """Up to ``limit`` background texts sampled uniformly (reservoir) over all sources, positives left out."""
    from focused.learning.apprentice.data import fetch_key

    skip_keys = set()
    for url in exclude_urls:
        with contextlib.suppress(ValueError):
            skip_keys.add(fetch_key(url))
    rng = random.Random(seed)
    sample: list[str] = []
    seen = 0
    for source in sources:
        for where, text in _background_texts(source):
            if not text.split() or text in exclude:
                continue
            try:
                if fetch_key(where) in skip_keys:
                    continue
            except ValueError:
                pass
            seen += 1
            if len(sample) < limit:
                sample.append(text)
            else:
                j = rng.randrange(seen)
                if j < limit:
                    sample[j] = text
    logger.info("background: %d of %d pages", len(sample), seen)
    return sample
