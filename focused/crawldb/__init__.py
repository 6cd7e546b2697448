"""The crawl database: every fetched page with its verdict, and every link.

Scrapy-free, embedded SQLite. Later stages train from it (the apprentice's
offline mode reads the pages, their HTML and the links between fetched pages),
and the benchmark computes its figures from it.

Writes go to one writer thread, so the crawler's reactor thread never waits on
the disk. They are appended to a deque that the writer drains every
:data:`POLL_SECONDS` (a queue's hand-off woke the writer, and switched threads,
for every page and every choice: a tenth of a fast crawl's reactor time). The
writer commits every ``commit_every``
pages, at least every ``commit_seconds`` while pages arrive, and on
:meth:`CrawlDB.close` (WAL journal: a crash loses at most the last uncommitted
batch, never the file). :attr:`CrawlDB.submitted` and :attr:`CrawlDB.committed`
count pages handed to the writer and pages committed, so that the frontier
acknowledges a fetched URL only once its page is durable; :attr:`CrawlDB.on_commit`
hears, on the writer thread, how many new pages each commit made durable (the
shared page count of a Redis frontier counts them then). Opening an existing
database continues it (a resumed crawl): :meth:`CrawlDB.totals` tells where it
stands.

Schema (``PRAGMA user_version`` = :data:`SCHEMA_VERSION`)::

    crawl(key TEXT PRIMARY KEY, value TEXT)           -- topic, strategy, settings, ...
    pages(url TEXT PRIMARY KEY, fetch_order INTEGER, parent TEXT, depth INTEGER,
          status INTEGER, content_type TEXT, title TEXT, relevance REAL,
          predicted_class TEXT, top_classes TEXT, fetched_at REAL, html BLOB)
    links(src TEXT, dst TEXT, position INTEGER)      -- every outlink of a fetched page
    choices(url TEXT PRIMARY KEY, priority INTEGER,  -- why a page was fetched: its frontier priority
            link_score REAL)                         -- when popped, the strategy's score of its link

``choices`` came after schema 1 was frozen; older files gain it, empty, when opened for writing.
``links`` is indexed by ``src`` only: nothing looks a link up by ``dst``, and that index cost the
writer most of its time (files made before keep theirs).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sqlite3
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
#: Seconds a write waits for a lock another process holds on the file before the writer fails.
LOCK_TIMEOUT = 5.0
#: How often the writer looks for new rows when it has none (the most a row waits to be written).
POLL_SECONDS = 0.05

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
CREATE TABLE IF NOT EXISTS choices (url TEXT PRIMARY KEY, priority INTEGER, link_score REAL);
"""


#: zlib level of the stored HTML: 1 compresses a Wikipedia replay page in 0.29 ms, against 0.38 for 3 and
#: 0.76 for the default 6; the output is 0.43 of the HTML, against 0.41 and 0.39.
HTML_LEVEL = 1


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
    """The file is not a crawl database of a version this code reads, is in use, or its writer failed."""


