"""Feature ids stored in 3 bytes each: the apprentice's instances, a quarter smaller than as int32.

The learner keeps every link instance it was given (the ⟨t, d⟩ ids of its context, one per token
occurrence, in their order): the crawl process's largest holder that grows with the pages
(docs/results.md). Hashed feature ids are below ``MAX_FEATURES`` (2²⁴), so three little-endian bytes hold
each exactly; the arithmetic reads them back as int32 a selection at a time
(:func:`take`), so every count, ratio and score is what the int32 ids gave.

A packed buffer is a ``(n, 3)`` uint8 array; :func:`take` also accepts a plain 1-d id array, so that the
functions of :mod:`~focused.learning.apprentice.stats` serve both.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BYTES", "pack_into", "packed_buffer", "take"]

#: Bytes per id: ids are below 2**24 (the apprentice's ``MAX_FEATURES``).
BYTES = 3
_LE_INT32 = np.dtype("<i4")
_ITEM = np.dtype(f"V{BYTES}")


def packed_buffer(capacity: int) -> np.ndarray:
    """An empty buffer for ``capacity`` ids."""
    return np.zeros((capacity, BYTES), dtype=np.uint8)


def pack_into(buffer: np.ndarray, start: int, ids: np.ndarray) -> None:
    """Write ``ids`` (each in ``[0, 2**24)``) into ``buffer`` from row ``start``."""
    if len(ids) == 0:
        return
    if int(ids.min()) < 0 or int(ids.max()) >= 1 << (8 * BYTES):
        raise ValueError(f"feature ids must be in [0, 2**{8 * BYTES})")
    as_bytes = np.ascontiguousarray(ids, dtype=_LE_INT32).view(np.uint8).reshape(-1, 4)
    buffer[start : start + len(ids)] = as_bytes[:, :BYTES]


def take(ids: np.ndarray, index: np.ndarray | slice) -> np.ndarray:
    """``ids[index]`` as an int32 array, whether ``ids`` is packed (``(n, 3)`` uint8) or plain (1-d)."""
    if ids.ndim == 1:
        return np.asarray(ids[index])
    if isinstance(index, slice) or not ids.flags.c_contiguous:
        rows = ids[index]
    else:  # gathered as one 3-byte item each: a 2-d index of the (n, 3) array was a third slower
        rows = ids.view(_ITEM).reshape(-1)[index].view(np.uint8).reshape(-1, BYTES)
    out = rows[:, BYTES - 1].astype(np.int32)  # the high byte first, shifted up as the lower ones come in
    for byte in range(BYTES - 2, -1, -1):  # (a 4-byte zero-padded copy viewed as int32 took 2 to 4 times as long)
        out <<= 8
        out |= rows[:, byte]
    return out
