"""The SQLite frontier store's file: its schema and format versions, opening (checked, and converted from an
older version), and the tools that read it without a crawl (the job directory's check, the quarantine).

Schema (``meta`` holds ``format``, ``format_version``, the tie counter and
whatever the crawl keeps with its frontier)::

    meta(key TEXT PRIMARY KEY, value TEXT)                   -- JSON values
    urls(id INTEGER PRIMARY KEY, key TEXT UNIQUE,            -- id: the rowid, kept by a VACUUM
         state INTEGER,                                       -- 0 waiting, 1 in flight, 2 done
         priority INTEGER, tie REAL,                          -- pop order: priority desc, tie asc
         p_first, p_n, p_sum, p_max INTEGER,                  -- the parents' priorities, for merging
         attempts INTEGER,                                    -- times popped (> 1: re-fetched after a resume)
         item TEXT)                                           -- request JSON; NULL once done
    payloads(url INTEGER PRIMARY KEY, data BLOB)              -- a waiting or in-flight URL's (urls.id)
                                                              -- framed payloads; deleted when it is done
    quarantine(id INTEGER PRIMARY KEY, key TEXT, reason TEXT,  -- entries that could not be read back, moved
               at REAL, item, payloads BLOB)                  -- here as they were (their urls row is done)

The payloads have a table of their own (format version 2) so that a new priority,
which a re-score writes to every waiting URL, rewrites a row of ~400 bytes and not
one that carries its parents' ~1 KB of payloads too. A store of version 1 (the
payloads a column of ``urls``) is converted when it is opened, in one transaction.

The quarantine table came after format version 1 was frozen: a store written
before gains it, empty, when it is opened (the same version: an older focused
ignores the table). ``focused quarantine`` lists and purges it
(:func:`read_quarantine`, :func:`purge_quarantine`).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sqlite3
from pathlib import Path
from typing import Any

from focused.frontier.store import StoreError

logger = logging.getLogger(__name__)

FORMAT = "focused.frontier"
FORMAT_VERSION = 3
#: Versions :func:`open_store_file` converts to :data:`FORMAT_VERSION` (:func:`_migrate`).
OLD_VERSIONS = (1, 2)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS urls (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,
    state INTEGER NOT NULL, priority INTEGER NOT NULL, tie REAL NOT NULL,
    p_first INTEGER NOT NULL, p_n INTEGER NOT NULL, p_sum INTEGER NOT NULL, p_max INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS urls_waiting ON urls(priority DESC, tie) WHERE state = 0;
CREATE INDEX IF NOT EXISTS urls_in_flight ON urls(state) WHERE state = 1;
CREATE TABLE IF NOT EXISTS payloads (url INTEGER PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS requests (url INTEGER PRIMARY KEY, item);
"""
# Format versions: 1 kept each URL's request and payloads in its ``urls`` row; 2 moved the payloads to their own
# table; 3 the requests too, so that a new priority (a re-score rewrites every waiting URL's) or a state rewrites a
# row of ~60 bytes instead of ~400: fewer pages to write and to commit.
#: Added to format version 1 (created by every open: a store of an older focused gains it).
_QUARANTINE = """
CREATE TABLE IF NOT EXISTS quarantine (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL, reason TEXT NOT NULL, at REAL NOT NULL, item, payloads BLOB
);
"""


def lock_store_file(path: Path) -> Any:
    """An exclusive lock on ``<path>.lock`` for this process's lifetime (released on exit, even by a kill)."""
    fh = open(f"{path}.lock", "a+")  # noqa: SIM115  (held until close())
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise StoreError(f"{path} is in use by another crawl; stop it first, or use another JOBDIR") from None
    fh.seek(0)
    fh.truncate()
    fh.write(f"{os.getpid()}\n")
    fh.flush()
    return fh


def open_store_file(path: Path) -> sqlite3.Connection:
    """Open (or create) a store file; :class:`StoreError` with what to do if it is not a usable one."""
    existed = path.exists() and path.stat().st_size > 0
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5.0)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the frontier store ({exc})") from exc
    try:
        version = _validate(conn, path) if existed else None  # before anything writes to the file
        conn.execute("PRAGMA journal_mode=WAL").fetchone()
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")  # checkpoints run in SQLiteStore's thread
        if version in OLD_VERSIONS:
            _migrate(conn, path, version)
        if not existed:
            conn.executescript(_SCHEMA)
            conn.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [("format", json.dumps(FORMAT)), ("format_version", json.dumps(FORMAT_VERSION))],
            )
        conn.executescript(_QUARANTINE)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"{path} is not a usable frontier store ({exc}); {_hint(path)}") from exc
    except StoreError:
        conn.close()
        raise
    return conn


def _hint(path: Path) -> str:
    return f"move {path} away to start this crawl afresh"


