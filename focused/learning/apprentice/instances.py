"""The apprentice learner's growing state: its raw instances and the per-bucket counts of their features.

:class:`~focused.learning.apprentice.learner.Apprentice` holds one of each, under its lock, and fits
models from them in another thread. Both follow one rule that makes that safe: an array a fit may be
reading is never rewritten below what it read. Growth copies into a larger array, dropping the oldest
instances moves the rest into fresh arrays, and new instances are written past the end; only the counts
change in place (under the lock: a fit copies them there).

* :class:`InstanceBuffer`: every instance kept, as packed ids (2-byte gaps,
  :mod:`~focused.learning.apprentice.packed`), row pointers, relevances and side views.
* :class:`SlotCounts`: the LOW and HIGH counts of each feature seen, a *slot* each in the order the
  features were first seen, and the map from the hashed feature space to the slots (shared with the
  models fitted, which keep their weights per slot too).

Scrapy-free.
"""

from __future__ import annotations

import numpy as np

from focused.learning.apprentice.packed import PackedIds, pack, unpack
from focused.learning.apprentice.stats import add_counts, grown

__all__ = ["InstanceBuffer", "SlotCounts", "kept_past_bound"]


def kept_past_bound(bound: int) -> int:
    """How many of its entries a bounded store of the apprentice keeps once it passes ``bound`` (the learner's
    instances, the links waiting for their targets): nine tenths of it, so that it drops a batch now and then
    rather than one entry at every addition."""
    return bound * 9 // 10


