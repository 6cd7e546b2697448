"""Read the Wikispeedia archive: the 2007 Wikipedia for Schools articles, links and categories.

Layout (``wikispeedia/`` inside the ``.tar.gz`` or an extracted folder)::

    plaintext_articles/<name>.txt   article text, name URL-encoded (``%C3%85land``)
    articles.tsv                    the article list
    links.tsv                       source<TAB>target
    categories.tsv                  article<TAB>subject.A.B.C

Names are URL-decoded on reading (``Åland``, ``Mercury_(planet)``). Every text file
is an article: 4,598 are listed in ``articles.tsv``; the other 6 are pages of the
original Schools DVD (the GFDL text and five SOS Children donation forms), kept with
no categories and no links and marked ``listed=False``.

The article text loses the Wikispeedia boilerplate: the ``#copyright`` marker, the
title line (kept as :attr:`Article.title`), the "2007 Schools Wikipedia Selection.
Related subjects: ..." block (it names the article's categories, i.e. the labels)
and the trailing "Retrieved from ... Disclaimer." licence notice. Paragraphs stay
separated by blank lines.
"""

from __future__ import annotations

import functools
import re
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from focused.corpora.webkb import ArchiveError

_PREFIX = "wikispeedia/"
_TEXT_DIR = "plaintext_articles/"
_SUBJECT = "subject."
_RELATED = "2007 Schools Wikipedia Selection"
_RETRIEVED = "Retrieved from "
_TRAILING_SPACE = re.compile(r"[ \t\r]+$", re.MULTILINE)


class WikispeediaError(ArchiveError):
    """The archive is missing, unreadable or not in the Wikispeedia layout."""


@dataclass(frozen=True)
class Article:
    """One article: decoded ``name`` (``Mercury_(planet)``), displayed ``title`` and body ``text``."""

    name: str
    title: str
    text: str = field(repr=False)
    listed: bool = True


@dataclass
class Wikispeedia:
    """The whole corpus, keyed by decoded article name.

    ``links[name]`` lists the targets in file order (self-links dropped);
    ``categories[name]`` the dotted category paths without ``subject.``
    (``Science.Physics.The_Planets``), empty for an uncategorised page.
    """

    articles: dict[str, Article]
    links: dict[str, list[str]]
    categories: dict[str, list[str]]

    def in_links(self) -> dict[str, list[str]]:
        """Return target -> sources, the reverse of :attr:`links`."""
        rev: dict[str, list[str]] = {name: [] for name in self.articles}
        for source, targets in self.links.items():
            for target in targets:
                rev[target].append(source)
        return rev


def split_article(raw: str, name: str) -> tuple[str, str]:
    """Split a plaintext article file into ``(title, body)``, dropping the boilerplate."""
    lines = raw.replace("\r\n", "\n").split("\n")
    i = 0

    def skip_blank() -> None:
        nonlocal i
        while i < len(lines) and not lines[i].strip():
            i += 1

    title = unquote(name).replace("_", " ")
    skip_blank()
    if i < len(lines) and lines[i].strip() == "#copyright":
        i += 1
        skip_blank()
        if i < len(lines):
            title = lines[i].strip() or title
            i += 1
        skip_blank()
        if i < len(lines) and lines[i].startswith(_RELATED):
            while i < len(lines) and lines[i].strip():
                i += 1
    body = lines[i:]
    for j in range(len(body) - 1, -1, -1):
        if body[j].strip().startswith(_RETRIEVED):
            body = body[:j]
            break
    return title, _TRAILING_SPACE.sub("", "\n".join(body)).strip("\n")


def _tsv_rows(text: str) -> Iterator[list[str]]:
    for line in text.splitlines():
        if line and not line.startswith("#"):
            yield line.split("\t")


def _read_members(path: Path) -> Iterator[tuple[str, bytes]]:
    """Yield ``(path relative to wikispeedia/, bytes)`` for every file of the corpus."""
    if path.is_dir():
        root = path / "wikispeedia" if (path / "wikispeedia").is_dir() else path
        for file in sorted(root.rglob("*")):
            if file.is_file():
                yield file.relative_to(root).as_posix(), file.read_bytes()
        return
    with tarfile.open(path, "r:*") as tar:
        for member in tar:
            if not member.isfile():
                continue
            name = member.name.removeprefix("./")
            rel = name[len(_PREFIX) :] if name.startswith(_PREFIX) else name
            handle = tar.extractfile(member)
            if handle is not None:
                yield rel, handle.read()


def load_wikispeedia(path: str | Path) -> Wikispeedia:
    """Load the corpus from the ``.tar.gz`` or an extracted folder.

    Raises
    ------
    WikispeediaError
        When the path does not exist, cannot be read, or lacks the texts or TSV files.
    """
    path = Path(path)
    if not path.exists():
        raise WikispeediaError(f"Wikispeedia archive not found: {path}")
    texts: dict[str, str] = {}
    tables: dict[str, str] = {}
    try:
        for rel, data in _read_members(path):
            if rel.startswith(_TEXT_DIR) and rel.endswith(".txt"):
                texts[unquote(rel[len(_TEXT_DIR) : -4])] = data.decode("utf-8", "replace")
            elif rel in ("articles.tsv", "links.tsv", "categories.tsv"):
                tables[rel] = data.decode("utf-8")
    except (OSError, tarfile.TarError, EOFError, UnicodeDecodeError) as exc:
        raise WikispeediaError(f"cannot read Wikispeedia archive {path}: {exc}") from exc
    missing = {"articles.tsv", "links.tsv", "categories.tsv"} - tables.keys()
    if not texts or missing:
        what = ", ".join(sorted(missing)) or "plaintext_articles/"
        raise WikispeediaError(f"not a Wikispeedia archive (no {what}): {path}")
    listed = [unquote(row[0]) for row in _tsv_rows(tables["articles.tsv"])]
    order = [name for name in listed if name in texts]
    order += sorted(texts.keys() - set(listed))
    listed_set = set(listed)
    articles: dict[str, Article] = {}
    for name in order:
        title, body = split_article(texts[name], name)
        articles[name] = Article(name, title, body, name in listed_set)
    return Wikispeedia(
        articles=articles,
        links=_links(_tsv_rows(tables["links.tsv"]), articles),
        categories=_categories(_tsv_rows(tables["categories.tsv"]), articles),
    )


def _links(rows: Iterable[list[str]], articles: dict[str, Article]) -> dict[str, list[str]]:
    links: dict[str, list[str]] = {name: [] for name in articles}
    seen: set[tuple[str, str]] = set()
    decode = functools.lru_cache(maxsize=None)(unquote)
    for row in rows:
        if len(row) < 2:
            continue
        source, target = decode(row[0]), decode(row[1])
        if source == target or source not in articles or target not in articles:
            continue
        if (source, target) not in seen:
            seen.add((source, target))
            links[source].append(target)
    return links


def _categories(rows: Iterable[list[str]], articles: dict[str, Article]) -> dict[str, list[str]]:
    categories: dict[str, list[str]] = {name: [] for name in articles}
    for row in rows:
        if len(row) < 2 or unquote(row[0]) not in categories:
            continue
        cat = row[1].strip().removeprefix(_SUBJECT)
        if cat and cat not in categories[unquote(row[0])]:
            categories[unquote(row[0])].append(cat)
    return categories