def _migrate(conn: sqlite3.Connection, path: Path, version: int) -> None:
    """Convert a store of format ``version`` 1 or 2 to :data:`FORMAT_VERSION`, in one transaction (a kill
    leaves it as it was): ``urls`` rebuilt with an ``id`` column (version 1 had none) and without the requests
    and payloads of its rows, which move to their tables (version 1 kept the payloads in the row)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("ALTER TABLE urls RENAME TO urls_old")
        conn.execute("DROP INDEX IF EXISTS urls_waiting")
        conn.execute("DROP INDEX IF EXISTS urls_in_flight")
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        own_id = "rowid" if version == 1 else "id"
        columns = "key, state, priority, tie, p_first, p_n, p_sum, p_max, attempts"
        conn.execute(f"INSERT INTO urls (id, {columns}) SELECT {own_id}, {columns} FROM urls_old")
        conn.execute(f"INSERT INTO requests (url, item) SELECT {own_id}, item FROM urls_old WHERE state < 2")
        if version == 1:
            conn.execute(
                "INSERT INTO payloads (url, data) SELECT rowid, payloads FROM urls_old "
                "WHERE payloads IS NOT NULL AND state < 2"
            )
        conn.execute("DROP TABLE urls_old")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'format_version'", (json.dumps(FORMAT_VERSION),))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    logger.info("Frontier store %s converted from format version %d to %d", path, version, FORMAT_VERSION)


def _validate(conn: sqlite3.Connection, path: Path) -> int:
    """The format version of ``conn``'s store (:data:`FORMAT_VERSION`, or one of :data:`OLD_VERSIONS`, which
    opening the store converts); :class:`StoreError` unless it is a healthy store of these. Reads only."""
    hint = _hint(path)
    check = conn.execute("PRAGMA quick_check").fetchone()[0]
    if check != "ok":
        raise StoreError(f"{path}: the frontier store is damaged ({check}); {hint}")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"meta", "urls"} <= tables:
        raise StoreError(f"{path} is an SQLite file but not a frontier store; {hint}")
    meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('format', 'format_version')"))
    if meta.get("format") != json.dumps(FORMAT):
        raise StoreError(f"{path} is not a frontier store; {hint}")
    readable = {json.dumps(v): v for v in (*OLD_VERSIONS, FORMAT_VERSION)}
    if meta.get("format_version") not in readable:
        raise StoreError(
            f"{path} is a frontier store of format version {meta.get('format_version')}, this focused "
            f"reads versions {', '.join(map(str, readable.values()))}; resume it with the focused that wrote it, "
            f"or {hint}"
        )
    return readable[meta["format_version"]]


def _read_only(path: Path) -> sqlite3.Connection:
    """``path`` opened read only; :class:`StoreError` if SQLite cannot open it."""
    try:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the frontier store ({exc})") from exc


def check_store(path: str | Path) -> None:
    """Raise :class:`StoreError` if ``path`` is in use by another crawl or not a healthy store; changes nothing.

    For checking a job directory before a crawl starts; :class:`SQLiteStore` checks again when it opens.
    """
    path = Path(path)
    lock_store_file(path).close()
    if not (path.exists() and path.stat().st_size > 0):
        return
    conn = _read_only(path)
    try:
        _validate(conn, path)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a usable frontier store ({exc}); {_hint(path)}") from exc
    finally:
        conn.close()


def read_quarantine(path: str | Path) -> list[dict[str, Any]]:
    """The quarantined entries of the store file ``path`` (oldest first), read only: ``key``, ``reason``,
    ``at`` (Unix time) and ``item`` (text, or bytes if it was stored so). :class:`StoreError` if ``path`` is
    not a healthy store; a store that never quarantined anything has none."""
    path = Path(path)
    if not path.is_file():
        raise StoreError(f"{path}: no such frontier store (a job directory holds it as {path.name})")
    conn = _read_only(path)
    try:
        _validate(conn, path)
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'quarantine'").fetchone():
            return []
        rows = conn.execute("SELECT key, reason, at, item FROM quarantine ORDER BY id").fetchall()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a usable frontier store ({exc}); {_hint(path)}") from exc
    finally:
        conn.close()
    return [{"key": key, "reason": reason, "at": at, "item": item} for key, reason, at, item in rows]


def purge_quarantine(path: str | Path) -> int:
    """Delete the quarantined entries of the store file ``path`` (not in use by a crawl); returns how many."""
    path = Path(path)
    read_quarantine(path)  # validates, and refuses a missing file instead of creating one
    lock = lock_store_file(path)
    try:
        conn = open_store_file(path)
        try:
            return conn.execute("DELETE FROM quarantine").rowcount
        finally:
            conn.close()
    finally:
        lock.close()
