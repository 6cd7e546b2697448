"""Crawler processes sharing one frontier in Redis: the scheduler on Redis, then real ``scrapy crawl`` workers.

The crawls fetch the generated 240-page web of tests/test_kill_resume.py through
its replay proxy; each worker writes its own crawl database, and the union of
their pages is what one process fetches.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import subprocess
import time

import pytest
from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider
from scrapy.settings import Settings

from focused.bench.runner import PROJECT_ROOT, run_crawl, scrapy_command, stats_path
from tests.redis_server import RedisServer, free_port
from tests.sites import graph_crawl, graph_web
from tests.test_scheduler import drain, make_scheduler

PAGES = 240
_prefixes = itertools.count()


def redis_settings(server, prefix=None, **settings):
    prefix = prefix or f"dist{os.getpid()}-{next(_prefixes)}"
    return {"REDIS_URL": server.url, "FOCUSED_REDIS_PREFIX": prefix, **settings}


# -- the scheduler on a shared frontier ---------------------------------------------------


def test_auto_store_is_redis_when_redis_url_is_set(redis_server):
    crawler, s = make_scheduler(**redis_settings(redis_server))
    assert s.store_name == "redis" and crawler.stats.get_value("focused/frontier/store") == "redis"
    for url, prio in [("http://a.test/", 5), ("http://b.test/", 9), ("http://c.test/", 1)]:
        assert s.enqueue_request(Request(url, priority=prio))
    assert drain(s) == ["http://b.test/", "http://a.test/", "http://c.test/"]
    s.close("finished")


def test_two_schedulers_share_the_frontier_and_the_seen_set(redis_server):
    settings = redis_settings(redis_server)
    _, a = make_scheduler(**settings)
    crawler_b, b = make_scheduler(**settings)
    dropped = []
    crawler_b.signals.connect(lambda request: dropped.append(request.url), signal=signals.request_dropped, weak=False)
    assert a.enqueue_request(Request("http://x.test/1", priority=1))
    assert len(a) == 1  # a's next call pushed it
    # b's requests go to Redis together at b's next call: the merge is counted and signalled then
    assert b.enqueue_request(Request("http://x.test/1", priority=5))
    assert b.enqueue_request(Request("http://x.test/2"))
    assert len(b) == 2 and dropped == ["http://x.test/1"]  # merged, not added twice
    assert crawler_b.stats.get_value("focused/frontier/merged") == 1
    assert crawler_b.stats.get_value("scheduler/enqueued") == 1
    # retries and the like (dont_filter) of two workers never collide
    assert a.enqueue_request(Request("http://x.test/3", dont_filter=True))
    assert b.enqueue_request(Request("http://x.test/3", dont_filter=True))
    assert len(a) == 3 and len(b) == 4 and len(a) == 4  # each pushed its own at its call
    first = b.next_request()
    assert first is not None and first.url == "http://x.test/1" and first.priority == 5
    assert sorted(drain(a)) == ["http://x.test/2", "http://x.test/3", "http://x.test/3"]
    a.close("finished")
    b.close("finished")


def test_workers_popping_in_turn_follow_one_global_best_first_order(redis_server):
    import random

    settings = redis_settings(redis_server)
    _, a = make_scheduler(**settings)
    _, b = make_scheduler(**settings)
    _, single = make_scheduler()  # one process, in memory
    rng = random.Random(7)
    priorities = [rng.randrange(0, 5) for _ in range(40)]  # many ties: FIFO among equals
    for i, p in enumerate(priorities):
        for s in ((a, b)[i % 2], single):  # the two workers discover the URLs in turn
            s.enqueue_request(Request(f"http://x.test/{i}", priority=p))
            len(s)  # a worker's next call sends what it found: FIFO ties count from then
    shared = [(a, b)[i % 2].next_request().url for i in range(len(priorities))]
    assert shared == drain(single)
    a.close("finished")
    b.close("finished")


def test_a_rescore_by_one_worker_changes_the_pop_order_of_every_worker(redis_server):
    from focused import signals
    from focused.core.scheduler import PAYLOAD_META_KEY

    settings = redis_settings(redis_server)
    crawler_a, a = make_scheduler(**settings)
    _, b = make_scheduler(**settings)
    for i in range(6):
        a.enqueue_request(Request(f"http://x.test/{i}", priority=i, meta={PAYLOAD_META_KEY: {"good": i % 2 == 0}}))
    # before: b pops in a's priorities (5, 4, ...); after a's re-score the even ones come first, for b too
    results = crawler_a.signals.send_catch_log(
        signals.rescore_frontier,
        scorer=lambda payloads: [100 + i if p[0]["good"] else 0 for i, p in enumerate(payloads)],
    )
    assert [r for _, r in results] == [6]
    popped = [b.next_request().url for _ in range(3)]
    assert sorted(popped) == ["http://x.test/0", "http://x.test/2", "http://x.test/4"]
    assert sorted(drain(a)) == ["http://x.test/1", "http://x.test/3", "http://x.test/5"]
    a.close("finished")
    b.close("finished")


def test_an_idle_worker_stays_open_while_another_holds_leases(redis_server):
    settings = redis_settings(redis_server)
    _, a = make_scheduler(**settings)
    _, b = make_scheduler(**settings)
    a.enqueue_request(Request("http://x.test/"))
    assert a.next_request() is not None
    with pytest.raises(DontCloseSpider):  # a's page may bring new URLs
        b._on_idle()
    a.close("finished")  # driven by hand, without an engine: a's request counts as handled
    b._on_idle()  # nothing waiting, nothing in flight: the crawl is over
    b.close("finished")


def test_an_idle_worker_whose_lease_expired_still_sees_another_s(redis_server):
    """b's lease expires (b blocked or starved that long), a fetches the page again and acknowledges it, then
    leases another. b, idle before it acknowledged its stale lease, must stay open for a's. It used to subtract
    every lease it had taken (1 in flight - 1 = 0 at other workers) and close, and a, killed later, left its
    lease to nobody (tests/test_distributed_workers.py failed so under load)."""
    settings = redis_settings(redis_server)
    leases = f"{settings['FOCUSED_REDIS_PREFIX']}:frontier:leases"
    client = redis_server.client()
    _, a = make_scheduler(**settings)
    _, b = make_scheduler(**settings)
    a.enqueue_request(Request("http://x.test/p", priority=2))
    a.enqueue_request(Request("http://x.test/q", priority=1))
    assert len(a) == 2  # pushed
    assert b.next_request().url.endswith("/p")
    [key] = client.zrange(leases, 0, -1)
    client.zadd(leases, {key: 0})  # b's lease on p expired
    assert a.next_request().url.endswith("/p")  # the pop put p back and took it: refetched
    assert a.next_request().url.endswith("/q")  # p acknowledged with this pop (no engine: handled)
    assert client.zrange(leases, 0, -1) != [key] and client.zcard(leases) == 1  # a's lease on q only
    with pytest.raises(DontCloseSpider):  # q may bring new URLs
        b._on_idle()
    a.close("finished")
    b._on_idle()  # nothing waiting, nothing in flight at a: the crawl is over
    b.close("finished")


def test_a_worker_whose_redis_is_gone_stops_with_one_error_line(tmp_path, caplog):
    server = RedisServer(tmp_path / "redis").start()
    crawler, s = make_scheduler(**redis_settings(server, FOCUSED_REDIS_RETRY_SECONDS=0.2))
    s.enqueue_request(Request("http://x.test/"))
    server.stop()
    assert s.next_request() is None and not s.has_pending_requests() and len(s) == 0
    assert s.enqueue_request(Request("http://y.test/")) is False
    s.close("frontier_unavailable")
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "Redis unreachable" in errors[0].getMessage()
    assert "Redis unreachable" in crawler.stats.get_value("focused/frontier/error")


def test_a_worker_that_cannot_use_the_frontier_is_refused_before_it_starts(redis_server, tmp_path):
    from focused.errors import ConfigError
    from focused.frontier.settings import check_jobdir

    settings = redis_settings(redis_server)
    _, a = make_scheduler(**settings)
    with pytest.raises(ConfigError, match=r"aggregation is .*max.*needs .*first"):
        check_jobdir(Settings({**settings, "FOCUSED_PARENT_AGGREGATION": "first"}))
    a.close("finished")
    gone = {"REDIS_URL": f"redis://127.0.0.1:{free_port()}/0", "FOCUSED_REDIS_RETRY_SECONDS": 0}
    with pytest.raises(ConfigError, match="Redis unreachable"):
        check_jobdir(Settings(gone))


def test_redis_store_needs_redis_url():
    from focused.errors import ConfigError

    with pytest.raises(ConfigError, match="REDIS_URL"):
        make_scheduler(FOCUSED_FRONTIER_STORE="redis")


# -- real crawls -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with graph_web(tmp_path_factory.mktemp("dist"), PAGES) as web:
        yield web


def spec(site, name, strategy="baseline", **settings):
    return graph_crawl(site, name, strategy=strategy, **{"FOCUSED_APPRENTICE_BATCH": 20, **settings})


def pages(db):
    conn = sqlite3.connect(db)
    try:
        return [url for (url,) in conn.execute("SELECT url FROM pages ORDER BY fetch_order")]
    finally:
        conn.close()


def test_one_worker_on_redis_fetches_every_page_once(site, redis_server):
    settings = redis_settings(redis_server, FOCUSED_APPRENTICE_MIN_INSTANCES=30)
    result = run_crawl(spec(site, "one", strategy="apprentice", **settings), timeout=180)
    log = result.log.read_text()
    assert result.returncode == 0, log[-3000:]
    fetched = pages(result.spec.db)
    assert len(fetched) == len(set(fetched)) == PAGES
    stats = result.stats
    assert stats["focused/frontier/store"] == "redis" and stats["finish_reason"] == "finished"
    assert stats.get("focused/frontier/rescored", 0) > 0  # the apprentice re-scored the frontier in Redis
    assert stats.get("focused/frontier/refetched", 0) == 0


WORKER_CAP = 150  # responses per worker (the site has 240 pages and 24 missing ones): neither can do it all


def run_workers(specs, stagger=None):
    """Run one ``scrapy crawl`` per spec on the shared frontier, all at once (or each after the one before)."""
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), SCRAPY_SETTINGS_MODULE="focused.settings")
    procs = []
    for s in specs:
        s.db.unlink(missing_ok=True)
        log = s.db.with_suffix(".log").open("w")
        procs.append((subprocess.Popen(scrapy_command(s), cwd=PROJECT_ROOT, env=env, stdout=log, stderr=log), log))
        if stagger:
            procs[-1][0].wait(timeout=180)
    for proc, log in procs:
        proc.wait(timeout=180)
        log.close()
    return procs


@pytest.mark.parametrize("one_after_the_other", [False, True], ids=["together", "in-turn"])
def test_two_workers_on_one_redis_fetch_the_site_together(site, redis_server, one_after_the_other):
    # each worker stops after WORKER_CAP responses, so that both must take part however the
    # start-up times fall (a worker alone would fetch the whole site in about a second)
    settings = redis_settings(redis_server, CLOSESPIDER_PAGECOUNT=WORKER_CAP)
    specs = [spec(site, f"worker{i}", **settings) for i in (1, 2)]
    procs = run_workers(specs, stagger=one_after_the_other)
    logs = [s.db.with_suffix(".log").read_text() for s in specs]
    for (proc, _), log in zip(procs, logs, strict=True):
        assert proc.returncode == 0, log[-3000:]
    fetched = [pages(s.db) for s in specs]
    assert all(fetched)  # both workers took part
    union = fetched[0] + fetched[1]
    assert len(set(union)) == PAGES  # together: every page
    stats = [json.loads(stats_path(s).read_text()) for s in specs]
    refetched = sum(st.get("focused/frontier/refetched", 0) for st in stats)
    assert len(union) - PAGES <= refetched  # no page twice, except a counted re-fetch
    reasons = [st["finish_reason"] for st in stats]
    assert set(reasons) <= {"finished", "closespider_pagecount"} and "finished" in reasons, reasons
    if one_after_the_other:  # the second took over the first one's waiting URLs
        assert reasons == ["closespider_pagecount", "finished"]


def crawl_with(site, name, settings, action, after_pages=30):
    """Run a crawl; once it has fetched ``after_pages`` pages, call ``action()``; returns (exit code, log)."""
    s = spec(site, name, **settings, LOG_LEVEL="DEBUG")
    s.db.unlink(missing_ok=True)
    log = s.db.with_suffix(".log")
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), SCRAPY_SETTINGS_MODULE="focused.settings")
    with log.open("w") as fh:
        proc = subprocess.Popen(scrapy_command(s), cwd=PROJECT_ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while proc.poll() is None and log.read_text().count("Crawled (200)") < after_pages:
            assert time.monotonic() < deadline, "the crawl did not get going"
            time.sleep(0.02)
        assert proc.poll() is None, log.read_text()[-3000:]
        action()
        proc.wait(timeout=180)
    return proc.returncode, log.read_text(), s


def test_redis_restarted_mid_crawl_the_crawl_goes_on_and_loses_nothing(site, tmp_path):
    server = RedisServer(tmp_path / "redis", persistent=True).start()

    def restart():
        server.stop()
        time.sleep(0.5)
        server.start()

    try:
        code, log, s = crawl_with(site, "restarted", redis_settings(server), restart)
    finally:
        server.stop()
    assert code == 0, log[-3000:]
    assert "unreachable" in log and "Redis is back" in log and "Traceback" not in log
    fetched = pages(s.db)
    assert len(fetched) == len(set(fetched)) == PAGES


def test_redis_gone_mid_crawl_stops_the_worker_with_one_error_line(site, tmp_path):
    server = RedisServer(tmp_path / "redis").start()
    code, log, _ = crawl_with(site, "gone", redis_settings(server, FOCUSED_REDIS_RETRY_SECONDS=1), server.stop)
    assert code == 1, log[-3000:]
    errors = [line for line in log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1 and "Redis unreachable" in errors[0], errors
    assert "Traceback" not in log and "(frontier_unavailable)" in log


def test_two_apprentice_workers_learn_together(site, redis_server):
    """Shared learning: one trainer per batch of both workers' pages, the same model versions everywhere."""
    import re

    settings = redis_settings(redis_server, FOCUSED_APPRENTICE_MIN_INSTANCES=30, FOCUSED_APPRENTICE_POLL_SECONDS=0.2)
    # slowed down (~12 s) so that the second worker, idle until the seed's links arrive, takes part
    slow = {"DOWNLOAD_DELAY": 0.05, "DOWNLOAD_DELAY_JITTER": 0}
    specs = [spec(site, f"learner{i}", strategy="apprentice", **settings, **slow) for i in (1, 2)]
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), SCRAPY_SETTINGS_MODULE="focused.settings")
    procs = []
    for s in specs:
        s.db.unlink(missing_ok=True)
        log = s.db.with_suffix(".log").open("w")
        procs.append((subprocess.Popen(scrapy_command(s), cwd=PROJECT_ROOT, env=env, stdout=log, stderr=log), log))
    for proc, log in procs:
        proc.wait(timeout=180)
        log.close()
    logs = [s.db.with_suffix(".log").read_text() for s in specs]
    for (proc, _), log in zip(procs, logs, strict=True):
        assert proc.returncode == 0, log[-3000:]
        assert "Traceback" not in log and " ERROR: " not in log, log[-3000:]
    fetched = [pages(s.db) for s in specs]
    assert all(fetched)
    union = fetched[0] + fetched[1]
    assert len(union) == len(set(union)) == PAGES  # every page once
    # one training per batch of 20 pages of both workers, whichever worker ran it
    batches = [int(b) for log in logs for b in re.findall(r"batch (\d+) of all workers trained here", log)]
    assert sorted(batches) == list(range(1, PAGES // 20 + 1)), batches
    published = [int(v) for log in logs for v in re.findall(r"trained here .*: published v(\d+)", log)]
    assert published and sorted(published) == list(range(1, len(published) + 1))  # each version once
    installed = [{int(v) for v in re.findall(r"Shared apprentice v(\d+) installed from Redis", log)} for log in logs]
    trained = [{int(v) for v in re.findall(r"published v(\d+)", log)} for log in logs]
    for i in (0, 1):  # each worker serves the versions published, its own or the other's
        assert installed[i] | trained[i] and installed[i] <= set(published)
        assert not installed[i] & trained[i]
    assert installed[0] | installed[1]  # a model trained by one worker reached the other
    sizes = {int(v): int(n) for log in logs for n, v in re.findall(r"(\d+) in all\): published v(\d+)", log)}
    for log in logs:  # the same version is the same model everywhere
        for v, n in re.findall(r"Shared apprentice v(\d+) installed from Redis after \d+ pages: (\d+) instances", log):
            assert sizes[int(v)] == int(n)
    stats = [json.loads(stats_path(s).read_text()) for s in specs]
    assert sum(st.get("focused/apprentice/batches_trained", 0) for st in stats) == PAGES // 20
    assert sum(st.get("focused/frontier/rescored", 0) > 0 for st in stats) >= 1
    client = redis_server.client()
    prefix = settings["FOCUSED_REDIS_PREFIX"]
    assert int(client.get(f"{prefix}:apprentice:version")) == max(published)
    assert int(client.get(f"{prefix}:apprentice:pages")) == PAGES


def test_a_worker_refuses_a_bad_model_in_redis_in_one_line_and_keeps_crawling(site, redis_server):
    settings = redis_settings(redis_server, FOCUSED_APPRENTICE_MIN_INSTANCES=30)
    prefix = settings["FOCUSED_REDIS_PREFIX"]
    client = redis_server.client()
    client.set(f"{prefix}:apprentice:model", b"PK\x03\x04 not really a model")  # a zip's magic, then garbage
    client.set(f"{prefix}:apprentice:version", 1)
    result = run_crawl(spec(site, "refuses", strategy="apprentice", **settings), timeout=180)
    log = result.log.read_text()
    assert result.returncode == 0, log[-3000:]
    errors = [line for line in log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, errors
    assert "refused the model in Redis, keeping the critic's scores" in errors[0]
    assert f"Redis key {prefix}:apprentice:model (v1) is corrupt" in errors[0]
    assert "Traceback" not in log
    assert "published v2" in log  # the crawl's own models come next
    assert len(set(pages(result.spec.db))) == PAGES


def test_the_trainer_killed_another_worker_takes_over(site, redis_server):
    import re

    settings = redis_settings(
        redis_server, FOCUSED_APPRENTICE_MIN_INSTANCES=30, FOCUSED_APPRENTICE_LOCK_SECONDS=1,
        FOCUSED_REDIS_LEASE_SECONDS=2, DOWNLOAD_DELAY=0.05, DOWNLOAD_DELAY_JITTER=0,
    )  # fmt: skip
    specs = [spec(site, f"takeover{i}", strategy="apprentice", **settings) for i in (1, 2)]
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), SCRAPY_SETTINGS_MODULE="focused.settings")
    logs = [s.db.with_suffix(".log") for s in specs]
    procs = []

    def wait_for(i, what, count=1):
        deadline = time.monotonic() + 60
        while logs[i].read_text().count(what) < count:
            assert procs[i].poll() is None and time.monotonic() < deadline, logs[i].read_text()[-3000:]
            time.sleep(0.02)

    for i, s in enumerate(specs):
        s.db.unlink(missing_ok=True)
        with logs[i].open("w") as fh:
            procs.append(subprocess.Popen(scrapy_command(s), cwd=PROJECT_ROOT, env=env, stdout=fh, stderr=fh))
        if i == 0:
            wait_for(0, "this worker trains the apprentice")
    wait_for(1, "Crawled (200)", 10)
    wait_for(0, "of all workers trained here")
    procs[0].kill()  # kill -9 the trainer
    procs[0].wait(timeout=30)
    procs[1].wait(timeout=180)
    text = [log.read_text() for log in logs]
    assert procs[1].returncode == 0, text[1][-3000:]
    assert "this worker trains the apprentice" in text[1] and "Traceback" not in text[1]
    trained = [[int(b) for b in re.findall(r"batch (\d+) of all workers trained here", t)] for t in text]
    assert trained[0] and trained[1]
    client = redis_server.client()
    prefix = settings["FOCUSED_REDIS_PREFIX"]
    batches, judged = (int(client.get(f"{prefix}:apprentice:{k}")) for k in ("batches", "pages"))
    assert batches == judged // 20  # every batch trained once, by one worker or the other
    both = trained[0] + trained[1]
    assert len(both) == len(set(both)) and set(both) <= set(range(1, batches + 1))
    assert len(both) >= batches - 1  # the killed worker may have published one it did not live to log
    assert len(set(pages(specs[0].db)) | set(pages(specs[1].db))) == PAGES  # nothing lost
