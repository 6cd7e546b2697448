"""Feature ids stored as 2-byte gaps: the apprentice's instances, about half the bytes of int32.

The learner keeps every link instance it was given (the ⟨t, d⟩ ids of its context, one per token
occurrence, sorted as the crawler makes them): the crawl process's largest holder that grows with the pages
(docs/results.md). Each id is kept as its gap from the instance's previous id (the first from 0), modulo
2**32: the low 16 bits in one uint16 an id, and a gap of 2**16 or more (and ids out of order, whose gap wraps)
as an exception beside them, its position and its high 16 bits (about 2% of the ids of a crawl's instances).
Reading instances back is one running sum restarted at each of them
(:func:`~focused.learning.apprentice.payload.restart_sums`): exactly the int32 ids given, in their order, so
every count, ratio and score is what the int32 ids gave.

:func:`unpack` also accepts a plain 1-d id array, so that the functions of
:mod:`~focused.learning.apprentice.stats` serve both.
"""

from __future__ import annotations

import numpy as np

from focused.learning.apprentice.payload import restart_sums, run_gaps

__all__ = ["PackedIds", "pack", "unpack"]


class PackedIds:
    """Ids of whole instances as gaps (read-only views): ``low[i]`` the low 16 bits of id i's gap, ``wide_at``
    the positions (ascending) of the gaps of 2**16 or more and ``wide_high`` their high 16 bits."""

    __slots__ = ("low", "wide_at", "wide_high")

    def __init__(self, low: np.ndarray, wide_at: np.ndarray, wide_high: np.ndarray) -> None:
        self.low = low
        self.wide_at = wide_at
        self.wide_high = wide_high

    def __len__(self) -> int:
        return len(self.low)


def pack(ids: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The gaps of instances' ids (``lengths[i]`` of ``ids`` each, any int32 values in any order): their low 16
    bits (uint16, one an id), and the positions (int64, from 0) and high 16 bits (uint16) of the wide ones."""
    gaps = run_gaps(ids, lengths)
    wide = np.flatnonzero(gaps > 0xFFFF)
    return gaps.astype(np.uint16), wide, (gaps[wide] >> 16).astype(np.uint16)


def unpack(ids: PackedIds | np.ndarray, pos: np.ndarray | slice, lengths: np.ndarray) -> np.ndarray:
    """The int32 ids at ``pos`` (positions or a slice covering whole instances, ascending; ``lengths[i]`` ids
    each), from packed or plain ids. A fresh array for packed ids (the caller may write into it)."""
    if isinstance(ids, np.ndarray):
        return np.asarray(ids[pos])
    gaps = ids.low[pos].astype(np.uint32)
    if len(gaps) and len(ids.wide_at):
        if isinstance(pos, slice):
            first = pos.indices(len(ids.low))[0]
            a, b = np.searchsorted(ids.wide_at, [first, first + len(gaps)])
            gaps[ids.wide_at[a:b] - first] |= ids.wide_high[a:b].astype(np.uint32) << 16
        else:  # the exceptions between the first and last position, then those among the positions
            a, b = np.searchsorted(ids.wide_at, [pos[0], pos[-1] + 1])
            at = ids.wide_at[a:b].astype(pos.dtype, copy=False)  # (a search in int64 would copy int32 positions)
            where = np.searchsorted(pos, at)
            hit = np.flatnonzero(pos[np.minimum(where, len(pos) - 1)] == at)
            gaps[where[hit]] |= ids.wide_high[a:b][hit].astype(np.uint32) << 16
    return restart_sums(gaps, np.asarray(lengths)).view(np.int32)
