"""Re-scoring the waiting URLs: one job per store, run at once or in the background, and the scorer's decoding.

A re-score gives every waiting URL a new priority from its parents' payloads. Each store starts one
as a :class:`~focused.frontier.store.RescoreJob` (``rescore_start``): it fixes the entries waiting
then, :meth:`read` yields them in chunks (entry ids and their payloads), :meth:`apply` writes new
priorities to those that still wait and that no push touched since, :meth:`close` ends it. The same
job serves both ways of running it:

* at once (:func:`run_job`: read, score, apply, close, here and now): what
  :meth:`~focused.core.scheduler.FocusedScheduler.rescore` does for a caller that needs the new
  priorities before it goes on (the intelligent strategy's extension);
* in the background (:meth:`~focused.core.scheduler.FocusedScheduler.rescore_background`): read and
  score in a thread, apply a slice per reactor turn.

The jobs: :class:`MemoryRescore` and :class:`SQLiteRescore` here, the Redis store's in
:mod:`focused.frontier.rescore_redis` (it needs the Redis client, which the others never import).
:class:`DecodingRescorer` turns the payloads' bytes into what a scorer reads (the apprentice's as one
:class:`~focused.learning.apprentice.linkbatch.LinkBatch`). Scrapy-free.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from focused.frontier.payloads import decode_framed_link_batch, decode_link_batch, decode_payloads
from focused.frontier.store import Framed, Payloads, RescoreJob, unframe
from focused.malloc import SCRATCH_THRESHOLD

if TYPE_CHECKING:
    from focused.frontier.heap import Entry
    from focused.frontier.memory import MemoryStore
    from focused.frontier.sqlite import SQLiteStore

logger = logging.getLogger(__name__)

#: waiting entries a durable store reads per round trip (SQL query, ZSCAN + HMGET) when re-scoring, and at most
#: scored at a time
RESCORE_CHUNK = 10_000
#: bytes of payloads decoded and scored at a time (~250,000 link ids as 2-byte gaps): a piece's largest temporaries
#: (8 bytes an id: the model's count matrix values) stay under the scratch threshold, so a re-score inside
#: :func:`focused.malloc.scratch` reuses the heap's pages instead of faulting in a fresh mapping for each
#: (docs/results.md, "Re-scoring 100,000 waiting URLs")
RESCORE_BYTES = SCRATCH_THRESHOLD // 4
#: the SQLite connection's page cache (KiB) while a re-score writes its priorities (the default is 2 MiB)
RESCORE_CACHE_KIB = 65_536

#: A re-scoring function: given, for each waiting request, the payloads of its parents (a
#: :class:`~focused.learning.apprentice.linkbatch.LinkBatch` when all are link payloads), return each
#: request's new priority (or None to keep it).
Scorer = Callable[[Sequence[Sequence[Any]]], Sequence[int | None]]


def run_job(job: RescoreJob, rescorer: Callable[[Payloads], Sequence[int | None]], between: Callable[[], None]) -> int:
    """Run ``job`` here and now: read each chunk, score it, apply it, and call ``between()`` after each (the
    store's :meth:`~focused.frontier.store.FrontierStore.maybe_commit`: a durable store commits its batch,
    the Redis store renews this worker's leases while a long re-score holds its thread); closes the job.
    Returns how many priorities changed."""
    try:
        changed = 0
        for ids, payloads in job.read():
            new = rescorer(payloads)
            if len(new) != len(ids):
                raise ValueError(f"rescorer returned {len(new)} priorities for {len(ids)} entries")
            changed += job.apply(ids, new)
            between()
        return changed
    finally:
        job.close()


class DecodingRescorer:
    """A store's payloads decoded for ``scorer``: the apprentice's as one
    :class:`~focused.learning.apprentice.linkbatch.LinkBatch` (from the framed blobs every store gives, without
    unframing them one by one, :data:`RESCORE_CHUNK` entries at a time; or from each entry's list of payloads),
    anything else as objects.
    Counts in :attr:`bad` the entries whose payloads are damaged (their priority is kept)."""

    def __init__(self, scorer: Scorer) -> None:
        self.scorer = scorer
        self.bad = 0

    def __call__(self, payloads: Payloads) -> Sequence[int | None]:
        if isinstance(payloads, Framed):
            # scored a piece at a time (the memory store gives every waiting URL in one chunk): the same
            # scores (each URL's from its own payloads), from arrays a few MB large instead of hundreds
            out: list[int | None] = []
            for start, end in _pieces(payloads.blobs):
                out.extend(self._framed(payloads.blobs[start:end]))
            return out
        return self._lists(payloads)

    def _framed(self, frames: list[bytes]) -> Sequence[int | None]:
        try:
            batch, damaged = decode_framed_link_batch(frames)
        except ValueError:  # a damaged payload in a sound frame: unframe them and go one by one
            batch = None
        if batch is None:
            entries: list[list[bytes] | None] = []
            for blob in frames:
                try:
                    entries.append(unframe(blob))
                except ValueError:
                    entries.append(None)
            return self._lists(entries)
        out = list(self.scorer(batch))
        for i in damaged.nonzero()[0].tolist():
            out[i] = None  # its frame is damaged: it had no payloads in the batch, and keeps its priority
        self.bad += int(damaged.sum())
        return out

    def _lists(self, blobs: Sequence[list[bytes] | None]) -> Sequence[int | None]:
        scorer = self.scorer
        try:  # only the decoding: an error of the scorer's own is not a damaged payload
            if any(entry is None for entry in blobs):
                raise ValueError("a damaged frame")
            whole = cast(Sequence[list[bytes]], blobs)
            batch = decode_link_batch(whole)  # the apprentice's payloads as arrays: no object per link
            if batch is not None:
                return scorer(batch)
            decoded = iter(decode_payloads([b for entry in whole for b in entry]))  # one batch: faster
            return scorer([[next(decoded) for _ in entry] for entry in whole])
        except ValueError:  # a damaged payload among them: score the others one by one, keep its priority
            decoded_entries = [None if entry is None else _decoded(entry) for entry in blobs]
            good = [i for i, entry in enumerate(decoded_entries) if entry is not None]
            self.bad += len(blobs) - len(good)
            out: list[int | None] = [None] * len(blobs)
            if good:
                new = scorer([cast(list[Any], decoded_entries[i]) for i in good])
                for i, priority in zip(good, new, strict=True):
                    out[i] = priority
            return out


def _pieces(blobs: list[bytes]) -> list[tuple[int, int]]:
    """``blobs`` cut into runs of at most :data:`RESCORE_CHUNK` entries and :data:`RESCORE_BYTES` bytes (an entry
    larger than that alone): ``(start, end)`` of each."""
    ends = np.cumsum(np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs)))
    cuts = [(0, 0)]
    while cuts[-1][1] < len(blobs):
        start = cuts[-1][1]
        within = int(np.searchsorted(ends, (int(ends[start - 1]) if start else 0) + RESCORE_BYTES, side="right"))
        cuts.append((start, min(max(within, start + 1), start + RESCORE_CHUNK)))
    return cuts[1:]


def _decoded(payloads: list[bytes]) -> list[Any] | None:
    """The payloads of one waiting request decoded, or ``None`` if one is damaged."""
    try:
        return decode_payloads(payloads)
    except ValueError:
        return None


class MemoryRescore:
    """The memory store's job: a snapshot of the waiting entries and of how many parents each had, read in one chunk
    (scored :data:`RESCORE_CHUNK` entries at a time), applied in slices; the keys merged since the start keep their
    merge."""

    def __init__(self, store: MemoryStore, entries: list[Entry[Any]], parents: list[int]) -> None:
        self.store = store
        self.entries = entries
        self.parents = parents
        #: keys merged since the start: their priority follows the merge
        self.touched: set[str] = set()

    def read(self) -> Iterator[tuple[Sequence[Any], Payloads]]:
        """Each entry's first ``parents`` payloads framed (:func:`~focused.frontier.store.frame`, as the durable
        stores keep them), without the ``None`` of parents that left none: joined here
        (maybe in a thread; a merge appends to an entry's list, which a slice reads whole or not at all), not
        when the job starts, on the store's thread."""
        blobs = []
        join = b"".join
        for entry, n in zip(self.entries, self.parents, strict=True):
            own = entry.payloads[:n]  # each payload framed already (MemoryStore.push_many)
            blobs.append(join([p for p in own if p is not None] if None in own else own))
        yield range(len(self.entries)), Framed(blobs)

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
        self.entries, self.parents = [], []


class SQLiteRescore:
    """The SQLite store's job: the payloads of the rows not done at the start (id up to ``last``) read from their
    table on a connection of the job's own, chunk by chunk, as stored (:class:`~focused.frontier.store.Framed`);
    new priorities written in the store's open transaction (one ``UPDATE`` by id per row, in one ``executemany``,
    with a page cache of :data:`RESCORE_CACHE_KIB` from the first write to the close: the pop-order index's pages
    are rewritten in random order), only to rows still waiting, not merged since, whose priority changes. A kill
    meanwhile loses nothing: the job only reads until it applies, and its writes commit with the store's next
    batch."""

    def __init__(self, store: SQLiteStore, last: int) -> None:
        self.store = store
        self.last = last
        self.touched: set[int] = set()
        self.bad = 0  # payloads stored as something else than bytes (counted in the store when the job closes)
        self._cache_size: int | None = None  # the connection's page cache size before the job's first write

    def read(self) -> Iterator[tuple[Sequence[Any], Payloads]]:
        conn = sqlite3.connect(self.store.path, timeout=5.0, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA query_only = 1")
            conn.execute("BEGIN")  # one snapshot for every chunk
            after = 0
            while True:
                # the payloads of the URLs not done (a done URL's are deleted): those in flight are scored
                # too, and left as they are by apply()
                rows = conn.execute(
                    "SELECT url, data FROM payloads WHERE url > ? AND url <= ? ORDER BY url LIMIT ?",
                    (after, self.last, RESCORE_CHUNK),
                ).fetchall()
                if not rows:
                    return
                after = rows[-1][0]
                good = [row for row in rows if isinstance(row[1], bytes)]
                if len(good) != len(rows):
                    self.bad += len(rows) - len(good)
                    logger.debug("frontier re-score: %d entries with payloads not stored as bytes skipped", self.bad)
                if good:
                    yield [row[0] for row in good], Framed([row[1] for row in good])
        finally:
            conn.close()

    def apply(self, ids: Sequence[Any], priorities: Sequence[int | None]) -> int:
        store, touched = self.store, self.touched
        updates = [
            (int(p), rowid) for rowid, p in zip(ids, priorities, strict=True) if p is not None and rowid not in touched
        ]
        if not updates or store._stop.is_set():
            return 0
        store._begin()
        conn = store.conn
        if self._cache_size is None:  # the pop-order index's pages stay in memory while the job writes
            self._cache_size = int(conn.execute("PRAGMA cache_size").fetchone()[0])
            conn.execute(f"PRAGMA cache_size = {-RESCORE_CACHE_KIB}")
        changed = conn.executemany(
            "UPDATE urls SET priority = ?1 WHERE id = ?2 AND state = 0 AND priority != ?1", updates
        ).rowcount
        store._wrote(changed)
        return int(changed)

    def close(self) -> None:
        if self._cache_size is not None and not self.store._stop.is_set():
            self.store.conn.execute(f"PRAGMA cache_size = {self._cache_size}")  # the store's own again
        self._cache_size = None
        if self in self.store._jobs:
            self.store._jobs.remove(self)
            self.store.bad_payloads += self.bad
