"""The unlabelled background of a critic from examples: the shipped corpora, the user's folders, crawl databases
and WARC files, sampled.

:func:`read_background` samples the shipped corpora (WebKB and Wikispeedia, from the corpora folder,
``$FOCUSED_CORPORA``) and, apart, the user's own sources: pages of the kind the crawl will meet (docs/topic.md,
"Examples unlike the background"). :func:`background_key` names a background for the critics' cache
(:func:`focused.core.examples.prepare_crawl`). Scrapy-free.
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path

from focused.errors import ConfigError

__all__ = [
    "BACKGROUNDS",
    "background_key",
    "background_texts",
    "check_background",
    "folder_files",
    "read_background",
    "stored_pages",
]

logger = logging.getLogger(__name__)

#: The shipped background corpora.
BACKGROUNDS = ("webkb", "wiki")
_NOT_A_BACKGROUND = f"not {' or '.join(BACKGROUNDS)}, and no such folder, crawl database or WARC file"


def folder_files(path: Path) -> list[Path]:
    """The files of a folder of pages, its subfolders included, in name order (hidden ones left out)."""
    return sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))


def background_texts(source: str) -> Iterator[tuple[str, str]]:
    """(URL or file name, visible text) of every page of one background source (a corpus or a folder)."""
    from focused.corpora import corpora_dir
    from focused.corpora.webkb import ArchiveError, iter_webkb
    from focused.page.text import html_to_text

    if source == "webkb":
        try:
            for page in iter_webkb(corpora_dir() / "webkb-dev.tar.gz"):
                if page.status == 200:
                    yield page.url, html_to_text(page.body)
        except ArchiveError as exc:
            raise ConfigError(f"background webkb: {exc} (set FOCUSED_CORPORA, or give another background)") from exc
        return
    if source == "wiki":
        from focused.corpora.wikispeedia import WikispeediaError, load_wikispeedia
        from focused.wiki.render import article_url

        try:
            wiki = load_wikispeedia(corpora_dir() / "wikispeedia.tar.gz")
        except WikispeediaError as exc:
            raise ConfigError(f"background wiki: {exc} (set FOCUSED_CORPORA, or give another background)") from exc
        for name, article in wiki.articles.items():  # under its URL on the rendered site, to leave positives out
            yield article_url(name), f"{article.title}\n{article.text}"
        return
    path = Path(source).expanduser()
    if path.is_file():
        for url, body in stored_pages(path):
            yield url, html_to_text(body)
        return
    if not path.is_dir():
        raise ConfigError(f"background {source!r}: {_NOT_A_BACKGROUND}")
    for file in folder_files(path):
        yield str(file), html_to_text(file.read_bytes())


def stored_pages(path: Path) -> Iterator[tuple[str, bytes]]:
    """(URL, body) of the pages a crawl database (``.sqlite``) or a WARC file (``.warc[.gz]``) holds; ConfigError
    (one line) when it is neither or is damaged."""
    from focused.crawldb import CrawlDBError, iter_pages
    from focused.replay.files import StoreError
    from focused.replay.warc import iter_warc

    if not path.is_file():
        raise ConfigError(f"{path}: no such file (expected a crawl database .sqlite or a WARC .warc[.gz])")
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
        raise ConfigError(str(exc) if str(path) in str(exc) else f"{path}: {exc}") from exc


def read_background(
    sources: Sequence[str],
    limit: int,
    seed: int,
    *,
    exclude: Collection[str] = (),
    exclude_urls: Sequence[str] = (),
    extra: Iterator[tuple[str, str]] | None = None,
) -> list[str]:
    """Background texts, positives left out: up to ``limit`` sampled uniformly (reservoir) over the shipped
    corpora (:data:`BACKGROUNDS`) and ``extra`` (more (URL, text) pairs), and up to ``limit`` more over the
    other sources: folders of pages, crawl databases, WARC files. Those are the user's pages of the kind the
    crawl will meet (docs/topic.md, "Examples unlike the background"): sampled among the corpora's 11,500 pages,
    a thousand of them would be a twelfth of the sample.
    """
    from itertools import chain

    from focused.learning.apprentice.data import fetch_key

    exclude = set(exclude)
    skip_keys = set()
    for url in exclude_urls:
        with contextlib.suppress(ValueError):
            skip_keys.add(fetch_key(url))

    def kept(pages: Iterable[tuple[str, str]]) -> Iterator[str]:
        for where, text in pages:
            if not text.split() or text in exclude:
                continue
            try:
                if fetch_key(where) in skip_keys:
                    continue
            except ValueError:
                pass
            yield text

    rng = random.Random(seed)  # one generator for both samples: the corpora's alone are what they always were
    corpora = [s for s in sources if s in BACKGROUNDS]
    own = [s for s in sources if s not in BACKGROUNDS]
    sample = []
    if corpora or extra is not None:
        sample = _reservoir(kept(chain(*(background_texts(s) for s in corpora), extra or ())), limit, rng, corpora)
    if own:
        sample += _reservoir(kept(chain(*(background_texts(s) for s in own))), limit, rng, own)
    return sample


def _reservoir(texts: Iterator[str], limit: int, rng: random.Random, sources: Sequence[str]) -> list[str]:
    """Up to ``limit`` of ``texts`` (from ``sources``), uniformly (reservoir sampling)."""
    sample: list[str] = []
    seen = 0
    for text in texts:
        seen += 1
        if len(sample) < limit:
            sample.append(text)
        else:
            j = rng.randrange(seen)
            if j < limit:
                sample[j] = text
    logger.info("background (%s): %d of %d pages", ", ".join(sources) or "given pages", len(sample), seen)
    return sample


def check_background(sources: Sequence[str]) -> None:
    """ConfigError for a background source that is neither a shipped corpus nor a folder nor a file."""
    for source in sources:
        if source not in BACKGROUNDS and not Path(source).expanduser().exists():
            raise ConfigError(f"background {source!r}: {_NOT_A_BACKGROUND}")


def background_key(sources: Sequence[str]) -> str:
    """The background's part of a cached critic's name: the sources, and each file's size and time of change
    (a crawl database that grew since gives another critic)."""
    parts = []
    for source in sources:
        path = Path(source).expanduser()
        stat = path.stat() if source not in BACKGROUNDS and path.is_file() else None
        parts.append(f"{source}:{stat.st_size}:{stat.st_mtime_ns}" if stat else source)
    return ",".join(parts)
