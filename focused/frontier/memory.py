"""The in-memory frontier store: a heap, for crawls without ``JOBDIR``.

Nothing survives the process: use :class:`~focused.frontier.sqlite.SQLiteStore`
(the default whenever ``JOBDIR`` is set) for crawls that must survive a kill.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from focused.frontier.compact import RequestPacker
from focused.frontier.heap import Entry, Frontier
from focused.frontier.store import Popped, Push, PushResult, Rescorer


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
            if push.key in self.heap:
                self.heap.push(push.key, push.item, push.priority, push.payload)
                results.append(PushResult.MERGED)
                for job in self._jobs:
                    job.touched.add(push.key)
            elif push.key in self._seen:
                results.append(PushResult.SEEN)
            else:
                self._seen.add(push.key)
                self.heap.push(push.key, self._packer.pack(push.item), push.priority, push.payload)
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

    def rescore(self, rescorer: Rescorer) -> int:
        return self.heap.rescore(lambda entries: rescorer([_live_payloads(e) for e in entries]))

    def rescore_start(self) -> MemoryRescore:
        """A background re-score of the entries waiting now (their parents' payloads copied, not decoded)."""
        entries = list(self.heap)
        payloads = [_live_payloads(e, copy=True) for e in entries]
        job = MemoryRescore(self, entries, payloads)
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


def _live_payloads(entry: Entry[Any], *, copy: bool = False) -> list[Any]:
    """An entry's parents' payloads without the ``None`` of parents that left none (a copy with ``copy``: a
    background re-score reads them in a thread while pushes may append to the entry's list)."""
    if None in entry.payloads:
        return [p for p in entry.payloads if p is not None]
    return entry.payloads.copy() if copy else entry.payloads


class MemoryRescore:
    """:class:`~focused.frontier.store.RescoreJob` of the memory store: a snapshot of the waiting entries, read
    in one chunk (one scorer call, as :meth:`MemoryStore.rescore`), applied in slices."""

    def __init__(self, store: MemoryStore, entries: list[Entry[Any]], payloads: list[list[Any]]) -> None:
        self.store = store
        self.entries = entries
        self.payloads = payloads
        #: keys merged since the start: their priority follows the merge
        self.touched: set[str] = set()

    def read(self) -> Iterator[tuple[Sequence[Any], list[list[Any]]]]:
        yield range(len(self.entries)), self.payloads

    def apply(self, ids: Sequence[Any], priorities: Sequence[int | None]) -> int:
        if isinstance(ids, range) and ids.step == 1:
            entries = self.entries[ids.start : ids.stop]
        else:
            entries = [self.entries[i] for i in ids]
        return self.store.heap.apply(entries, priorities, self.touched)

    def close(self) -> None:
        if self in self.store._jobs:
            self.store._jobs.remove(self)
            self.store.heap.compact()
        self.entries, self.payloads = [], []
