"""A re-score off the reactor thread (FocusedScheduler.rescore_background) on every frontier store: the
requests pushed while it runs are not lost and keep the priorities they would have after a re-score done at
once; with strict best-first nothing is handed out meanwhile."""

from __future__ import annotations

import functools
import itertools
import os
import threading

import pytest
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred, succeed

from focused import signals
from focused.core import rescoring as rescoring_module
from focused.core.scheduler import PAYLOAD_META_KEY, FocusedScheduler
from tests.killed import run_killed

_prefixes = itertools.count()


def store_settings(request, tmp_path):
    """The crawl settings of the frontier store ``request.param``."""
    if request.param == "sqlite":
        return {"JOBDIR": str(tmp_path / "job")}
    if request.param == "redis":
        server = request.getfixturevalue("redis_server")
        return {"REDIS_URL": server.url, "FOCUSED_REDIS_PREFIX": f"bg{os.getpid()}-{next(_prefixes)}"}
    return {}


@pytest.fixture(params=["memory", "sqlite", "redis"])
def settings(request, tmp_path):
    return store_settings(request, tmp_path)


@pytest.fixture(params=["sqlite", "redis"])
def stored_settings(request, tmp_path):
    """The stores that keep payloads as bytes outside the process, where a test can damage them (the memory
    store keeps the objects it was given)."""
    return store_settings(request, tmp_path)


@pytest.fixture
def threads(monkeypatch):
    """deferToThread that runs the work in a real thread when the test says so (``threads.run()``)."""

    class Threads:
        def __init__(self):
            self.pending: list[tuple[object, Deferred]] = []

        def defer(self, fn, *args, **kwargs):  # deferToThread's signature
            d: Deferred = Deferred()
            self.pending.append((functools.partial(fn, *args, **kwargs), d))
            return d

        def run(self):
            while self.pending:
                fn, d = self.pending.pop(0)
                out: dict = {}
                worker = threading.Thread(target=lambda fn=fn, out=out: out.setdefault("result", fn()))
                worker.start()
                worker.join()
                d.callback(out["result"])

    threads = Threads()
    monkeypatch.setattr(rescoring_module, "deferToThread", threads.defer)
    monkeypatch.setattr(rescoring_module, "next_turn", lambda: succeed(None))
    return threads


def make_scheduler(settings, **extra):
    crawler = get_crawler(Spider, settings_dict={**settings, **extra})
    crawler.spider = crawler._create_spider("s")
    scheduler = FocusedScheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    return crawler, scheduler


def request(name, priority, good):
    return Request(f"http://x.test/{name}", priority=priority, meta={PAYLOAD_META_KEY: {"good": good}})


def scorer(payloads):
    """100 for a URL with a good parent, else 0: the re-score's priorities."""
    return [100 if any(p["good"] for p in parents) else 0 for parents in payloads]


def drain(s):
    out = []
    while (r := s.next_request()) is not None:
        out.append((r.url.rsplit("/", 1)[1], r.priority))
    return out


@pytest.mark.parametrize("strict", [True, False])
def test_pushes_during_a_background_rescore_are_kept_with_their_own_priorities(settings, threads, strict):
    crawler, s = make_scheduler(settings, FOCUSED_MAX_UNSCORED_PAGES=0 if strict else 16)
    for name, priority, good in [("a", 1, True), ("b", 2, False), ("c", 3, True), ("d", 9, False), ("e", 5, False)]:
        s.enqueue_request(request(name, priority, good))
    started: list[Deferred] = []
    results = crawler.signals.send_catch_log(signals.rescore_frontier, scorer=scorer, background=started.append)
    assert [r for _, r in results] == [None]
    [done] = started
    assert not done.called
    if not strict:
        popped = s.next_request()  # d leaves meanwhile: the re-score does not put it back
        assert popped is not None and popped.url.endswith("/d")
    # while it runs: a new URL, a new parent of a waiting one (its merged priority, max(5, 7), must stand)
    s.enqueue_request(request("f", 50, False))
    s.enqueue_request(request("e", 7, True))
    if strict:
        assert s.next_request() is None  # nothing leaves before the re-scored priorities are in
        assert crawler.stats.get_value("focused/frontier/held_back_rescoring") == 1
    threads.run()
    changed = []
    done.addCallback(changed.append)
    # a 1->100, c 3->100, b 2->0, d 9->0 unless popped; e merged meanwhile keeps its merge (on Redis this worker
    # sends its pushes with its next pop: the merge comes after the re-score, which changed e too)
    expected = 4 if strict else 3
    assert changed == [expected + ("REDIS_URL" in settings)]
    order = drain(s)
    assert order == [("a", 100), ("c", 100), ("f", 50), ("e", 7), ("b", 0)] + ([("d", 0)] if strict else [])
    assert crawler.stats.get_value("focused/frontier/rescored") == 5
    s.close("finished")