class CrawlDB:
    """Writer for one crawl database file (see the module docstring)."""

    def __init__(
        self,
        path: str | Path,
        *,
        commit_every: int = 200,
        commit_seconds: float = 1.0,
        store_html: bool = True,
        on_error: Callable[[BaseException], object] | None = None,
    ) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CrawlDBError(f"cannot create the folder of the crawl database {path}: {exc}") from exc
        self.on_error = on_error
        self.commit_every = max(1, commit_every)
        self.commit_seconds = max(0.01, float(commit_seconds))
        self.store_html = store_html
        #: pages handed to the writer / pages it has committed (the writer thread advances it)
        self.submitted = 0
        self.committed = 0
        #: called on the writer thread after each commit with the number of pages it made durable that the
        #: file did not hold before (a page fetched again replaces its row); it must not block for long
        self.on_commit: Callable[[int], object] | None = None
        self._reader: sqlite3.Connection | None = None
        self._ops: deque[tuple[str, Any] | None] = deque()  # appends and pops are atomic
        self._wake = threading.Event()  # set by close() and set_meta(): no wait for the next poll
        self._error: BaseException | None = None
        self._lock_fd = _lock(self.path)
        try:
            conn = _connect(self.path)  # fail early, on the caller's thread, if the file is bad
        except BaseException:
            os.close(self._lock_fd)
            raise
        conn.close()
        self._thread = threading.Thread(target=self._run, name="focused-crawldb", daemon=True)
        self._thread.start()

    def set_meta(self, **values: Any) -> None:
        """Record crawl-level facts (topic, strategy, settings...)."""
        self._put(("meta", {k: json.dumps(v) for k, v in values.items()}))
        self._wake.set()

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

    def add_choice(self, *, url: str, priority: int, link_score: float | None) -> None:
        """Why ``url`` was fetched: its priority when the frontier gave it out, and its link's score."""
        self._put(("choice", (url, int(priority), None if link_score is None else float(link_score))))

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

    @property
    def error(self) -> BaseException | None:
        """Why the writer stopped, if it failed."""
        return self._error

    def _raise_error(self) -> None:
        if self._error is not None:
            raise CrawlDBError(f"the crawl database writer failed: {self._error}") from self._error

    def _put(self, op: tuple[str, Any]) -> None:
        self._raise_error()
        self._ops.append(op)

    def close(self) -> None:
        """Flush everything, commit and stop the writer thread."""
        if self._reader is not None:
            self._reader.close()
        self._ops.append(None)
        self._wake.set()
        self._thread.join()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = -1
        self._raise_error()

    def _committed(self, pending: int, new: int) -> None:
        """After a commit (writer thread): ``pending`` pages are durable, ``new`` of them new rows."""
        self.committed += pending
        if new and self.on_commit is not None:
            try:
                self.on_commit(new)
            except Exception as exc:  # a listener never stops the writer
                logger.error("The crawl database's commit listener failed: %s", exc)

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        pending = new = 0
        last_commit = time.monotonic()
        try:
            conn = _connect(self.path)
            while True:
                if not self._ops:
                    if pending and time.monotonic() - last_commit >= self.commit_seconds:
                        conn.commit()
                        self._committed(pending, new)
                        pending = new = 0
                        last_commit = time.monotonic()
                    self._wake.wait(POLL_SECONDS)
                    self._wake.clear()
                    continue
                op = self._ops.popleft()
                if op is None:
                    break
                kind, data = op
                if kind == "meta":
                    conn.executemany("INSERT OR REPLACE INTO crawl VALUES (?, ?)", list(data.items()))
                elif kind == "page":
                    row, links = data
                    if row[-1] is not None:
                        row = (*row[:-1], zlib.compress(row[-1].encode("utf-8"), HTML_LEVEL))
                    conn.execute("DELETE FROM links WHERE src = ?", (row[0],))  # a re-fetch after a resume
                    replaced = conn.execute("DELETE FROM pages WHERE url = ?", (row[0],)).rowcount
                    conn.execute("INSERT INTO pages VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", row)
                    conn.executemany(
                        "INSERT INTO links VALUES (?, ?, ?)",
                        [(row[0], dst, i) for i, dst in enumerate(links)],
                    )
                    pending += 1
                    new += replaced <= 0
                elif kind == "choice":
                    conn.execute("INSERT OR REPLACE INTO choices VALUES (?, ?, ?)", data)
                now = time.monotonic()
                due = pending and now - last_commit >= self.commit_seconds
                if pending >= self.commit_every or kind == "meta" or due:
                    conn.commit()
                    self._committed(pending, new)
                    pending = new = 0
                    last_commit = now
            conn.commit()
            self._committed(pending, new)
        except BaseException as exc:  # reported to the crawler thread on its next call, and to on_error
            logger.debug("crawl database writer failed", exc_info=True)
            self._error = exc
            if self.on_error is not None:
                self.on_error(exc)
        finally:
            if conn is not None:
                conn.close()


def _lock(path: Path) -> int:
    """An exclusive ``flock`` on the database file (created if needed), or CrawlDBError if another crawl holds it.

    ``flock`` locks are separate from SQLite's own (POSIX) locks, so readers of the file are not affected.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise CrawlDBError(f"cannot open the crawl database {path}: {exc.strerror or exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise CrawlDBError(
            f"the crawl database {path} is being written by another crawl; give this one another file (-a db=PATH)"
        ) from None
    return fd


def _connect(path: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(path, timeout=LOCK_TIMEOUT, check_same_thread=False)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.OperationalError as exc:  # locked, unreadable, out of space...
        raise CrawlDBError(f"cannot use the crawl database {path}: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        raise CrawlDBError(f"{path} is not an SQLite crawl database: {exc}") from exc
    if tables and version != SCHEMA_VERSION:
        conn.close()
        raise CrawlDBError(f"{path} has crawl database schema {version}, expected {SCHEMA_VERSION}")
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_SCHEMA)
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.commit()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise CrawlDBError(f"cannot use the crawl database {path}: {exc}") from exc
    return conn


def check_crawl_db(path: str | Path) -> None:
    """:class:`CrawlDBError` (one line) unless ``path`` is missing, empty, or an SQLite database a crawl can write.

    What :class:`CrawlDB` would refuse, found before the crawl starts: a file that is not
    SQLite, a folder, or an SQLite database with tables of another schema.
    """
    path = Path(path)
    if not path.exists():
        return
    if not path.is_file():
        raise CrawlDBError(f"{path} is not a file; give the crawl database a file name (-a db=PATH)")
    try:
        with path.open("rb") as fh:
            start = fh.read(16)
    except OSError as exc:
        raise CrawlDBError(f"cannot read the crawl database {path}: {exc.strerror or exc}") from exc
    if not start:
        return
    if start != b"SQLite format 3\x00":
        raise CrawlDBError(
            f"{path} is not an SQLite crawl database (it holds something else); "
            "give the crawl another file (-a db=PATH)"
        )
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise CrawlDBError(f"{path} is not an SQLite crawl database: {exc}") from exc
    if tables and version != SCHEMA_VERSION:
        raise CrawlDBError(f"{path} has crawl database schema {version}, expected {SCHEMA_VERSION}")


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


def read_choices(path: str | Path) -> dict[str, tuple[int, float | None]]:
    """``url -> (priority when fetched, link score)`` (empty for a database written before ``choices``)."""
    conn = open_readonly(path)
    try:
        return {url: (priority, score) for url, priority, score in conn.execute("SELECT * FROM choices")}
    except sqlite3.OperationalError:  # no such table
        return {}
    finally:
        conn.close()


def read_meta(path: str | Path) -> dict[str, Any]:
    conn = open_readonly(path)
    try:
        return {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM crawl")}
    finally:
        conn.close()
