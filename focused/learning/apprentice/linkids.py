"""The hashed ⟨t, d⟩ ids of a page's links, without building a feature string per link.

:func:`~focused.learning.apprentice.features.extract_link_features` spells every
feature of every link (``"course@-1"``), and hashing then reads each string
back: a few thousand strings per page, most of them the same words at other
offsets. Here each distinct token is hashed once for all its offsets (a row of
``2 d_max + 1`` ids, remembered across pages in a column of the process's word
table, :mod:`focused.page.words`), each DOM leaf becomes a matrix of its tokens'
rows, and a link's ids are columns of the leaves around it. The ids
are exactly those of ``compact_many(extract_link_features(...).features)``
(a test holds them equal), so models, payloads and checkpoints do not change.
Scrapy-free.
"""

from __future__ import annotations

import functools
import itertools
import logging
import sys
from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np

from focused.learning.apprentice.features import decode_html
from focused.learning.apprentice.resolve import resolve_links
from focused.page.hashing import FeatureIds, feature_ids
from focused.page.parse import parse_page
from focused.page.parsed import ParsedPage
from focused.page.words import Compute, WordTable, word_table

logger = logging.getLogger(__name__)


def offset_column(n_features: int, d_max: int) -> tuple[Any, Compute, Any]:
    """The process's word table's column of each word's ids at the offsets ``-d_max..d_max`` (a row of
    ``2 d_max + 1``: the id of ``"{word}@{d}"`` at ``d + d_max``): each word hashed once for all its offsets,
    the first time a page needs them, in the table that already numbers the pages' words for the critic and
    the fingerprint (the table keeps a column's values by its key)."""
    compute = functools.partial(_offset_ids, feature_ids(n_features), d_max)
    return ("link offsets", n_features, d_max), compute, (np.int32, 2 * d_max + 1)


def _offset_ids(ids: FeatureIds, d_max: int, words: list[str]) -> np.ndarray:
    """The ids of ``"{word}@{d}"`` for each word (rows) and offset (columns), hashed in one call; the strings
    made as they are hashed, a piece at a time (a page of many new words would hold ten times as many at once)."""
    offsets = [f"@{d}" for d in range(-d_max, d_max + 1)]
    return ids.uncached_array(word + offset for word in words for offset in offsets).reshape(len(words), -1)


def page_link_ids(
    parsed: ParsedPage, base_url: str, d_max: int, n_features: int
) -> tuple[list[str], Sequence[np.ndarray], list[str]]:
    """The page's distinct http(s) link targets (first-occurrence order), the ⟨t, d⟩ ids of each
    (int32, unsorted, one per token occurrence, every occurrence of the target) and its anchor
    texts, as :class:`~focused.learning.apprentice.features.PageLinks` has them."""
    key = (base_url, d_max, n_features)
    if parsed.link_ids is not None and parsed.link_ids[0] == key:  # computed by the page-analysis worker
        result: tuple[list[str], Sequence[np.ndarray], list[str]] = parsed.link_ids[1]
        return result
    leaves = parsed.leaves
    index: dict[str, int] = {}
    urls: list[str] = []
    anchors: list[str] = []
    owner: list[int] = []  # per occurrence: its target
    lefts: list[int] = []
    rights: list[int] = []
    for (_, left, right), url in zip(parsed.links, resolve_links(parsed, base_url), strict=True):
        if url is None:
            continue
        i = index.get(url)
        if i is None:
            i = index[url] = len(urls)
            urls.append(url)
            anchors.append("")
        owner.append(i)
        lefts.append(left)
        rights.append(right)
        text = " ".join(" ".join(leaves[left : right + 1]).split())
        if text and text not in anchors[i].split(" | "):
            anchors[i] = f"{anchors[i]} | {text}" if anchors[i] else text
    if not urls:
        return urls, [], anchors
    return urls, _window_ids(leaves, owner, lefts, rights, len(urls), d_max, n_features), anchors


