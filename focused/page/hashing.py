"""Hashed features, with scikit-learn's ids, at the cost of a dict look-up per known string.

scikit-learn's ``FeatureHasher`` and ``HashingVectorizer`` (``alternate_sign=False``)
map a feature string ``f`` to the column ``|murmurhash3_32(f)| mod n``; the crawler
hashes a few thousand strings per page, mostly the same ones page after page
("the@-1", a site's navigation words). :class:`FeatureIds` computes exactly those
ids, remembers them for the strings it has seen (a bounded cache, started afresh
when full), and builds the same CSR count matrices, so models trained with either
agree. The hash itself is ``mmh3``'s MurmurHash3 (the same function on the same UTF-8
bytes; importing scikit-learn was most of the page-analysis worker's start-up, 0.9 s
of CPU). Scrapy-free.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
import scipy.sparse as sp
from mmh3 import hash as _murmurhash3_32

#: Distinct strings whose ids one :class:`FeatureIds` remembers (about 150 bytes each).
MAX_CACHED = 250_000
#: The longest string whose id is remembered: a longer one (a hostile page's megabyte "word" or URL token) is
#: hashed each time it comes, so that the cache's memory is bounded by its strings' count.
MAX_CACHED_CHARS = 256
#: Strings hashed in one call of the C hash over them: the call holds the GIL, so a page of a hundred thousand
#: new words is hashed a piece at a time, letting the reactor's thread run between pieces.
HASH_CHUNK = 32_768
_INT32_MIN = -(2**31)


class FeatureIds:
    """Column ids of feature strings in an ``n_features``-wide hashed space."""

    def __init__(self, n_features: int, max_cached: int = MAX_CACHED) -> None:
        if n_features < 1:
            raise ValueError(f"n_features must be at least 1, not {n_features}")
        self.n_features = n_features
        self.max_cached = max_cached
        self._ids: dict[str, int] = {}

    def uncached(self, features: Iterable[str]) -> list[int]:
        """The ids of ``features``, computed without remembering them (for callers with a cache of their own)."""
        return self.uncached_array(features).tolist()

    def uncached_array(self, features: Iterable[str]) -> np.ndarray:
        """:meth:`uncached` as an int64 array: a hash per string, the rest in numpy (a Python step per
        string was most of the cost of the link features' new words)."""
        # scikit-learn's murmurhash3_32(f, seed=0): signed, UTF-8 (mmh3.hash's defaults)
        if isinstance(features, list) and len(features) <= HASH_CHUNK:
            return self._ids_of(np.fromiter(map(_murmurhash3_32, features), dtype=np.int64, count=len(features)))
        # a piece at a time, and the strings of an iterator made a piece at a time: neither they nor their
        # hashes' temporaries are all held at once
        strings = iter(features)
        pieces = []
        while True:
            hashes = np.fromiter(map(_murmurhash3_32, itertools.islice(strings, HASH_CHUNK)), dtype=np.int64)
            if not hashes.size:
                break
            pieces.append(self._ids_of(hashes))
        return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)

    def _ids_of(self, hashes: np.ndarray) -> np.ndarray:
        """The ids of signed 32-bit hashes (int64)."""
        out = np.abs(hashes) % self.n_features
        out[hashes == _INT32_MIN] = self._overflow_id  # scikit-learn's rule for the one value abs() overflows
        return out

    def _one(self, feature: str) -> int:
        """:meth:`uncached` of one string, without numpy's cost per call."""
        h = _murmurhash3_32(feature, 0, True)
        return self._overflow_id if h == _INT32_MIN else abs(h) % self.n_features

    @property
    def _overflow_id(self) -> int:
        n = self.n_features
        return (2**31 - 1 - (n - 1)) % n

    def _compute(self, feature: str) -> int:
        index = self._one(feature)
        if len(feature) > MAX_CACHED_CHARS:
            return index
        if len(self._ids) >= self.max_cached:
            self._ids.clear()
        self._ids[feature] = index
        return index

    def ids(self, features: Iterable[str]) -> list[int]:
        """The id of each feature, in order (repeats kept)."""
        known = self._ids.get
        out = []
        for f in features:
            i = known(f)
            out.append(self._compute(f) if i is None else i)
        return out

    def rows(self, feature_lists: Sequence[Iterable[str]]) -> tuple[np.ndarray, np.ndarray]:
        """All ids of all lists concatenated (int64) and the row boundaries (``indptr``)."""
        flat: list[int] = []
        indptr = np.zeros(len(feature_lists) + 1, dtype=np.int64)
        for row, features in enumerate(feature_lists):
            flat.extend(self.ids(features))
            indptr[row + 1] = len(flat)
        return np.asarray(flat, dtype=np.int64), indptr

    def counts(self, feature_lists: Sequence[Iterable[str]]) -> sp.csr_matrix:
        """CSR count matrix (float64), one row per list: what ``FeatureHasher.transform`` returns.

        Each distinct string of a list is looked up once (a page's text repeats its words).
        """
        tallies = [Counter(features) for features in feature_lists]
        flat, indptr = self.rows([tally.keys() for tally in tallies])
        data = np.fromiter(itertools.chain.from_iterable(t.values() for t in tallies), np.float64, len(flat))
        X = sp.csr_matrix((data, flat.astype(np.int32), indptr), shape=(len(feature_lists), self.n_features))
        X.sum_duplicates()  # sorts the indices too
        return X

    def sorted_rows(self, feature_lists: Sequence[Iterable[str]]) -> list[np.ndarray]:
        """Each list's ids as a sorted int32 array, repeats kept (an id per occurrence)."""
        flat, indptr = self.rows(feature_lists)
        rows = np.repeat(np.arange(len(feature_lists), dtype=np.int64), np.diff(indptr))
        flat = flat[np.lexsort((flat, rows))].astype(np.int32)
        return np.split(flat, indptr[1:-1])


_shared: dict[int, FeatureIds] = {}


def feature_ids(n_features: int) -> FeatureIds:
    """The process's :class:`FeatureIds` for ``n_features`` columns (one cache per width)."""
    ids = _shared.get(n_features)
    if ids is None:
        ids = _shared[n_features] = FeatureIds(n_features)
    return ids
