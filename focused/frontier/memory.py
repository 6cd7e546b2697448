"""The in-memory frontier store: a heap, for crawls without ``JOBDIR``.

Nothing survives the process: use :class:`~focused.frontier.sqlite.SQLiteStore`
(the default whenever ``JOBDIR`` is set) for crawls that must survive a kill.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from focused.frontier.compact import RequestPacker
from focused.frontier.heap import Entry, Frontier
from focused.frontier.rescore import MemoryRescore
from focused.frontier.store import Popped, Push, PushResult


class MemoryStore:
    """:class:`~focused.frontier.store.FrontierStore` on :class:`~focused.frontier.heap.Frontier`."""

    requeued = 0
    quarantined = 0  # in memory: nothing is read back from outside the process
    bad_payloads = 0

    def __init__(self, aggregation: str = "max", tiebreak: str = "fifo", seed: int = 0) -> None:
        self.heap: Frontier[Any] = Frontier(aggregation=aggregation, tiebreak=tiebreak, seed=seed)
        self.aggregation = aggregation
        self._seen: set[str] = set()
        self._leased: dict[str, Entry[Any]] = {}
        self._meta: dict[str, Any] = {}
        self._packer = RequestPacker()  # waiting requests kept as tuples (compact.py)
        #: background re-scores under way: the keys pushed since each started are not re-scored by it
        self._jobs: list[MemoryRescore] = []

    def push_many(self, pushes: Sequence[Push]) -> list[PushResult]:
        results = []
        for push in pushes:
            # each payload kept framed (a 4-byte length, then the payload): a re-score joins an entry's
            # frames into the framed blob the durable stores keep, and one decoder reads every store's
            payload = None if push.payload is None else len(push.payload).to_bytes(4, "little") + push.payload
            if push.key in self.heap:
                self.heap.push(push.key, push.item, push.priority, payload)
                results.append(PushResult.MERGED)
                for job in self._jobs:
                    job.touched.add(push.key)
            elif push.key in self._seen:
                results.append(PushResult.SEEN)
            else:
                self._seen.add(push.key)
                self.heap.push(push.key, self._packer.pack(push.item), push.priority, payload)
                results.append(PushResult.NEW)
        return results

    def pop_many(self, n: int = 1) -> list[Popped]:
        out: list[Popped] = []
        while len(out) < n and (entry := self.heap.pop()) is not None:
            self._leased[entry.key] = entry
            out.append(Popped(entry.key, self._packer.unpack(entry.item, entry.priority), entry.priority))
        return out

    def ack_many(self, keys: Iterable[str]) -> None:
        for key in keys:
            self._leased.pop(key, None)

    def give_back_many(self, keys: Iterable[str]) -> None:
        for key in keys:
            entry = self._leased.pop(key, None)
            if entry is not None:
                self.heap.restore_entry(entry)

    def rescore_start(self) -> MemoryRescore:
        """A re-score of the entries waiting now: the entries and how many parents each has now (their
        payloads are read by the job, maybe in a thread: a parent merged later is not its)."""
        entries = list(self.heap)
        job = MemoryRescore(self, entries, [len(e.payloads) for e in entries])
        self._jobs.append(job)
        return job

    def drop_lowest(self, n: int) -> int:
        """Drop the ``n`` lowest-priority waiting entries (they stay seen); returns how many."""
        return len(self.heap.drop_lowest(n))

    def seen(self, key: str) -> bool:
        return key in self._seen

    def waiting(self, key: str) -> bool:
        """Whether ``key`` waits (a push of it would merge)."""
        return key in self.heap

    def settled(self, key: str) -> bool:
        """Whether ``key`` is in flight or done (a push of it would be dropped)."""
        return key in self._seen and key not in self.heap

    def __len__(self) -> int:
        return len(self.heap)

    @property
    def in_flight(self) -> int:
        return len(self._leased)

    def get_meta(self, key: str, default: Any = None) -> Any:
        return self._meta.get(key, default)

    def set_meta(self, key: str, value: Any) -> None:
        self._meta[key] = value

    def commit(self) -> None:
        pass

    def maybe_commit(self) -> None:
        pass

    def close(self) -> None:
        pass
