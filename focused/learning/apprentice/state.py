"""The online apprentice's crawl-time state as plain arrays, for checkpoints (no pickle). Scrapy-free.

A mixin of :class:`focused.learning.apprentice.online.OnlineApprentice`, split from it: pending links, fetched
pages and buffered instances, with the exploration and sibling counts. The learner and the model are
saved separately (:mod:`focused.learning.apprentice.checkpoint`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping

import numpy as np

from focused.learning.apprentice.explore import NoveltyBonus
from focused.learning.apprentice.payload import LINK, LinkPayload, payload_lengths, tagged_lengths
from focused.learning.apprentice.payload import pack as _pack
from focused.learning.apprentice.payload import unpack_bytes as _unpack_bytes
from focused.learning.apprentice.siblings import SiblingFeedback

__all__ = ["OnlineState"]


#: How the pending links' bytes are written: 2, each tagged (:func:`~focused.learning.apprentice.payload
#: .encode_links`: the ids as 2-byte gaps where they fit); 1 (the checkpoints of an earlier focused, no
#: ``pending_format`` in their header), each :meth:`LinkPayload.to_bytes`, read back tagged as :data:`LINK`.
PENDING_FORMAT = 2


class OnlineState:
    """:meth:`state_arrays` and :meth:`restore_arrays` of the online apprentice's attributes below."""

    _lock: threading.Lock
    _pending: dict[str, bytearray]
    _n_pending: int
    _fetched: dict[str, float]
    _buffer: list[tuple[LinkPayload, float]]
    _pages_in_batch: int
    instances_seen: int
    explore: NoveltyBonus | None
    siblings: SiblingFeedback | None

    def state_arrays(self) -> dict[str, np.ndarray]:
        """The crawl-time state (pending links, fetched pages, buffered instances) as plain arrays.

        No pickle: payloads as bytes (the pending links' tagged bytes, :data:`PENDING_FORMAT`; the buffered
        instances' :meth:`LinkPayload.to_bytes`), URL keys as JSON text. The learner and the model are saved
        separately.
        """
        with self._lock:
            pending_keys = list(self._pending)
            pending = [bytes(self._pending[k]) for k in pending_keys]
            fetched_keys = list(self._fetched)
            fetched = np.array([self._fetched[k] for k in fetched_keys], dtype=np.float64)
            buffered = [p for p, _ in self._buffer]
            buffer_rel = np.array([r for _, r in self._buffer], dtype=np.float64)
            header = {
                "pages_in_batch": self._pages_in_batch,
                "instances_seen": self.instances_seen,
                "pending_format": PENDING_FORMAT,
                "pending_keys": pending_keys,
                "fetched_keys": fetched_keys,
            }
        # the file keeps every pending link's length and each target's count of them (as when they were objects)
        split = [tagged_lengths(joined) for joined in pending]
        counts = np.array([len(lengths) for lengths in split], dtype=np.int64)
        pending_lengths = np.array([n for lengths in split for n in lengths], dtype=np.int64)
        pending_data = np.frombuffer(b"".join(pending), dtype=np.uint8) if pending else np.zeros(0, np.uint8)
        buffer_data, buffer_lengths = _pack(buffered)
        return {
            "header": np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
            "pending_counts": counts,
            "pending_data": pending_data,
            "pending_lengths": pending_lengths,
            "fetched": fetched,
            "buffer_data": buffer_data,
            "buffer_lengths": buffer_lengths,
            "buffer_relevance": buffer_rel,
            **(self.explore.state_arrays() if self.explore is not None else {}),
            **(self.siblings.state_arrays() if self.siblings is not None else {}),
        }

    def restore_arrays(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Inverse of :meth:`state_arrays`; ``ValueError`` (or ``KeyError``) for arrays it did not write."""
        header = json.loads(bytes(arrays["header"]).decode())
        pending_format = header.get("pending_format", 1)
        if pending_format not in (1, PENDING_FORMAT):
            raise ValueError(f"pending links of format {pending_format!r}; this focused reads 1 and {PENDING_FORMAT}")
        grouped = _pending_per_target(
            header["pending_keys"],
            arrays["pending_data"],
            arrays["pending_lengths"],
            arrays["pending_counts"],
            tagged=pending_format == PENDING_FORMAT,
        )
        fetched = [float(r) for r in arrays["fetched"]]
        if len(header["fetched_keys"]) != len(fetched):
            raise ValueError("fetched pages do not match their keys")
        buffered = _unpack_bytes(arrays["buffer_data"], arrays["buffer_lengths"])
        buffer_rel = [float(r) for r in arrays["buffer_relevance"]]
        if len(buffered) != len(buffer_rel):
            raise ValueError("buffered instances do not match their relevances")
        with self._lock:
            self._pending = grouped
            self._n_pending = len(arrays["pending_lengths"])
            self._fetched = dict(zip(header["fetched_keys"], fetched, strict=True))
            self._buffer = list(zip(buffered, buffer_rel, strict=True))
            self._pages_in_batch = int(header["pages_in_batch"])
            self.instances_seen = int(header["instances_seen"])
            if self.explore is not None:
                self.explore.restore_arrays(arrays)
            if self.siblings is not None:
                self.siblings.restore_arrays(arrays)


def _pending_per_target(
    keys: list[str], data: np.ndarray, lengths: np.ndarray, counts: np.ndarray, *, tagged: bool = True
) -> dict[str, bytearray]:
    """The pending links' payloads as :meth:`OnlineState.state_arrays` wrote them, joined per target as the
    apprentice keeps them: slices of the file's bytes, each payload checked against its own header
    (:func:`tagged_lengths`; :func:`payload_lengths` for a checkpoint of format 1, whose payloads are then tagged
    :data:`LINK` one by one); ``ValueError`` when they disagree."""
    raw = np.asarray(data, dtype=np.uint8).tobytes()
    sizes = [int(n) for n in lengths]
    n_links = [int(c) for c in counts]
    if len(keys) != len(n_links) or min(n_links, default=0) < 0 or sum(n_links) != len(sizes):
        raise ValueError("pending links do not match their keys")
    if (tagged_lengths(raw) if tagged else payload_lengths(raw)) != sizes:
        raise ValueError("payload lengths do not match the data")
    offsets = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64))).tolist()
    firsts = np.concatenate(([0], np.cumsum(n_links, dtype=np.int64))).tolist()
    view = memoryview(raw)
    if tagged:
        return {
            key: bytearray(view[offsets[a] : offsets[b]])
            for key, a, b in zip(keys, firsts[:-1], firsts[1:], strict=True)
        }
    grouped: dict[str, bytearray] = {}
    for key, a, b in zip(keys, firsts[:-1], firsts[1:], strict=True):
        joined = grouped[key] = bytearray()
        for i in range(a, b):
            joined += LINK
            joined += view[offsets[i] : offsets[i + 1]]
    return grouped
