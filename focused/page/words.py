"""The words of a page, numbered once per process, and what the page readers take from each word.

Two readers of a page's text go over its words: the critic, which counts the
tokens' hashed feature ids (:func:`focused.page.text.tokenize`, then
:class:`~focused.page.hashing.FeatureIds`), and the near-duplicate
fingerprint (:mod:`focused.page.simhash`), which hashes every word. Each did its own
Python step per word: a filter and a tally for the critic, a dict look-up for
the fingerprint. :class:`WordTable` numbers every distinct word the tokenizer's
regex matches (one dict look-up per word, once per page for both readers) and
keeps, per number, what the readers need of the word (its feature id in a
width, its fingerprint hash; for the link features of
:mod:`~focused.learning.apprentice.linkids`, a row of its ids at each offset from a
link), computed the first time a reader asks for it; a page's values are then one
numpy ``take`` (a 2-D fancy index of the rows is slower). The values are exactly the readers' own (tests hold
them equal). Scrapy-free.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from typing import Any

import numpy as np
import scipy.sparse as sp

from focused.page.hashing import feature_ids
from focused.page.text import MARK, find_words, tokenize, words_of_many

__all__ = ["WordTable", "hashed_counts", "page_tokens", "word_table"]

#: Distinct words one table numbers (a dict entry and a few array cells each); afresh when full, every thousand
#: or so pages of an encyclopedia crawl, whose next pages' words are numbered and hashed again: less memory held
#: for about the same CPU (docs/results.md, "Memory of the 3,000-page default crawl").
MAX_WORDS = 100_000
#: Characters of those words one table holds: a site's pages of distinct "words" a megabyte long (a hostile page's
#: run of letters) would otherwise be kept, up to MAX_WORDS of them; afresh when over, as when full.
MAX_CHARS = 4_000_000

#: Words looked up in one call (a loop in C, which holds the GIL): a text of hundreds of thousands of words is
#: looked up a piece at a time, so that the process's other threads (the reactor's) run between pieces.
LOOKUP_CHUNK = 65_536

#: A column's values for new words: called with the words (in table order), returns one value each.
Compute = Callable[[list[str]], Iterable[Any]]


class WordTable:
    """A number per distinct word, whether the word is a token, and named columns of per-word values."""

    def __init__(self, max_words: int = MAX_WORDS, max_chars: int = MAX_CHARS) -> None:
        self.max_words, self.max_chars = max_words, max_chars
        self._chars = 0  # the characters of the words numbered
        self._row: dict[str, int] = {}
        self._words: list[str] = []
        self._token = np.zeros(1024, dtype=bool)
        self._columns: dict[Any, np.ndarray] = {}
        self._filled: dict[Any, int] = {}
        # The crawl process reads long pages and anchor texts in threads too: numbering must not interleave,
        # and a page's numbers must not outlive a restart of the table before its values are read.
        self._lock = threading.Lock()
        self._last: tuple[str | None, np.ndarray] = (None, np.zeros(0, dtype=np.intp))
        self._clear()

    def __len__(self) -> int:
        return len(self._words)

    def tokens(self, text: str, columns: Sequence[tuple[Any, Compute, Any]]) -> list[np.ndarray] | None:
        """For each ``(key, compute, dtype)`` column, its values at the tokens of ``text``, in order
        (:func:`~focused.page.text.tokenize`'s tokens: the regex's words of two or more characters,
        not all digits). ``None`` for a text of more distinct words (or characters of them) than the table
        holds."""
        with self._lock:
            last_text, rows = self._last
            if text is not last_text:  # the same page again (the fingerprint, then the critic): numbered once
                words = find_words(text.lower())
                numbered = self._rows(words)
                if numbered is None:
                    return None
                rows = numbered[self._token[numbered]]
                self._last = (text, rows)
            return [self._column(key, compute, dtype).take(rows, axis=0) for key, compute, dtype in columns]

    def tokens_of_many(
        self, texts: Sequence[str], columns: Sequence[tuple[Any, Compute, Any]]
    ) -> tuple[list[np.ndarray], np.ndarray] | None:
        """:meth:`tokens` of many (short) texts at once, concatenated, and the text of each token (its
        index in ``texts``): one pass over the words and one numbering for all, e.g. a page's anchor texts."""
        words = words_of_many(texts)
        with self._lock:
            numbered = self._rows(words)
            if numbered is None:
                return None
            text_of = np.cumsum(numbered == _MARK_ROW)
            keep = self._token[numbered]
            rows = numbered[keep]
            columns_at = [self._column(key, compute, dtype).take(rows, axis=0) for key, compute, dtype in columns]
            return columns_at, text_of[keep]

    def _rows(self, words: list[str]) -> np.ndarray | None:
        where = self._row
        # one look-up a word; new words (a few dozen a page once warm) come out -1 and are looked up again
        found = np.concatenate(
            [
                np.array(list(map(where.get, piece, repeat(-1, len(piece)))), dtype=np.intp)
                for piece in (words[i : i + LOOKUP_CHUNK] for i in range(0, max(len(words), 1), LOOKUP_CHUNK))
            ]
        )
        missing = np.flatnonzero(found < 0).tolist()
        if missing:
            # numbered in the text's order (no set's order, and no sort in C holding the GIL for a long text)
            new = dict.fromkeys(words[i] for i in missing)
            chars = sum(map(len, new))
            if len(new) > self.max_words or chars > self.max_chars:
                return None
            if len(where) + len(new) > self.max_words or self._chars + chars > self.max_chars:
                self._clear()
                new = dict.fromkeys(word for word in words if word not in where)
                chars = sum(map(len, new))
                missing = list(range(len(words)))
            self._add(list(new), chars)
            found[missing] = [where[words[i]] for i in missing]
        return found

    def _add(self, new: list[str], chars: int) -> None:
        """Number the ``new`` words, of ``chars`` characters in all."""
        start = len(self._words)
        self._chars += chars
        for word in new:
            self._row[word] = len(self._words)
            self._words.append(word)
        if len(self._words) > len(self._token):
            self._token = _grown(self._token, len(self._words))
        self._token[start : len(self._words)] = [len(w) > 1 and not w.isdigit() for w in new]

    def _column(self, key: Any, compute: Compute, dtype: Any) -> np.ndarray:
        column = self._columns.get(key)
        filled = self._filled.get(key, 0)
        if column is None or len(column) < len(self._words):
            column = _grown(np.zeros(0, dtype=dtype) if column is None else column, len(self._words))
            self._columns[key] = column
        if filled < len(self._words):
            new = self._words[filled:]
            values = compute(new)
            if not isinstance(values, np.ndarray):  # FeatureIds.uncached gives an array already
                values = np.fromiter(values, dtype=column.dtype, count=len(new))
            column[filled : len(self._words)] = values
            self._filled[key] = len(self._words)
        return column

    def _clear(self) -> None:
        self._chars = 0
        self._row.clear()
        self._words.clear()
        self._filled.clear()
        self._last = (None, self._last[1][:0])
        self._add([MARK], len(MARK))  # row 0, never a token: where one text ends in tokens_of_many


