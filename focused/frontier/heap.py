"""An in-memory best-first heap that can merge parents and re-score waiting URLs.

Scrapy-free: :class:`focused.frontier.memory.MemoryStore` wraps it. A
waiting URL is one entry, keyed by its request fingerprint, holding an opaque
item (the request), its integer priority and an optional payload per parent
(for example the compact link features the apprentice re-scores from).

* **Global best-first.** One heap over all hosts (Scrapy's per-domain queues
  are best-first only within a domain).
* **Several parents.** When a waiting URL is found again, its priority is
  combined with the new parent's: ``first`` keeps the first parent's (the
  paper's footnote 2), ``max`` and ``mean`` combine all parents seen so far.
* **Ties.** Equal priorities pop in discovery order (``fifo``) or in a seeded
  random order (``random``), which is how benchmarks measure run-to-run noise.
* **Re-scoring.** :meth:`Frontier.rescore` re-evaluates every waiting entry
  with a new scorer and rebuilds the heap in one pass (O(n log n)).

The heap uses lazy invalidation: a changed entry is pushed again with a new
handle and stale heap items are skipped when popped.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from focused.frontier.store import check_options, combine

T = TypeVar("T")


@dataclass(slots=True)
class Entry(Generic[T]):
    """One waiting URL (slots: a frontier holds hundreds of thousands)."""

    key: str
    item: T
    priority: int
    tie: float
    #: the parents' priorities as the durable stores keep them: the first's, how many, their sum and their
    #: maximum (:func:`~focused.frontier.store.combine`; one step a merge, whatever the number of parents)
    first: int = 0
    n: int = 1
    total: int = 0
    best: int = 0
    payloads: list[Any] = field(default_factory=list)
    handle: int = 0


class Frontier(Generic[T]):
    """Priority queue of waiting URLs with parent merging and re-scoring."""

    def __init__(self, aggregation: str = "max", tiebreak: str = "fifo", seed: int = 0) -> None:
        check_options(aggregation, tiebreak)
        self.aggregation = aggregation
        self.tiebreak = tiebreak
        self._rng = random.Random(seed)
        self._entries: dict[str, Entry[T]] = {}
        self._heap: list[tuple[int, float, int, str]] = []
        self._counter = 0
        self.merged = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def _next_handle(self) -> int:
        self._counter += 1
        return self._counter

    def _heap_push(self, entry: Entry[T]) -> None:
        entry.handle = self._next_handle()
        heapq.heappush(self._heap, (-entry.priority, entry.tie, entry.handle, entry.key))

    def push(self, key: str, item: T, priority: int, payload: Any = None) -> bool:
        """Add a URL, or merge a new parent into a waiting one.

        Returns ``True`` when the URL is new to the frontier, ``False`` when it
        was already waiting (its priority then follows the aggregation rule).
        """
        priority = int(priority)
        entry = self._entries.get(key)
        if entry is None:
            tie = float(self._counter) if self.tiebreak == "fifo" else self._rng.random()
            entry = Entry(key, item, priority, tie, priority, 1, priority, priority, [payload])
            self._entries[key] = entry
            self._heap_push(entry)
            return True
        self.merged += 1
        entry.n += 1
        entry.total += priority
        if priority > entry.best:
            entry.best = priority
        entry.payloads.append(payload)
        new = combine(self.aggregation, entry.first, entry.n, entry.total, entry.best)
        if new != entry.priority:
            entry.priority = new
            self._heap_push(entry)
        return False

    def pop(self) -> Entry[T] | None:
        """Remove and return the best waiting entry (``None`` when empty)."""
        while self._heap:
            _, _, handle, key = heapq.heappop(self._heap)
            entry = self._entries.get(key)
            if entry is not None and entry.handle == handle:
                del self._entries[key]
                return entry
        return None

    def peek(self) -> Entry[T] | None:
        """The entry :meth:`pop` would return, without removing it."""
        while self._heap:
            _, _, handle, key = self._heap[0]
            entry = self._entries.get(key)
            if entry is not None and entry.handle == handle:
                return entry
            heapq.heappop(self._heap)
        return None

    def __iter__(self) -> Iterator[Entry[T]]:
        """Waiting entries in no particular order."""
        return iter(list(self._entries.values()))

    def rescore(self, scorer: Callable[[list[Entry[T]]], Sequence[int | None]]) -> int:
        """Re-evaluate every waiting entry and rebuild the heap.

        ``scorer`` gets all waiting entries at once (so it can score them in one
        vectorised call) and returns, for each, its new priority or ``None`` to
        keep it. Returns how many priorities changed.
        """
        changed = 0
        heap: list[tuple[int, float, int, str]] = []
        entries = list(self._entries.values())
        priorities = scorer(entries)
        if len(priorities) != len(entries):
            raise ValueError(f"scorer returned {len(priorities)} priorities for {len(entries)} entries")
        first = self._counter + 1  # the handles _next_handle would give, in the same order, without a call each
        self._counter += len(entries)
        for handle, entry, new in zip(range(first, first + len(entries)), entries, priorities, strict=True):
            if new is not None and (new := int(new)) != entry.priority:
                entry.priority = new
                changed += 1
            entry.handle = handle
            heap.append((-entry.priority, entry.tie, handle, entry.key))
        heapq.heapify(heap)
        self._heap = heap
        return changed

    def apply(self, entries: Sequence[Entry[T]], priorities: Sequence[int | None], skip: set[str]) -> int:
        """New priorities for entries of an earlier snapshot (a background re-score): only those that still
        wait and whose key is not in ``skip`` (pushed again since). Returns how many changed.

        A changed entry is pushed again (lazy invalidation, the pop order is that of a rebuilt heap: ties
        are unique); when half the waiting entries or more change at once (a whole re-score applied in one
        go), the heap is rebuilt instead, in one pass.
        """
        waiting = self._entries
        moved = []
        for entry, new in zip(entries, priorities, strict=True):
            if new is None or (new := int(new)) == entry.priority or waiting.get(entry.key) is not entry:
                continue
            if entry.key in skip:
                continue
            entry.priority = new
            moved.append(entry)
        if 2 * len(moved) < len(waiting):
            for entry in moved:
                self._heap_push(entry)
        else:
            for entry in moved:
                entry.handle = self._next_handle()
            self._heap = [(-e.priority, e.tie, e.handle, e.key) for e in waiting.values()]
            heapq.heapify(self._heap)
        return len(moved)

    def compact(self) -> None:
        """Rebuild the heap without its stale items if they outnumber the waiting entries."""
        if len(self._heap) > 2 * len(self._entries) + 64:
            self._heap = [(-e.priority, e.tie, e.handle, e.key) for e in self._entries.values()]
            heapq.heapify(self._heap)

    def drop_lowest(self, n: int) -> list[str]:
        """Remove the ``n`` waiting entries that would be popped last; returns their keys."""
        if n <= 0:
            return []
        worst = heapq.nsmallest(n, self._entries.values(), key=lambda e: (e.priority, -e.tie))
        for entry in worst:
            del self._entries[entry.key]
        self.compact()  # drop the stale heap slots too
        return [entry.key for entry in worst]

    def restore_entry(self, entry: Entry[T]) -> None:
        """Put a popped entry back, with its priority, tie and parents."""
        self._entries[entry.key] = entry
        self._heap_push(entry)