def test_a_background_rescore_is_the_same_as_one_at_once(settings, threads):
    """The same frontier re-scored at once and in the background, then the same pushes: the same order."""
    orders = []
    for background in (False, True):
        crawler, s = make_scheduler(settings)
        for i in range(30):
            s.enqueue_request(request(f"u{i}", i, i % 3 == 0))
        if background:
            crawler.signals.send_catch_log(signals.rescore_frontier, scorer=scorer, background=lambda d: None)
        else:
            s.rescore(scorer)
        for i in range(25, 40):  # found again (merged) or new, after the re-score at once / while it runs
            s.enqueue_request(request(f"u{i}", 60 - i, i % 2 == 0))
        threads.run()
        orders.append(drain(s))
        s.close("finished")
        if "REDIS_URL" in settings:  # a new frontier for the second scheduler
            settings = {**settings, "FOCUSED_REDIS_PREFIX": settings["FOCUSED_REDIS_PREFIX"] + "-bg"}
        if "JOBDIR" in settings:
            settings = {**settings, "JOBDIR": settings["JOBDIR"] + "-bg"}
    assert orders[0] == orders[1]
    assert len(orders[0]) == 40


def test_a_rescore_at_once_runs_the_stores_background_job_inline(settings, monkeypatch):
    """One path: the re-score at once is the store's job (``rescore_start``), read, applied and closed here."""
    _, s = make_scheduler(settings)
    for name, priority, good in [("a", 1, True), ("b", 2, False), ("c", 3, True)]:
        s.enqueue_request(request(name, priority, good))
    assert not hasattr(s.store, "rescore")  # no second path in the store
    started, closed = [], []
    start = s.store.rescore_start

    def spied_start():
        job = start()
        started.append(job)
        close = job.close
        monkeypatch.setattr(job, "close", lambda: (closed.append(job), close()))
        return job

    monkeypatch.setattr(s.store, "rescore_start", spied_start)
    assert s.rescore(scorer) == 3  # a 1->100, c 3->100, b 2->0
    assert len(started) == 1 and closed == started
    assert drain(s) == [("a", 100), ("c", 100), ("b", 0)]
    s.close("finished")


def test_rescores_apply_in_the_order_asked(settings, threads):
    _, s = make_scheduler(settings)
    s.enqueue_request(request("a", 1, True))
    s.enqueue_request(request("b", 2, False))
    first = s.rescore_background(scorer)
    second = s.rescore_background(lambda payloads: [5] * len(payloads))
    threads.run()
    threads.run()  # the second's thread starts once the first is applied
    assert first.called and second.called
    assert drain(s) == [("a", 5), ("b", 5)]
    s.close("finished")


def test_a_scheduler_closed_during_a_background_rescore_drops_it(tmp_path, threads):
    _, s = make_scheduler({"JOBDIR": str(tmp_path / "job")})
    s.enqueue_request(request("a", 1, True))
    done = s.rescore_background(scorer)
    s.close("shutdown")
    threads.run()
    assert done.called
    _, again = make_scheduler({"JOBDIR": str(tmp_path / "job")})
    assert drain(again) == [("a", 1)]  # still waiting, with the priority it had
    again.close("finished")


def test_a_background_rescore_counts_damaged_payloads_and_keeps_their_priority(stored_settings, threads):
    settings = stored_settings
    crawler, s = make_scheduler(settings)
    s.enqueue_request(request("a", 1, True))
    s.enqueue_request(request("b", 2, True))
    assert len(s) == 2  # in the store
    key = s._fingerprint(Request("http://x.test/b")).hex()
    truncated = b"\x09\x00\x00\x00J1"  # a frame that says 9 bytes and holds 2
    if "JOBDIR" in settings:
        s.store.conn.execute(
            "UPDATE payloads SET data = ? WHERE url = (SELECT id FROM urls WHERE key = ?)", (truncated, key)
        )
    else:
        s.store.client.hset(s.store.k["payloads"], key, truncated)
    done = s.rescore_background(scorer)
    threads.run()
    assert done.called
    assert crawler.stats.get_value("focused/rescore/bad_payloads") == 1
    assert drain(s) == [("a", 100), ("b", 2)]
    s.close("finished")


KILLED_DURING_RESCORE = """
import json, os, sys, threading
from focused.frontier.sqlite import SQLiteStore
from focused.frontier.store import Push, frame
s = SQLiteStore(sys.argv[1], encode=json.dumps, decode=json.loads, commit_ops=5, commit_seconds=3600)
s.push_many([Push(f"k{i}", i, i, b"p") for i in range(20)])
job = s.rescore_start()  # commits the 20
parts = []
reader = threading.Thread(target=lambda: parts.extend(job.read()))
reader.start()
s.push_many([Push(f"n{i}", i, i, b"p") for i in range(12)])  # pushed while the thread reads: commits twice
s.push_many([Push("k3", 50, 50, b"q")])  # a new parent of a waiting URL
reader.join()
ids, blobs = parts[0]
job.apply(ids[:10], [1000] * 10)  # half the new priorities written, in the open transaction
"""


def test_a_kill_9_during_a_background_rescore_of_sqlite_loses_nothing(tmp_path):
    import json

    from focused.frontier.sqlite import SQLiteStore

    path = tmp_path / "f.sqlite"
    run_killed(KILLED_DURING_RESCORE, path)

    s = SQLiteStore(path, encode=json.dumps, decode=json.loads)
    popped = []
    while entry := s.pop_many(1):
        popped.append((entry[0].key, entry[0].priority))
    # every URL, those pushed while the thread read too; the half applied (committed by the apply's batch)
    # moved k0..k9 but k3, whose merge (50) stands
    assert sorted(key for key, _ in popped) == sorted([f"k{i}" for i in range(20)] + [f"n{i}" for i in range(12)])
    assert popped[:10] == [(f"k{i}", 1000) for i in (0, 1, 2, 4, 5, 6, 7, 8, 9)] + [("k3", 50)]
    s.close()