def _window_ids(
    leaves: list[str],
    owner: list[int],
    lefts: list[int],
    rights: list[int],
    n_targets: int,
    d_max: int,
    n_features: int,
) -> RaggedIds:
    """The ids of the tokens within ``d_max`` leaves of every occurrence, grouped by target, in numpy:
    a Python step per leaf (its tokens), none per (link, leaf, token)."""
    # every (occurrence, leaf m) pair of the windows, with the offset d of m
    left, right = np.asarray(lefts, dtype=np.int64), np.asarray(rights, dtype=np.int64)
    lo, hi = np.maximum(left - d_max, 0), np.minimum(right + d_max, len(leaves) - 1)
    width = hi - lo + 1
    pair_occ = np.repeat(np.arange(len(left)), width)
    starts = np.cumsum(width) - width
    m = np.repeat(lo, width) + (np.arange(int(width.sum())) - np.repeat(starts, width))
    d = np.where(m < left[pair_occ], m - left[pair_occ], np.where(m > right[pair_occ], m - right[pair_occ], 0))
    # the tokens of each leaf some window reads, a row of their ids at every offset each: one pass over the
    # leaves (the word table's tokens_of_many), in leaf order
    needed = np.unique(m)
    texts = [leaves[k] for k in needed.tolist()]
    columns = (offset_column(n_features, d_max),)
    got = word_table().tokens_of_many(texts, columns)
    if got is None:  # more distinct words (or characters) than the table holds: numbered in a table of their own
        got = WordTable(max_words=sys.maxsize, max_chars=sys.maxsize).tokens_of_many(texts, columns)
    assert got is not None
    (matrix,), text_of = got
    counts = np.bincount(text_of, minlength=len(needed))
    first = np.zeros(len(leaves) + 1, dtype=np.int64)  # leaf -> its first row in matrix
    n_tokens = np.zeros(len(leaves), dtype=np.int64)
    first[needed] = np.cumsum(counts) - counts
    n_tokens[needed] = counts
    # one id per (pair, word of its leaf): the j-th id of the page is the cell (row, offset) of the flat matrix
    # (a 2-D fancy index walks it more slowly), row = first[m] + (j - the pair's first j); built in place,
    # per pair then once over the ids, so that a page of millions of ids holds few arrays of them at once
    per_pair = n_tokens[m]
    pair_starts = np.cumsum(per_pair) - per_pair
    total = int(per_pair.sum())
    width = matrix.shape[1]
    cells = np.repeat((first[m] - pair_starts) * width + (d + d_max), per_pair)
    step = np.arange(total, dtype=np.int64)
    step *= width
    cells += step
    del step
    ids = matrix.ravel().take(cells) if total else np.zeros(0, dtype=np.int32)
    del cells
    # grouped by target and sorted within each (the payload form), in one sort of (target, id) keys
    keys = np.repeat(np.asarray(owner, dtype=np.int64)[pair_occ], per_pair)
    keys *= n_features
    keys += ids
    keys.sort()
    bounds = np.searchsorted(keys, np.arange(n_targets + 1, dtype=np.int64) * n_features)
    return RaggedIds((keys % n_features).astype(np.int32), bounds)


class RaggedIds(Sequence[np.ndarray]):
    """One array of ids per target, held as one flat array and its bounds: a page's ids cross from the
    page-analysis worker to the crawl process as two arrays, not one pickled array per link."""

    __slots__ = ("bounds", "flat")

    def __init__(self, flat: np.ndarray, bounds: np.ndarray) -> None:
        self.flat, self.bounds = flat, bounds

    def __len__(self) -> int:
        return len(self.bounds) - 1

    @overload
    def __getitem__(self, i: int) -> np.ndarray: ...
    @overload
    def __getitem__(self, i: slice) -> list[np.ndarray]: ...
    def __getitem__(self, i: int | slice) -> np.ndarray | list[np.ndarray]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"target {i} of {n}")
        i %= n
        return self.flat[self.bounds[i] : self.bounds[i + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:
        flat, bounds = self.flat, self.bounds.tolist()
        return (flat[a:b] for a, b in itertools.pairwise(bounds))

    def __reduce__(self) -> tuple[type[RaggedIds], tuple[np.ndarray, np.ndarray]]:
        return RaggedIds, (self.flat, self.bounds)


def parse_for_links(html: str | bytes, base_url: str, encoding: str | None = None) -> ParsedPage:
    """The page parsed as :func:`~focused.learning.apprentice.features.extract_link_features` parses it;
    an empty page if it cannot be parsed (never raises on bad input)."""
    try:
        return parse_page(html if isinstance(html, str) else decode_html(html, encoding))
    except Exception:  # libxml2 and the decoders have many ways to fail
        logger.debug("Could not parse %s", base_url, exc_info=True)
        return ParsedPage()


def with_extra(ids: Sequence[np.ndarray | None], extra: np.ndarray) -> list[np.ndarray]:
    """Each link's ids plus the page-level ``extra`` ids (None: only those), sorted: the payload form
    of :func:`~focused.learning.apprentice.features.compact_many`. The rows of :func:`page_link_ids` are
    sorted already, so without ``extra`` they are taken as they are (a sort per link was a tenth of
    the crawl process's scoring)."""
    if not len(extra):
        empty = np.zeros(0, dtype=np.int32)
        return [empty if row is None else row.astype(np.int32, copy=False) for row in ids]
    out = []
    for row in ids:
        both = extra if row is None else np.concatenate((row, extra))
        out.append(np.sort(both).astype(np.int32, copy=False))
    return out