#: The row of :data:`~focused.page.text.MARK`, which separates texts in :meth:`WordTable.tokens_of_many`.
_MARK_ROW = 0


def _grown(a: np.ndarray, size: int) -> np.ndarray:
    """``a`` in an array of at least ``size`` rows (doubling), zeros after its own."""
    out = np.zeros((max(size, 2 * len(a), 1024), *a.shape[1:]), dtype=a.dtype)
    out[: len(a)] = a
    return out


_table = WordTable()


def word_table() -> WordTable:
    """The process's table."""
    return _table


def page_tokens(text: str, columns: Sequence[tuple[Any, Compute, Any]]) -> list[np.ndarray] | None:
    """:meth:`WordTable.tokens` of the process's table."""
    return _table.tokens(text, columns)


def hashed_counts(texts: Sequence[str], n_features: int, extra: Sequence[str] | None = None) -> sp.csr_matrix:
    """Hashed token counts (float64 CSR): ``HashingVectorizer(tokenizer=tokenize, norm=None,
    alternate_sign=False, lowercase=False)``'s matrix (the critic's features), from the ids of the
    texts' tokens in the process's table: each word numbered and hashed once per process. Texts of
    more distinct words than the table holds are tokenized and hashed on their own. ``extra`` (parallel
    to ``texts``) adds each of its texts' tokens to the row of the text at its place: the counts of
    ``text + "\n" + extra``, while ``text`` itself stays the string a page's tokens are remembered by."""
    ids = feature_ids(n_features)
    column = (("critic", n_features), ids.uncached_array, np.int64)
    n = len(texts)
    if extra is not None and len(extra) != n:
        raise ValueError(f"{n} texts but {len(extra)} extra texts")
    if n > 1:  # many short texts (a page's anchors); one page's text is looked up by page_tokens below
        every = [*texts, *extra] if extra is not None else texts
        got = _table.tokens_of_many(every, (column,))
        if got is not None:  # one tally of (text, id) cells
            (token_ids,), text_of = got
            cells, counts = np.unique(text_of % n * n_features + token_ids, return_counts=True)
            return _csr(cells // n_features, cells % n_features, counts, n, n_features)

    def ids_of(text: str) -> np.ndarray:
        one = page_tokens(text, (column,))
        return one[0] if one is not None else ids.uncached_array(tokenize(text))

    rows, indices, data = [], [], []
    for row, text in enumerate(texts):
        found = ids_of(text)
        if extra is not None and extra[row]:
            found = np.concatenate([found, ids_of(extra[row])])
        distinct, counts = np.unique(found, return_counts=True)
        rows.append(np.full(len(distinct), row))
        indices.append(distinct)
        data.append(counts)
    if not rows:
        return _csr(*(np.zeros(0, dtype=np.int64),) * 3, 0, n_features)
    return _csr(np.concatenate(rows), np.concatenate(indices), np.concatenate(data), n, n_features)


def _csr(rows: np.ndarray, indices: np.ndarray, counts: np.ndarray, n_rows: int, n_features: int) -> sp.csr_matrix:
    """The CSR matrix of distinct cells sorted by row, then index."""
    indptr = np.searchsorted(rows, np.arange(n_rows + 1))
    X = sp.csr_matrix((counts.astype(np.float64), indices.astype(np.int32), indptr), shape=(n_rows, n_features))
    X.has_canonical_format = True
    return X