class InstanceBuffer:
    """Instances in growing arrays: instance i's feature ids are positions ``indptr[i] : indptr[i + 1]`` of the
    packed ids (:attr:`ids`), ``rel[i]`` its relevance, ``side[i]`` its side views; the first :attr:`n` rows
    (:attr:`n_ids` ids) are filled."""

    def __init__(self, n_side: int) -> None:
        self.low = np.zeros(1024, dtype=np.uint16)
        self.wide_at = np.zeros(64, dtype=np.int64)
        self.wide_high = np.zeros(64, dtype=np.uint16)
        self.n_ids = 0
        self.n_wide = 0
        self.indptr = np.zeros(129, dtype=np.int64)
        self.rel = np.zeros(128, dtype=np.float64)
        self.side = np.zeros((128, n_side), dtype=np.float64)
        self.n = 0

    @property
    def ids(self) -> PackedIds:
        """The filled ids (views: a fit reading them keeps them valid while the buffer grows)."""
        return PackedIds(self.low[: self.n_ids], self.wide_at[: self.n_wide], self.wide_high[: self.n_wide])

    def append(self, ids: np.ndarray, lengths: np.ndarray, rel: np.ndarray, side: np.ndarray | None) -> None:
        """Add ``len(rel)`` instances: ``lengths[i]`` of the concatenated ``ids`` each."""
        n, k = self.n, len(rel)
        low, wide_at, wide_high = pack(ids, lengths)
        self._reserve(n + k, self.n_ids + len(low), self.n_wide + len(wide_at))
        self.low[self.n_ids : self.n_ids + len(low)] = low
        self.wide_at[self.n_wide : self.n_wide + len(wide_at)] = wide_at + self.n_ids
        self.wide_high[self.n_wide : self.n_wide + len(wide_at)] = wide_high
        self.indptr[n + 1 : n + k + 1] = self.n_ids + np.cumsum(lengths)
        self.rel[n : n + k] = rel
        if side is not None:
            self.side[n : n + k] = side
        self.n_ids += len(low)
        self.n_wide += len(wide_at)
        self.n += k

    def all_ids(self) -> np.ndarray:
        """Every instance's ids, as int32."""
        return unpack(self.ids, slice(0, self.n_ids), np.diff(self.indptr[: self.n + 1]))

    def drop_oldest(self, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Forget the ``d`` oldest instances, moving the rest into fresh arrays; returns the forgotten ones'
        ids (int32), their lengths and their relevances."""
        n, cut = self.n, int(self.indptr[d])
        lengths = np.diff(self.indptr[: d + 1])
        dropped = (unpack(self.ids, slice(0, cut), lengths), lengths, self.rel[:d].copy())
        low = np.zeros_like(self.low)
        low[: self.n_ids - cut] = self.low[cut : self.n_ids]
        kept = int(np.searchsorted(self.wide_at[: self.n_wide], cut))  # an instance's first gap counts from 0
        wide_at, wide_high = np.zeros_like(self.wide_at), np.zeros_like(self.wide_high)
        wide_at[: self.n_wide - kept] = self.wide_at[kept : self.n_wide] - cut
        wide_high[: self.n_wide - kept] = self.wide_high[kept : self.n_wide]
        indptr = np.zeros_like(self.indptr)
        indptr[: n - d + 1] = self.indptr[d : n + 1] - cut
        self.low, self.wide_at, self.wide_high, self.indptr = low, wide_at, wide_high, indptr
        self.rel, self.side = grown(self.rel[d:n], len(self.rel), n - d), grown(self.side[d:n], len(self.side), n - d)
        self.n, self.n_ids, self.n_wide = n - d, self.n_ids - cut, self.n_wide - kept
        return dropped

    def _reserve(self, n: int, n_ids: int, n_wide: int) -> None:
        """Grow the arrays geometrically (into new ones: the old stay valid for a concurrent reader)."""
        if n > len(self.rel):
            size, m = max(n, 2 * len(self.rel)), self.n
            self.rel, self.side = grown(self.rel, size, m), grown(self.side, size, m)
            self.indptr = grown(self.indptr, size + 1, m + 1)
        if n_ids > len(self.low):
            self.low = grown(self.low, max(n_ids, 2 * len(self.low)), self.n_ids)
        if n_wide > len(self.wide_at):
            size = max(n_wide, 2 * len(self.wide_at))
            self.wide_at, self.wide_high = (
                grown(self.wide_at, size, self.n_wide),
                grown(self.wide_high, size, self.n_wide),
            )


class SlotCounts:
    """``counts[bucket, slot]``: how often the feature of each slot occurs in LOW (0) and HIGH (1) instances.

    ``slot_of[feature id]`` is its slot (-1: never seen), ``slot_ids[slot]`` its feature id; the first
    :attr:`n` slots are in use. Memory: 3 int32 a slot, plus one int32 map of the hashed feature space. The
    counts are int32 (they were float64, the same integers: the weights computed from them are the same to the
    bit): a feature would need 2³¹ occurrences in one bucket to overflow, more than 6 GB of stored ids.
    """

    def __init__(self, n_features: int) -> None:
        self.slot_of = np.full(n_features, -1, dtype=np.int32)
        self.slot_ids = np.zeros(1024, dtype=np.int32)
        self.counts = np.zeros((2, 1024), dtype=np.int32)
        self.n = 0

    def add(self, ids: np.ndarray, high: np.ndarray, sign: int) -> None:
        """Count each occurrence of ``ids`` (+1 or -1, ``sign``) in its instance's bucket (``high`` per
        occurrence); an id never seen gets the next free slot (in ascending id order)."""
        slots = self.slot_of[ids]
        new = slots < 0
        if new.any():
            fresh = np.unique(ids[new])
            start, end = self.n, self.n + len(fresh)
            if end > len(self.slot_ids):
                size = max(end, 2 * len(self.slot_ids))
                self.slot_ids = grown(self.slot_ids, size, start)
                counts = np.zeros((2, size), dtype=self.counts.dtype)
                counts[:, :start] = self.counts[:, :start]
                self.counts = counts
            self.slot_ids[start:end] = fresh
            self.slot_of[fresh] = np.arange(start, end, dtype=np.int32)
            self.n = end
            slots = self.slot_of[ids]
        add_counts(self.counts, slots, high, sign)

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The counts and feature ids of the slots in use (copies), and the map itself: a model fitted now
        shares it (later features only get slots past the model's weights; :meth:`retire` replaces the map)."""
        return self.counts[:, : self.n].copy(), self.slot_ids[: self.n].copy(), self.slot_of

    def retire(self) -> None:
        """Give up the slots of the features no instance has any more: the models count a slot as a known
        feature, as a learner that never saw them would not. In fresh arrays: the models fitted before share
        the old map."""
        n = self.n
        live = np.flatnonzero(self.counts[0, :n] + self.counts[1, :n] > 0)
        if len(live) == n:
            return
        slot_of = np.full(len(self.slot_of), -1, dtype=np.int32)
        slot_of[self.slot_ids[live]] = np.arange(len(live), dtype=np.int32)
        counts = np.zeros_like(self.counts)
        counts[:, : len(live)] = self.counts[:, live]
        slot_ids = np.zeros_like(self.slot_ids)
        slot_ids[: len(live)] = self.slot_ids[live]
        self.slot_of, self.counts, self.slot_ids, self.n = slot_of, counts, slot_ids, len(live)
