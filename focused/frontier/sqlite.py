"""The durable frontier store: embedded SQLite (stdlib ``sqlite3``, WAL journal).

One table holds every URL the crawl accepted, waiting, in flight or done
(:mod:`focused.frontier.store`), so the frontier and the seen-set are written
in the same transactions and can never disagree; the request and the parents'
payloads of a URL not yet done are in two tables beside it (a done URL keeps its
key only), so that a new priority or state rewrites a short row. Operations run on the
caller's thread inside an open transaction that is committed every
``commit_ops`` operations or ``commit_seconds`` seconds (:meth:`maybe_commit`),
so a ``kill -9`` loses at most the last uncommitted batch, and because
operations are committed in the order they happened, what survives is always a
state the crawl was really in: a page acknowledged as done has its outlinks in
the store too.

Commits do not wait for the disk (``synchronous=NORMAL``: a process crash loses
nothing committed; a power cut may lose the last commits); the fsyncs happen in
WAL checkpoints, which a background thread runs on its own connection so that
the crawler's thread never blocks on them.

The file (its schema, format versions, opening, checking and the quarantine's
tools) is :mod:`focused.frontier.sqlitefile`. An entry whose request cannot be
decoded (not JSON, a class or callback :mod:`focused.frontier.requests`
refuses) is moved to the quarantine table in the transaction that popped it,
logged in one line and counted (:attr:`SQLiteStore.quarantined`), and the pop
goes on with the next entry; as its ``urls`` row is done, a resume does not
bring it back.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from focused.frontier.rescore import SQLiteRescore
from focused.frontier.sqlitefile import lock_store_file, open_store_file
from focused.frontier.store import (
    BadEntry,
    Popped,
    Push,
    PushResult,
    check_options,
    combine,
    frame,
    tie_value,
)

logger = logging.getLogger(__name__)

WAITING, IN_FLIGHT, DONE = 0, 1, 2


class SQLiteStore:
    """:class:`~focused.frontier.store.FrontierStore` in one SQLite file (see the module docstring).

    ``encode``/``decode`` turn the opaque items (requests) into text and back.
    Opening a store takes an exclusive lock on ``<path>.lock``: two crawls
    cannot share one store. In-flight entries of an earlier process go back to
    waiting (:attr:`requeued`).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        encode: Callable[[Any], str],
        decode: Callable[[str], Any],
        aggregation: str = "max",
        tiebreak: str = "fifo",
        seed: int = 0,
        commit_ops: int = 1000,
        commit_seconds: float = 1.0,
        checkpoint_seconds: float = 5.0,
    ) -> None:
        check_options(aggregation, tiebreak)
        self.path = Path(path)
        self.aggregation = aggregation
        self.tiebreak = tiebreak
        self.seed = int(seed)
        self.encode = encode
        self.decode = decode
        self.commit_ops = max(1, int(commit_ops))
        self.commit_seconds = float(commit_seconds)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_fh = lock_store_file(self.path)
        try:
            self.conn = open_store_file(self.path)
        except BaseException:
            self._lock_fh.close()
            raise
        self._meta: dict[str, Any] = {k: json.loads(v) for k, v in self.conn.execute("SELECT key, value FROM meta")}
        self._dirty: set[str] = set()
        self._counter = int(self._meta.get("counter", 0))
        self._in_txn = False
        self._ops = 0
        self._last_commit = time.monotonic()
        self._begin()
        self.requeued = self.conn.execute("UPDATE urls SET state = 0 WHERE state = 1").rowcount
        #: entries this process moved to the quarantine table; waiting entries whose payloads could
        #: not be unframed in a re-score (skipped, their priority kept)
        self.quarantined = 0
        self.bad_payloads = 0
        self._waiting = self.conn.execute("SELECT COUNT(*) FROM urls WHERE state = 0").fetchone()[0]
        self._in_flight = 0
        #: background re-scores under way: the rows merged since each started are not re-scored by it
        self._jobs: list[SQLiteRescore] = []
        self.commit()
        self._stop = threading.Event()
        self._checkpointer = threading.Thread(
            target=self._checkpoint_loop, args=(checkpoint_seconds,), name="focused-frontier-wal", daemon=True
        )
        self._checkpointer.start()

    # -- transactions -------------------------------------------------------------------

    def _begin(self) -> None:
        if not self._in_txn:
            self.conn.execute("BEGIN")
            self._in_txn = True

    def commit(self) -> None:
        if self._dirty:
            self.conn.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)", [(k, json.dumps(self._meta[k])) for k in self._dirty]
            )
            self._dirty.clear()
        if self._in_txn:
            self.conn.execute("COMMIT")
            self._in_txn = False
        self._ops = 0
        self._last_commit = time.monotonic()

    def maybe_commit(self) -> None:
        if self._ops and (self._ops >= self.commit_ops or time.monotonic() - self._last_commit >= self.commit_seconds):
            self.commit()

    def _wrote(self, n: int) -> None:
        self._ops += n
        self.maybe_commit()
        self._begin()

    # -- the store interface ------------------------------------------------------------

    def push_many(self, pushes: Sequence[Push]) -> list[PushResult]:
        self._begin()
        conn = self.conn
        results = []
        for push in pushes:
            row = conn.execute(
                "SELECT id, state, p_first, p_n, p_sum, p_max, data FROM urls LEFT JOIN payloads ON url = id "
                "WHERE key = ?",
                (push.key,),
            ).fetchone()
            priority = int(push.priority)
            payload = frame([push.payload]) if push.payload is not None else None
            if row is None:
                tie = tie_value(self.tiebreak, self.seed, self._counter)
                self._counter += 1
                rowid = conn.execute(
                    "INSERT INTO urls (key, state, priority, tie, p_first, p_n, p_sum, p_max) "
                    "VALUES (?, 0, ?, ?, ?, 1, ?, ?)",
                    (push.key, priority, tie, priority, priority, priority),
                ).lastrowid
                conn.execute("INSERT INTO requests (url, item) VALUES (?, ?)", (rowid, self.encode(push.item)))
                if payload is not None:
                    conn.execute("INSERT INTO payloads (url, data) VALUES (?, ?)", (rowid, payload))
                self._waiting += 1
                results.append(PushResult.NEW)
            elif row[1] == WAITING:
                rowid, _, first, n, total, best, payloads = row
                n, total, best = n + 1, total + priority, max(best, priority)
                conn.execute(
                    "UPDATE urls SET priority = ?, p_n = ?, p_sum = ?, p_max = ? WHERE id = ?",
                    (combine(self.aggregation, first, n, total, best), n, total, best, rowid),
                )
                if payload is not None:  # after the earlier parents' frames (SQL's || would make text of them)
                    conn.execute(
                        "INSERT OR REPLACE INTO payloads (url, data) VALUES (?, ?)",
                        (rowid, payloads + payload if isinstance(payloads, bytes) else payload),
                    )
                results.append(PushResult.MERGED)
                for job in self._jobs:
                    job.touched.add(rowid)
            else:
                results.append(PushResult.SEEN)
        self._meta["counter"] = self._counter
        self._dirty.add("counter")
        self._wrote(len(pushes))
        return results

    def pop_many(self, n: int = 1) -> list[Popped]:
        """Lease up to ``n`` best waiting entries; one that cannot be decoded is quarantined (module
        docstring) and the next one taken in its place, in the same call."""
        out: list[Popped] = []
        while len(out) < n:
            self._begin()
            rows = self.conn.execute(
                "SELECT id, key, item, priority, attempts FROM urls LEFT JOIN requests ON url = id "
                "WHERE state = 0 ORDER BY priority DESC, tie LIMIT ?",
                (n - len(out),),
            ).fetchall()
            if not rows:
                break
            self.conn.executemany(
                "UPDATE urls SET state = 1, attempts = attempts + 1 WHERE id = ?", [(r[0],) for r in rows]
            )
            self._waiting -= len(rows)
            self._in_flight += len(rows)
            bad: list[tuple[int, str, str]] = []
            for rowid, key, item, priority, attempts in rows:
                try:
                    if not isinstance(item, str):
                        raise BadEntry("no request stored" if item is None else "binary data, not JSON text")
                    out.append(Popped(key, self.decode(item), priority, attempts))
                except (ValueError, TypeError) as exc:  # a malformed entry never stops the crawl
                    bad.append((rowid, key, str(exc) or type(exc).__name__))
            if bad:
                self._quarantine(bad)
            self._wrote(len(rows))  # the quarantine commits with the pop that found it
        return out

    def _quarantine(self, bad: Sequence[tuple[int, str, str]]) -> None:
        """Move in-flight entries ``(rowid, key, reason)`` to the quarantine table; their rows become done."""
        now = time.time()
        self.conn.executemany(
            "INSERT INTO quarantine (key, reason, at, item, payloads) SELECT key, ?, ?, "
            "(SELECT item FROM requests WHERE url = urls.id), (SELECT data FROM payloads WHERE url = urls.id) "
            "FROM urls WHERE id = ?",
            [(reason, now, rowid) for rowid, _, reason in bad],
        )
        self._done([r[0] for r in bad])
        self._in_flight -= len(bad)
        self.quarantined += len(bad)
        for _, key, reason in bad:
            logger.error("Frontier entry %s quarantined: %s (focused quarantine list shows it)", key, reason)

    def drop_lowest(self, n: int) -> int:
        """Drop the ``n`` lowest-priority waiting entries: they become done (seen, never fetched)."""
        if n <= 0:
            return 0
        self._begin()
        rowids = [
            r[0]
            for r in self.conn.execute(
                "SELECT id FROM urls WHERE state = 0 ORDER BY priority ASC, tie DESC LIMIT ?", (n,)
            )
        ]
        self._done(rowids)
        self._waiting -= len(rowids)
        self._wrote(len(rowids))
        return len(rowids)

    def _done(self, rowids: Sequence[int]) -> None:
        """Mark the rows done: their request and payloads are no longer kept (the key stays, as seen)."""
        ids = [(r,) for r in rowids]
        self.conn.executemany("DELETE FROM payloads WHERE url = ?", ids)
        self.conn.executemany("DELETE FROM requests WHERE url = ?", ids)
        self.conn.executemany("UPDATE urls SET state = 2 WHERE id = ?", ids)

    def ack_many(self, keys: Iterable[str]) -> None:
        self._begin()
        find = "SELECT id FROM urls WHERE key = ? AND state = 1"
        rowids = list(dict.fromkeys(row[0] for key in keys for row in self.conn.execute(find, (key,))))  # once each
        self._done(rowids)
        self._in_flight -= len(rowids)
        self._wrote(len(rowids))

    def give_back_many(self, keys: Iterable[str]) -> None:
        self._begin()
        n = self.conn.executemany(
            "UPDATE urls SET state = 0 WHERE key = ? AND state = 1", [(k,) for k in keys]
        ).rowcount
        self._in_flight -= n
        self._waiting += n
        self._wrote(n)

    def rescore_start(self) -> SQLiteRescore:
        """A re-score of the entries waiting now: committed first, so that the job's own connection
        (:meth:`~focused.frontier.rescore.SQLiteRescore.read`, maybe in a thread) sees them; rows added later
        are not its."""
        self.commit()
        last = self.conn.execute("SELECT MAX(id) FROM urls").fetchone()[0] or 0
        job = SQLiteRescore(self, last)
        self._jobs.append(job)
        return job

    def seen(self, key: str) -> bool:
        return self.conn.execute("SELECT 1 FROM urls WHERE key = ?", (key,)).fetchone() is not None

    def waiting(self, key: str) -> bool:
        """Whether ``key`` waits (a push of it would merge)."""
        return self.conn.execute("SELECT 1 FROM urls WHERE key = ? AND state = 0", (key,)).fetchone() is not None

    def settled(self, key: str) -> bool:
        """Whether ``key`` is in flight or done (a push of it would be dropped)."""
        return self.conn.execute("SELECT 1 FROM urls WHERE key = ? AND state > 0", (key,)).fetchone() is not None

    def __len__(self) -> int:
        return self._waiting

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def count(self, state: int) -> int:
        """Entries in ``state`` (:data:`WAITING`, :data:`IN_FLIGHT`, :data:`DONE`), counted in the file."""
        return self.conn.execute("SELECT COUNT(*) FROM urls WHERE state = ?", (state,)).fetchone()[0]

    def get_meta(self, key: str, default: Any = None) -> Any:
        return self._meta.get(key, default)

    def set_meta(self, key: str, value: Any) -> None:
        json.dumps(value)  # fail here, not at commit time
        self._meta[key] = value
        self._dirty.add(key)

    def close(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._checkpointer.join()
        try:
            self.commit()
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.conn.close()
        finally:
            self._lock_fh.close()

    def _checkpoint_loop(self, every: float) -> None:
        """Copy the WAL into the database (with its fsyncs) off the crawler's thread."""
        conn = sqlite3.connect(self.path, timeout=0.5, check_same_thread=False)
        try:
            while not self._stop.wait(every):
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.OperationalError as exc:  # busy: try again next time
                    logger.debug("frontier WAL checkpoint skipped: %s", exc)
        finally:
            conn.close()
