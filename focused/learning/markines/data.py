"""Training data of the Markines classifiers from crawl databases (their offline protocol).

Markines et al. train their apprentice on a database built by baseline crawls: every
link (u, v) whose source and target were fetched becomes an instance, the words
around the link in u (DOM distance <= 10 either side, no offsets) labelled by the
target's topic. Here the target's label is the critic's verdict stored with v
(``relevance >= threshold``), or a ground-truth label when a ``label_of`` function is
given. The page classifiers train on the fetched pages' whole visible text, labelled
the same way. Link contexts are recomputed from the stored HTML exactly as
:mod:`focused.learning.apprentice.data` does for the apprentice (one parse of u for all its
links, targets matched on :func:`~focused.learning.apprentice.data.fetch_key`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path

from focused.crawldb import iter_pages
from focused.learning.apprentice.features import extract_link_features, tokenize
from focused.learning.markines.classifiers import LINK_D_MAX
from focused.page.text import html_to_text

__all__ = ["MarkinesData", "link_contexts", "markines_data", "page_words"]

logger = logging.getLogger(__name__)


def page_words(html: str) -> list[str]:
    """The words of a page's visible text (the link contexts' tokenizer)."""
    return tokenize(html_to_text(html))


def link_contexts(html: str, url: str, d_max: int = LINK_D_MAX) -> dict[str, list[str]]:
    """Each http(s) target of the page -> the words near its links (all occurrences)."""
    links = extract_link_features(html, url, d_max=d_max, offsets=False)
    return dict(zip(links.urls, links.features, strict=True))


@dataclass
class MarkinesData:
    """Link and page instances: word lists and binary labels."""

    link_docs: list[list[str]] = field(default_factory=list)
    link_labels: list[bool] = field(default_factory=list)
    page_docs: list[list[str]] = field(default_factory=list)
    page_labels: list[bool] = field(default_factory=list)
    pages: int = 0
    pages_without_html: int = 0
    topics: set[str] = field(default_factory=set)


def markines_data(
    db_paths: Sequence[str | PathLike[str]],
    *,
    threshold: float = 0.5,
    d_max: int = LINK_D_MAX,
    label_of: Callable[[str], bool | None] | None = None,
) -> MarkinesData:
    """Every fetched page and every link between two fetched pages of each crawl, as instances.

    ``label_of(url)`` (True/False, or None for unknown: use the critic) replaces the
    critic's verdict as the label. Raises :class:`focused.crawldb.CrawlDBError` for a
    file that is not a crawl database.
    """
    from focused.crawldb import read_meta
    from focused.learning.apprentice.data import fetch_key

    out = MarkinesData()
    for path in map(Path, db_paths):
        topic = read_meta(path).get("topic")
        if topic:
            out.topics.add(str(topic))
        labels: dict[str, bool] = {}
        for page in iter_pages(path):
            try:
                key = fetch_key(page.url)
            except ValueError:
                continue
            truth = label_of(page.url) if label_of is not None else None
            labels.setdefault(key, bool(truth) if truth is not None else page.relevance >= threshold)
        done: set[str] = set()
        for page in iter_pages(path, with_html=True):
            out.pages += 1
            if not page.html_blob:
                out.pages_without_html += 1
                continue
            try:
                own = fetch_key(page.url)
            except ValueError:
                continue
            if own in done:
                continue  # the same page fetched under another spelling
            done.add(own)
            html = page.html
            out.page_docs.append(page_words(html))
            out.page_labels.append(labels[own])
            merged: dict[str, list[str]] = {}
            for url, words in link_contexts(html, page.url, d_max).items():
                try:
                    key = fetch_key(url)
                except ValueError:
                    continue
                if key != own and key in labels:
                    merged.setdefault(key, []).extend(words)
            for key, words in merged.items():
                out.link_docs.append(words)
                out.link_labels.append(labels[key])
        if out.pages_without_html:
            logger.warning("%s: %d pages without stored HTML give no instances", path, out.pages_without_html)
    return out
