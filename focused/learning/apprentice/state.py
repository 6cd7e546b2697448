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
from focused.learning.apprentice.payload import LinkPayload, payload_lengths
from focused.learning.apprentice.payload import pack as _pack
from focused.learning.apprentice.payload import unpack_bytes as _unpack_bytes
from focused.learning.apprentice.siblings import SiblingFeedback

__all__ = ["OnlineState"]


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

        No pickle: payloads as bytes (:meth:`LinkPayload.to_bytes`), URL keys as
        JSON text. The learner and the model are saved separately.
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
                "pending_keys": pending_keys,
                "fetched_keys": fetched_keys,
            }
        # the file keeps every pending link's length and each target's count of them (as when they were objects)
        split = [payload_lengths(joined) for joined in pending]
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
        pending = _unpack_bytes(arrays["pending_data"], arrays["pending_lengths"])
        counts = [int(c) for c in arrays["pending_counts"]]
        keys = header["pending_keys"]
        if len(keys) != len(counts) or sum(counts) != len(pending):
            raise ValueError("pending links do not match their keys")
        fetched = [float(r) for r in arrays["fetched"]]
        if len(header["fetched_keys"]) != len(fetched):
            raise ValueError("fetched pages do not match their keys")
        buffered = _unpack_bytes(arrays["buffer_data"], arrays["buffer_lengths"])
        buffer_rel = [float(r) for r in arrays["buffer_relevance"]]
        if len(buffered) != len(buffer_rel):
            raise ValueError("buffered instances do not match their relevances")
        grouped: dict[str, bytearray] = {}
        i = 0
        for key, n in zip(keys, counts, strict=True):
            grouped[key] = bytearray(b"".join(p.to_bytes() for p in pending[i : i + n]))
            i += n
        with self._lock:
            self._pending = grouped
            self._n_pending = len(pending)
            self._fetched = dict(zip(header["fetched_keys"], fetched, strict=True))
            self._buffer = list(zip(buffered, buffer_rel, strict=True))
            self._pages_in_batch = int(header["pages_in_batch"])
            self.instances_seen = int(header["instances_seen"])
            if self.explore is not None:
                self.explore.restore_arrays(arrays)
            if self.siblings is not None:
                self.siblings.restore_arrays(arrays)
