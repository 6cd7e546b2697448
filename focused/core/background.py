"""The unlabelled background of a critic from examples: the shipped corpora, the user's folders, crawl databases
and WARC files, sampled.

:func:`read_background` samples the shipped corpora (WebKB and Wikispeedia, from the corpora folder,
``$FOCUSED_CORPORA``) and, apart, the user's own sources: pages of the kind the crawl will meet (docs/topic.md,
"Examples unlike the background"). :func:`background_key` names a background for the critics' cache
(:func:`focused.core.examples.prepare_crawl`). Scrapy-free.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import logging
import os
import random
import secrets
from collections.abc import Collection, Generator, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from focused.errors import ConfigError

__all__ = [
    "BACKGROUNDS",
    "DamagedTexts",
    "background_key",
    "background_texts",
    "check_background",
    "corpus_texts",
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
        for url, body, charset in stored_pages(path):
            yield url, html_to_text(body, charset)
        return
    if not path.is_dir():
        raise ConfigError(f"background {source!r}: {_NOT_A_BACKGROUND}")
    for file in folder_files(path):
        yield str(file), html_to_text(file.read_bytes())


#: The shipped corpora's texts as :func:`corpus_texts` keeps them: gzipped JSON lines, a header, then one
#: ``[URL, text]`` a page.
TEXTS_FORMAT = "focused-background-texts"
TEXTS_VERSION = 1
#: The modules whose code makes a corpus page's text: a kept file names a digest of them, so a change to any of
#: them reads the corpus again.
_TEXT_MODULES = (
    "focused.corpora.webkb",
    "focused.corpora.wikispeedia",
    "focused.page.parse",
    "focused.page.parsed",
    "focused.page.stream",
    "focused.page.text",
    "focused.wiki.render",
)


def corpus_texts(source: str, cache: Path | None) -> Iterator[tuple[str, str]]:
    """:func:`background_texts` of a shipped corpus, kept in the folder ``cache`` as they are first read (a corpus
    is parsed page by page; kept texts are only read back: docs/results.md, "Topics from examples"). The file is
    named by the corpus file's size and time of change and by the code that makes the texts, and is kept only once
    every page is in it. A kept file found not as written (damaged, cut short) is removed and
    :class:`DamagedTexts` raised: :func:`read_background` then reads the corpus again. Without ``cache``, or for
    another source, the texts as :func:`background_texts` gives them."""
    path = _texts_path(source, cache) if cache is not None and source in BACKGROUNDS else None
    if path is None:
        yield from background_texts(source)
    elif path.is_file():
        yield from _kept_texts(path, source)
    else:
        yield from _keeping(path, source, background_texts(source))


class DamagedTexts(Exception):
    """A file of kept corpus texts is not as :func:`corpus_texts` wrote it (it has been removed)."""


def _texts_path(source: str, cache: Path) -> Path | None:
    """Where ``source``'s texts are kept; None when the corpus or this code cannot be read (nothing is kept)."""
    import importlib

    from focused.corpora import corpora_dir

    name = "webkb-dev.tar.gz" if source == "webkb" else "wikispeedia.tar.gz"
    try:
        stat = (corpora_dir() / name).stat()
        digest = hashlib.sha256()
        for module in _TEXT_MODULES:
            file = importlib.import_module(module).__file__
            if file is None:
                return None
            digest.update(Path(file).read_bytes())
    except OSError:  # no corpus (background_texts says so in one line), or code in an archive: nothing kept
        return None
    code = digest.hexdigest()[:12]
    return cache / f"background-{source}-{stat.st_size}-{stat.st_mtime_ns}-{code}-v{TEXTS_VERSION}.jsonl.gz"


def _kept_texts(path: Path, source: str) -> Iterator[tuple[str, str]]:
    """The pages kept in ``path``, as written: a header, ``[URL, text]`` lines, then the number of pages."""
    count = 0
    try:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            header = json.loads(next(lines))
            if header != {"format": TEXTS_FORMAT, "version": TEXTS_VERSION, "source": source}:
                raise ValueError("not a file of kept texts")
            for line in lines:
                page = json.loads(line)
                if isinstance(page, dict):  # the last line: how many pages came before
                    if page != {"pages": count} or next(lines, None) is not None:
                        raise ValueError("the count of pages does not match")
                    return
                if not (isinstance(page, list) and len(page) == 2 and all(isinstance(x, str) for x in page)):
                    raise ValueError("not a page")
                count += 1
                yield page[0], page[1]
            raise ValueError("cut short")
    except (OSError, EOFError, StopIteration, UnicodeDecodeError, ValueError) as exc:  # gzip's and JSON's too
        with contextlib.suppress(OSError):
            path.unlink()
        raise DamagedTexts(f"background {source}: {path} is not as it was written ({exc})") from None


