"""The crawl database writer fails loudly: a dead writer stops the crawl with exit status 1 and one error line;
two crawls never share a file."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from focused.bench.runner import PROJECT_ROOT, scrapy_command, stats_path
from focused.crawldb import CrawlDB, CrawlDBError, iter_pages
from focused.replay.server import ReplayServer
from focused.settings import defaults
from tests.sites import graph_crawl, graph_site, train_critic


@pytest.fixture(scope="module")
def slow_web(tmp_path_factory):
    """The graph web at 0.1 s a page: a crawl of it runs long enough to be interfered with."""
    tmp = tmp_path_factory.mktemp("writer")
    model = train_critic(tmp / "critic.npz")
    with ReplayServer(graph_site(240), latency=0.1) as server:
        yield {"model": model, "proxy": server.proxy_url, "tmp": tmp}


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), SCRAPY_SETTINGS_MODULE="focused.settings")


def _committed_pages(path: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.1)
        try:
            return conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def _lock_out(db: Path, proc: subprocess.Popen) -> sqlite3.Connection:
    """Take the database's write lock in a gap between the writer's transactions.

    SQLite's own busy handler backs off (up to 100 ms a try) and can miss every gap of a writer that begins its
    next transaction right after each commit, so poll it without waiting.
    """
    locker = sqlite3.connect(db, timeout=0)
    deadline = time.monotonic() + 60
    while True:
        try:
            locker.execute("BEGIN EXCLUSIVE")
            return locker
        except sqlite3.OperationalError:
            assert proc.poll() is None and time.monotonic() < deadline, "never got the lock while the crawl ran"
            time.sleep(0.001)


def test_a_writer_locked_out_stops_the_crawl_with_an_error(slow_web):
    spec = graph_crawl(slow_web, "locked", strategy="bfs", FOCUSED_DB_COMMIT_SECONDS=0.2, LOG_LEVEL="INFO")
    log = slow_web["tmp"] / "locked.log"
    with log.open("w") as fh:
        proc = subprocess.Popen(scrapy_command(spec), cwd=PROJECT_ROOT, env=_env(), stdout=fh, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120  # generous: a loaded machine starts Scrapy slowly
        while _committed_pages(spec.db) < 5:  # the crawl is under way and its writer has committed
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.1)
        locker = _lock_out(spec.db, proc)  # another process holds the file: the writer gives up after 5 s
        try:
            returncode = proc.wait(timeout=90)
        finally:
            locker.rollback()
            locker.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert returncode == 1, text[-3000:]
    errors = [line for line in text.splitlines() if "The crawl database writer failed" in line]
    assert len(errors) == 1, text[-3000:]
    assert "database is locked" in errors[0]
    assert "Traceback" not in text
    stats = stats_path(spec).read_text()
    assert '"finish_reason": "crawldb_failed"' in stats
    stored = len(list(iter_pages(spec.db)))
    assert 5 <= stored < 240  # stopped, with what was committed kept


def test_two_crawls_started_together_write_two_files(slow_web, tmp_path):
    template = str(tmp_path / Path(defaults.FOCUSED_DB).name)  # the default name, in a scratch folder
    procs = []
    for name in ("one", "two"):
        spec = graph_crawl(slow_web, name, strategy="bfs", max_pages=3)
        cmd = [*scrapy_command(spec), "-s", f"FOCUSED_DB={template}"]
        procs.append(
            subprocess.Popen(cmd, cwd=PROJECT_ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        )
    outputs = [p.communicate(timeout=120)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    files = sorted(tmp_path.glob("sport-bfs-*.sqlite"))
    assert len(files) == 2, (files, outputs)
    # each crawl stopped at its budget; a page already in the pipeline when the spider began to close is
    # still stored (the budget stops the crawl, it does not drop fetched pages), which a loaded machine shows
    assert all(3 <= len(list(iter_pages(f))) <= 3 + 2 for f in files), [len(list(iter_pages(f))) for f in files]


def test_one_file_one_writer(tmp_path):
    path = tmp_path / "c.sqlite"
    first = CrawlDB(path)
    with pytest.raises(CrawlDBError, match="being written by another crawl"):
        CrawlDB(path)
    first.close()
    CrawlDB(path).close()  # free again once the first crawl closed it


def test_a_failed_writer_reports_once_and_refuses_pages(tmp_path):
    path = tmp_path / "c.sqlite"
    failures = []
    db = CrawlDB(path, commit_every=1, on_error=failures.append)
    locker = sqlite3.connect(path)
    locker.execute("BEGIN EXCLUSIVE")
    start = time.monotonic()
    db.set_meta(topic="x")  # the writer waits for the lock, then gives up
    while not failures and time.monotonic() - start < 120:  # only catches a hang
        time.sleep(0.05)
    locker.rollback()
    locker.close()
    assert len(failures) == 1 and "locked" in str(failures[0])
    assert db.error is failures[0]
    with pytest.raises(CrawlDBError, match="writer failed"):
        db.set_meta(topic="y")
    with pytest.raises(CrawlDBError):
        db.close()
    CrawlDB(path).close()  # the lock was released
