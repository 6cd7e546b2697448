"""A crawl that is killed loses nothing: real ``scrapy crawl focused`` processes, killed and resumed.

Every crawl runs through the replay proxy of a generated 240-page web with a
wide frontier (:func:`tests.sites.graph_site`); the job's state lives in
``JOBDIR`` (frontier store, apprentice checkpoints, crawl facts) and its crawl
database is continued across runs.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.utils.request import fingerprint

from focused.bench.runner import PROJECT_ROOT, run_crawl, scrapy_command
from tests.sites import HOST, graph_crawl, graph_web
from tests.tripwire import tripwire_pickle

PAGES = 240
APPRENTICE = {"FOCUSED_APPRENTICE_BATCH": 20, "FOCUSED_APPRENTICE_MIN_INSTANCES": 30}
# commits every 0.2 s (default 1 s): this small web is crawled in a few seconds, and the kills
# must land after some commits for the test to say something
COMMITS = {"FOCUSED_FRONTIER_COMMIT_SECONDS": 0.2, "FOCUSED_DB_COMMIT_SECONDS": 0.2}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with graph_web(tmp_path_factory.mktemp("graph"), PAGES) as web:
        yield web


def spec(site, name, strategy="apprentice", max_pages=0, **settings):
    return graph_crawl(site, name, strategy=strategy, max_pages=max_pages, **{**APPRENTICE, **COMMITS, **settings})


def run(s, resume=False):
    result = run_crawl(s, timeout=180, resume=resume)
    assert result.returncode == 0, result.log.read_text()[-3000:]
    return result


def interrupt(s, *, when, signals_to_send, resume=False):
    """Start a crawl, wait until its log matches ``when`` (a page count or a regex), send the signals."""
    if not resume:
        for stale in (s.db, Path(f"{s.db}-wal"), Path(f"{s.db}-shm")):
            stale.unlink(missing_ok=True)
    log = s.db.with_suffix(f".{time.time_ns()}.log")
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), SCRAPY_SETTINGS_MODULE="focused.settings")
    with log.open("w") as fh:
        proc = subprocess.Popen(scrapy_command(s), cwd=PROJECT_ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            text = log.read_text(errors="replace")
            hit = text.count("Crawled (200)") >= when if isinstance(when, int) else re.search(when, text)
            if hit:
                break
            time.sleep(0.02)
        assert proc.poll() is None, f"the crawl ended before it could be interrupted:\n{log.read_text()[-2000:]}"
        for sig in signals_to_send:
            proc.send_signal(sig)
            time.sleep(0.05)
        proc.wait(timeout=120)
    return proc.returncode, log.read_text(errors="replace")


def fetched(db):
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = conn.execute("SELECT url, fetch_order FROM pages ORDER BY fetch_order").fetchall()
        links = conn.execute("SELECT DISTINCT dst FROM links").fetchall()
    finally:
        conn.close()
    orders = [o for _, o in rows]
    assert len(set(orders)) == len(orders)  # fetch order continues across runs, never restarts
    return [u for u, _ in rows], {d for (d,) in links}


def frontier(jobdir):
    conn = sqlite3.connect(Path(jobdir, "frontier.sqlite"))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return dict(conn.execute("SELECT key, state FROM urls"))
    finally:
        conn.close()


def key(url):
    return fingerprint(Request(url)).hex()


def refetches(log):
    return sum(int(n) for n in re.findall(r"\((\d+) were in flight", log))


@pytest.fixture(scope="module")
def reference(site):
    """The uninterrupted crawl: every page of the site, in its order."""
    s = spec(site, "reference", strategy="baseline", FOCUSED_REPLAY_CONCURRENCY=1)
    run(s)
    order, _ = fetched(s.db)
    assert len(order) == PAGES
    return order


def test_kill_9_three_times_then_resume_loses_nothing(site, reference):
    jobdir = site["tmp"] / "job-kill"
    s = spec(site, "kill", JOBDIR=str(jobdir))
    logs = []
    # before the first commit of the frontier, mid crawl, and when the apprentice retrains
    for when in (1, 60, r"Apprentice v\d+ (switched in|retrained)"):
        code, log = interrupt(s, when=when, signals_to_send=[signal.SIGKILL], resume=bool(logs))
        assert code == -signal.SIGKILL
        logs.append(log)
    result = run(s, resume=True)
    logs.append(result.log.read_text())
    order, _ = fetched(s.db)
    assert set(order) == set(reference)  # every page fetched: nothing lost
    states = frontier(jobdir)
    assert all(state == 2 for state in states.values())  # nothing waiting, nothing in flight
    # what was in flight at a kill is fetched again, and counted (commits are batched by time: a kill
    # within a second of a resume can lose that second, so the count is bounded by all resumes together)
    requeued = sum(refetches(log) for log in logs)
    assert requeued > 0 and result.stats.get("focused/frontier/refetched", 0) <= requeued
    assert "Resumed the apprentice" in logs[-1]


def test_kill_9_then_resume_to_the_same_budget(site):
    jobdir = site["tmp"] / "job-budget"
    s = spec(site, "budget", max_pages=150, JOBDIR=str(jobdir))
    code, _ = interrupt(s, when=70, signals_to_send=[signal.SIGKILL])
    assert code == -signal.SIGKILL
    result = run(s, resume=True)
    order, links = fetched(s.db)
    assert 150 <= len(order) <= 152  # the budget counts the pages of both runs (a page or two in flight)
    assert result.stats["focused/pages"] == len(order)
    states = frontier(jobdir)
    # every URL a fetched page links to is fetched, failed or still waiting: none was lost
    assert {key(u) for u in links if u.startswith(HOST)} <= set(states)
    assert not [k for k, state in states.items() if state == 1]  # no lease left after a clean stop


@pytest.mark.parametrize(
    ("name", "signals_to_send"),
    [("sigint", [signal.SIGINT]), ("sigint-twice", [signal.SIGINT, signal.SIGINT]), ("sigterm", [signal.SIGTERM])],
)
def test_signal_then_resume_continues_the_same_crawl(site, reference, name, signals_to_send):
    jobdir = site["tmp"] / f"job-{name}"
    # the database commits every page and the frontier every operation: a forced stop can then lose only the
    # acknowledgement of the page between its commit and its acknowledgement's (with the defaults, a second of
    # commits each: 4 pages fetched again in a loaded CI run)
    s = spec(
        site,
        name,
        strategy="baseline",
        JOBDIR=str(jobdir),
        FOCUSED_REPLAY_CONCURRENCY=1,
        FOCUSED_DB_COMMIT_EVERY=1,
        FOCUSED_FRONTIER_COMMIT_OPS=1,
    )
    code, _ = interrupt(s, when=60, signals_to_send=signals_to_send)
    before, _ = fetched(s.db)
    result = run(s, resume=True)
    order, _ = fetched(s.db)
    assert set(order) == set(reference)
    # the crawl database is continued: its rows come first, in their order, but for the pages fetched again
    # after the resume, whose rows the re-fetch replaced (at its own place in the fetch order, docs/jobs.md)
    moved = result.stats.get("focused/pages_refetched", 0)
    first = order[: len(before) - moved]
    assert first == [u for u in before if u in set(first)]
    if len(signals_to_send) == 1:
        # a graceful stop: the resumed crawl fetches exactly what the uninterrupted one would have
        assert code == 0
        assert order == reference
        assert moved == 0 and result.stats.get("focused/frontier/refetched", 0) == 0
    else:
        # forced: pages committed to the database but not yet acknowledged are fetched again (each counted)
        assert moved <= 2 and result.stats.get("focused/frontier/refetched", 0) <= 2
        assert sorted(order) == sorted(reference)


def test_sigint_twice_keeps_the_apprentice_learning(site):
    jobdir = site["tmp"] / "job-apprentice"
    s = spec(site, "apprentice", max_pages=200, JOBDIR=str(jobdir))
    interrupt(s, when=r"Apprentice v\d+ switched in", signals_to_send=[signal.SIGINT, signal.SIGINT])
    pointer = json.loads(Path(jobdir, "apprentice", "current.json").read_text())
    assert pointer["instances"] > 0
    result = run(s, resume=True)
    log = result.log.read_text()
    match = re.search(r"Resumed the apprentice: (\d+) instances, model v(\d+)", log)
    assert match and int(match.group(1)) >= pointer["instances"]
    assert result.stats["focused/apprentice/n_instances"] > int(match.group(1))  # and it went on learning
    assert not list(Path(jobdir).rglob("*.pickle"))


@pytest.mark.parametrize("trouble", ["garbage-store", "busy-store", "damaged-job-file", "old-pickle"])
def test_a_job_directory_that_cannot_be_resumed_is_one_line_and_exit_1(site, tmp_path, trouble):
    from focused.frontier.sqlite import SQLiteStore

    jobdir = tmp_path / "job"
    jobdir.mkdir()
    holder = None
    if trouble == "garbage-store":
        (jobdir / "frontier.sqlite").write_bytes(os.urandom(4096))
    elif trouble == "busy-store":
        holder = SQLiteStore(jobdir / "frontier.sqlite", encode=json.dumps, decode=json.loads)
    elif trouble == "damaged-job-file":
        (jobdir / "focused-crawl.json").write_text('{"format": "focused.cr')
    else:  # a real pickle: loading it would create the marker
        (jobdir / "apprentice-state.pickle").write_bytes(tripwire_pickle(tmp_path / "unpickled"))
    before = sorted((p.name, p.read_bytes()) for p in jobdir.iterdir() if p.is_file())
    s = spec(site, f"bad-{trouble}", max_pages=5, JOBDIR=str(jobdir), LOG_LEVEL="INFO")
    result = run_crawl(s, timeout=120)
    after = sorted((p.name, p.read_bytes()) for p in jobdir.iterdir() if p.is_file())
    if holder is not None:
        holder.close()
    log = result.log.read_text()
    assert result.returncode == 1, log[-2000:]
    assert "Traceback" not in log
    errors = [line for line in log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, errors
    expected = {"garbage-store": "frontier.sqlite", "busy-store": "in use by another crawl"}
    expected |= {"damaged-job-file": "focused-crawl.json is damaged", "old-pickle": "older focused"}
    assert expected[trouble] in errors[0]
    assert not s.db.exists()
    assert not (tmp_path / "unpickled").exists()  # the old pickle was never loaded
    # nothing overwritten (a busy store's files belong to its holder, whose checkpoint thread may write them)
    ours = "frontier.sqlite" if holder is not None else "frontier.sqlite.lock"
    assert [a for a in after if not a[0].startswith(ours)] == [b for b in before if not b[0].startswith(ours)]


def test_a_resumed_crawl_that_reached_its_budget_stops_at_once(site):
    jobdir = site["tmp"] / "job-done"
    s = spec(site, "done", strategy="baseline", max_pages=20, JOBDIR=str(jobdir))
    run(s)
    again = run(s, resume=True)
    order, _ = fetched(s.db)
    assert 20 <= len(order) <= 22
    assert "Page budget reached" in again.log.read_text()
    assert again.stats.get("downloader/request_count", 0) == 0
