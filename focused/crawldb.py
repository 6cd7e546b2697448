"""The crawl database: every fetched page with its verdict, and every link.

Scrapy-free, embedded SQLite. Later stages train from it (the apprentice's
offline mode reads the pages, their HTML and the links between fetched pages),
and the benchmark computes its figures from it.

Writes go through a queue to one writer thread, so the crawler's reactor
thread never waits on the disk; the writer commits every ``commit_every``
pages, at least every ``commit_seconds`` while pages arrive, and on
:meth:`CrawlDB.close` (WAL journal: a crash loses at most the last uncommitted
batch, never the file). :attr:`CrawlDB.submitted` and :attr:`CrawlDB.committed`
count pages handed to the writer and pages committed, so that the frontier
acknowledges a fetched URL only once its page is durable. Opening an existing
database continues it (a resumed crawl): :meth:`CrawlDB.totals` tells where it
stands.

Schema (``PRAGMA user_version`` = :data:`SCHEMA_VERSION`)::

    crawl(key TEXT PRIMARY KEY, value TEXT)           -- topic, strategy, settings, ...
    pages(url TEXT PRIMARY KEY, fetch_order INTEGER, parent TEXT, depth INTEGER,
          status INTEGER, content_type TEXT, title TEXT, relevance REAL,
          predicted_class TEXT, top_classes TEXT, fetched_at REAL, html BLOB)
    links(src TEXT, dst TEXT, position INTEGER)      -- every outlink of a fetched page
"""

from __future__ import annotations