def _keeping(path: Path, source: str, pages: Iterator[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    """``pages``, each written to ``path`` as it goes by; the file is in place once the last page is (a temporary
    file renamed), and the corpus's other kept files are removed. A folder that cannot take it is logged, and the
    pages go on."""
    out: Any = None
    tmp = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = str(path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"))  # the umask's mode
        # open across the yields below, closed by them or by the finally clause
        out = gzip.open(tmp, "xt", encoding="utf-8", compresslevel=1)  # noqa: SIM115
        out.write(json.dumps({"format": TEXTS_FORMAT, "version": TEXTS_VERSION, "source": source}) + "\n")
    except OSError as exc:
        _cannot_keep(source, path, exc, out, tmp)
        out = None
    count = 0
    try:
        for url, text in pages:
            if out is not None:
                try:
                    out.write(json.dumps([url, text], ensure_ascii=False) + "\n")
                except OSError as exc:
                    _cannot_keep(source, path, exc, out, tmp)
                    out = None
            count += 1
            yield url, text
        if out is not None:
            try:
                out.write(json.dumps({"pages": count}) + "\n")
                out.close()
                out = None
                os.replace(tmp, path)
            except OSError as exc:
                _cannot_keep(source, path, exc, out, tmp)
                out = None
            else:
                for old in path.parent.glob(f"background-{source}-*.jsonl.gz"):
                    if old != path:
                        with contextlib.suppress(OSError):
                            old.unlink()
    finally:
        if out is not None:  # not every page went by: nothing kept
            _cannot_keep(source, path, None, out, tmp)


def _cannot_keep(source: str, path: Path, exc: OSError | None, out: Any, tmp: str) -> None:
    """Give up keeping ``source``'s texts (logged when ``exc`` says why): the temporary file closed and removed."""
    if exc is not None:
        logger.warning("background %s: cannot keep its texts in %s (%s)", source, path.parent, exc.strerror or exc)
    if out is not None:
        with contextlib.suppress(OSError):
            out.close()
    if tmp:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def stored_pages(path: Path) -> Generator[tuple[str, bytes, str | None], None, None]:
    """(URL, body, charset) of the pages a crawl database (``.sqlite``) or a WARC file (``.warc[.gz]``) holds:
    the charset is the one the body is to be decoded by (a WARC response's ``Content-Type``; a database keeps its
    pages decoded, given back as UTF-8 whatever their ``<meta>`` says), or None. ConfigError (one line) when it is
    neither or is damaged."""
    from focused.crawldb import CrawlDBError, iter_pages
    from focused.page.text import content_type_charset
    from focused.replay.files import StoreError
    from focused.replay.warc import iter_warc

    if not path.is_file():
        raise ConfigError(f"{path}: no such file (expected a crawl database .sqlite or a WARC .warc[.gz])")
    try:
        if path.name.endswith((".warc", ".warc.gz")):
            for resp in iter_warc(path):
                if resp.status == 200:
                    yield resp.url, resp.body, content_type_charset(resp.header("Content-Type"))
        else:
            for page in iter_pages(path, with_html=True):
                if page.html_blob:
                    yield page.url, page.html.encode("utf-8"), "utf-8"
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
    cache: Path | None = None,
) -> list[str]:
    """Background texts, positives left out: up to ``limit`` sampled uniformly (reservoir) over the shipped
    corpora (:data:`BACKGROUNDS`) and ``extra`` (more (URL, text) pairs), and up to ``limit`` more over the
    other sources: folders of pages, crawl databases, WARC files. Those are the user's pages of the kind the
    crawl will meet (docs/topic.md, "Examples unlike the background"): sampled among the corpora's 11,500 pages,
    a thousand of them would be a twelfth of the sample. With ``cache``, the corpora's texts are kept in that
    folder (:func:`corpus_texts`): the same sample, read back instead of parsed again.
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
            if not text or text.isspace() or text in exclude:  # no word (str.split's whitespace is isspace's)
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
        for attempt in range(len(corpora) + 1):  # a damaged file of kept texts is removed, and read again
            try:
                texts = chain(*(corpus_texts(s, cache) for s in corpora), extra or ())  # extra: after the corpora
                sample = _reservoir(kept(texts), limit, rng, corpora)
                break
            except DamagedTexts as exc:
                if attempt == len(corpora):
                    raise ConfigError(str(exc)) from None
                logger.warning("%s; reading the corpus again", exc)
                rng = random.Random(seed)
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
    """ConfigError for a background source that is neither a shipped corpus nor a folder nor a crawl database or
    WARC file whose first page can be read: one line before the corpora are read and the critic trained, not after."""
    for source in sources:
        if source in BACKGROUNDS:
            continue
        path = Path(source).expanduser()
        if not path.exists():
            raise ConfigError(f"background {source!r}: {_NOT_A_BACKGROUND}")
        if path.is_file():
            pages = stored_pages(path)
            try:
                next(pages, None)
            except ConfigError as exc:
                raise ConfigError(f"background {source!r}: {exc}") from None
            finally:
                pages.close()


def background_key(sources: Sequence[str]) -> str:
    """The background's part of a cached critic's name: the sources, and each file's size and time of change
    (a crawl database that grew since gives another critic)."""
    parts = []
    for source in sources:
        path = Path(source).expanduser()
        stat = path.stat() if source not in BACKGROUNDS and path.is_file() else None
        parts.append(f"{source}:{stat.st_size}:{stat.st_mtime_ns}" if stat else source)
    return ",".join(parts)