import json
import logging
import queue
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS crawl (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS pages (
    url TEXT PRIMARY KEY, fetch_order INTEGER, parent TEXT, depth INTEGER, status INTEGER,
    content_type TEXT, title TEXT, relevance REAL, predicted_class TEXT, top_classes TEXT,
    fetched_at REAL, html BLOB
);
CREATE INDEX IF NOT EXISTS pages_order ON pages(fetch_order);
CREATE TABLE IF NOT EXISTS links (src TEXT, dst TEXT, position INTEGER);
CREATE INDEX IF NOT EXISTS links_src ON links(src);
CREATE INDEX IF NOT EXISTS links_dst ON links(dst);
"""


@dataclass(frozen=True)
class PageRecord:
    """One row of ``pages`` (HTML decompressed on demand)."""

    url: str
    fetch_order: int
    parent: str | None
    depth: int
    status: int
    content_type: str
    title: str
    relevance: float
    predicted_class: str
    top_classes: tuple[str, ...]
    fetched_at: float
    html_blob: bytes | None = None

    @property
    def html(self) -> str:
        return zlib.decompress(self.html_blob).decode("utf-8") if self.html_blob else ""


class CrawlDBError(Exception):
    """The file is not a crawl database of a version this code reads."""


class CrawlDB:
    """Writer for one crawl database file (see the module docstring)."""

    def __init__(
        self, path: str | Path, *, commit_every: int = 200, commit_seconds: float = 1.0, store_html: bool = True
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.commit_every = max(1, commit_every)
        self.commit_seconds = max(0.01, float(commit_seconds))
        self.store_html = store_html
        #: pages handed to the writer / pages it has committed (the writer thread advances it)
        self.submitted = 0
        self.committed = 0
        self._reader: sqlite3.Connection | None = None
        self._queue: queue.Queue[tuple[str, Any] | None] = queue.Queue()
        self._error: BaseException | None = None
        conn = _connect(self.path)  # fail early, on the caller's thread, if the file is bad
        conn.close()
        self._thread = threading.Thread(target=self._run, name="focused-crawldb", daemon=True)
        self._thread.start()

    def set_meta(self, **values: Any) -> None:
        """Record crawl-level facts (topic, strategy, settings...)."""
        self._put(("meta", {k: json.dumps(v) for k, v in values.items()}))

    def add_page(
        self,
        *,
        url: str,
        fetch_order: int,
        parent: str | None,
        depth: int,
        status: int,
        content_type: str,
        title: str,
        relevance: float,
        predicted_class: str,
        top_classes: tuple[str, ...] | list[str] = (),
        links: list[str] | tuple[str, ...] = (),
        html: str | None = None,
    ) -> None:
        # compressed by the writer thread (zlib releases the GIL), not on the caller's (the reactor's)
        blob = html if (html and self.store_html) else None
        row = (
            url,
            fetch_order,
            parent,
            depth,
            status,
            content_type,
            title,
            float(relevance),
            predicted_class,
            json.dumps(list(top_classes)),
            time.time(),
            blob,
        )
        self._put(("page", (row, list(links))))
        self.submitted += 1

    def known(self, url: str) -> bool:
        """Whether a committed row of ``pages`` has ``url`` (a page fetched again after a resume)."""
        if self._reader is None:
            self._reader = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        return self._reader.execute("SELECT 1 FROM pages WHERE url = ?", (url,)).fetchone() is not None

    def totals(self, threshold: float) -> tuple[int, int, int, float]:
        """``(pages, last fetch order, relevant pages, sum of relevance)`` committed so far.

        A resumed crawl continues from these (pages count each URL once, a
        re-fetched page replaces its row).
        """
        conn = _connect(self.path)
        try:
            row = conn.execute(
                "SELECT COUNT(*), COALESCE(MAX(fetch_order), 0), COALESCE(SUM(relevance >= ?), 0), "
                "COALESCE(SUM(relevance), 0.0) FROM pages",
                (threshold,),
            ).fetchone()
        finally:
            conn.close()
        return int(row[0]), int(row[1]), int(row[2]), float(row[3])

    def _put(self, op: tuple[str, Any]) -> None:
        if self._error is not None:
            raise CrawlDBError(f"crawl database writer failed: {self._error}") from self._error
        self._queue.put(op)

    def close(self) -> None:
        """Flush everything, commit and stop the writer thread."""
        if self._reader is not None:
            self._reader.close()
        self._queue.put(None)
        self._thread.join()
        if self._error is not None:
            raise CrawlDBError(f"crawl database writer failed: {self._error}") from self._error

    def _run(self) -> None:
        conn = _connect(self.path)
        pending = 0
        last_commit = time.monotonic()
        try:
            while True:
                try:
                    op = self._queue.get(timeout=self.commit_seconds if pending else None)
                except queue.Empty:
                    op = ("tick", None)
                if op is None:
                    break
                kind, data = op
                if kind == "meta":
                    conn.executemany("INSERT OR REPLACE INTO crawl VALUES (?, ?)", list(data.items()))
                elif kind == "page":
                    row, links = data
                    if row[-1] is not None:
                        row = (*row[:-1], zlib.compress(row[-1].encode("utf-8"), 6))
                    conn.execute("DELETE FROM links WHERE src = ?", (row[0],))  # a re-fetch after a resume
                    conn.execute("INSERT OR REPLACE INTO pages VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", row)
                    conn.executemany(
                        "INSERT INTO links VALUES (?, ?, ?)",
                        [(row[0], dst, i) for i, dst in enumerate(links)],
                    )
                    pending += 1
                now = time.monotonic()
                due = pending and now - last_commit >= self.commit_seconds
                if pending >= self.commit_every or kind == "meta" or due:
                    conn.commit()
                    self.committed += pending
                    pending = 0
                    last_commit = now
            conn.commit()
            self.committed += pending
        except BaseException as exc:  # reported to the crawler thread on its next call
            logger.exception("crawl database writer failed")
            self._error = exc
        finally:
            conn.close()


def _connect(path: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(path, check_same_thread=False)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as exc:
        raise CrawlDBError(f"{path} is not an SQLite crawl database: {exc}") from exc
    if tables and version != SCHEMA_VERSION:
        conn.close()
        raise CrawlDBError(f"{path} has crawl database schema {version}, expected {SCHEMA_VERSION}")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(_SCHEMA)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    conn.commit()
    return conn


def open_readonly(path: str | Path) -> sqlite3.Connection:
    """Open an existing crawl database for reading; :class:`CrawlDBError` if it is not one."""
    path = Path(path)
    if not path.exists():
        raise CrawlDBError(f"crawl database not found: {path}")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise CrawlDBError(f"{path} is not an SQLite crawl database: {exc}") from exc
    if version != SCHEMA_VERSION:
        conn.close()
        raise CrawlDBError(f"{path} has crawl database schema {version}, expected {SCHEMA_VERSION}")
    return conn


def iter_pages(path: str | Path, *, with_html: bool = False) -> Iterator[PageRecord]:
    """The fetched pages of a crawl database in fetch order."""
    conn = open_readonly(path)
    cols = "url, fetch_order, parent, depth, status, content_type, title, relevance, predicted_class, "
    cols += "top_classes, fetched_at, " + ("html" if with_html else "NULL")
    try:
        for row in conn.execute(f"SELECT {cols} FROM pages ORDER BY fetch_order"):
            (url, order, parent, depth, status, ctype, title, relevance, predicted, top, fetched_at, html) = row
            yield PageRecord(
                url,
                order,
                parent,
                depth,
                status,
                ctype,
                title,
                relevance,
                predicted,
                tuple(json.loads(top or "[]")),
                fetched_at,
                html,
            )
    finally:
        conn.close()


def iter_links(path: str | Path) -> Iterator[tuple[str, str]]:
    """Every ``(src, dst)`` link of the fetched pages, in fetch order of ``src``."""
    conn = open_readonly(path)
    try:
        yield from conn.execute(
            "SELECT l.src, l.dst FROM links l JOIN pages p ON p.url = l.src ORDER BY p.fetch_order, l.position"
        )
    finally:
        conn.close()


def read_meta(path: str | Path) -> dict[str, Any]:
    conn = open_readonly(path)
    try:
        return {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM crawl")}
    finally:
        conn.close()
