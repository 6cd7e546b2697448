"""Workers of one Redis frontier as real processes: seeds pushed to ``<prefix>:start_urls``, idle workers
that find work soon, and a worker killed with SIGKILL mid-crawl (its leases come back; nothing is lost)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from focused.bench.runner import PROJECT_ROOT, CrawlSpec, scrapy_command, stats_path
from tests.sites import HOST, graph_crawl, graph_web
from tests.test_distributed import PAGES, pages, redis_settings

ENV = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), SCRAPY_SETTINGS_MODULE="focused.settings")


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with graph_web(tmp_path_factory.mktemp("workers"), PAGES) as served:
        yield served


def worker(web, name, seeds=(HOST + "/g/0.html",), **settings) -> CrawlSpec:
    return graph_crawl(web, name, strategy="baseline", seeds=tuple(seeds), **settings)


class Worker:
    """One ``scrapy crawl focused`` process, its log next to its crawl database."""

    def __init__(self, spec: CrawlSpec) -> None:
        self.spec = spec
        self.log = spec.db.with_suffix(".log")
        for path in (spec.db, stats_path(spec)):
            path.unlink(missing_ok=True)
        with self.log.open("w") as fh:
            self.proc = subprocess.Popen(
                scrapy_command(spec), cwd=PROJECT_ROOT, env=ENV, stdout=fh, stderr=subprocess.STDOUT
            )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, what: str, count: int = 1, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while self.text().count(what) < count:
            assert self.proc.poll() is None, self.text()[-3000:]
            assert time.monotonic() < deadline, f"no {what!r} in {self.log}"
            time.sleep(0.02)

    def finish(self, timeout: float = 180) -> dict:
        self.proc.wait(timeout=timeout)
        assert self.proc.returncode == 0, self.text()[-3000:]
        assert "Traceback" not in self.text()
        return json.loads(stats_path(self.spec).read_text())

    def pages(self) -> list[str]:
        return pages(self.spec.db) if Path(self.spec.db).exists() else []


def test_seeds_pushed_to_start_urls_start_an_idle_worker(web, redis_server):
    settings = redis_settings(redis_server, FOCUSED_REDIS_IDLE_SECONDS=5)
    prefix = settings["FOCUSED_REDIS_PREFIX"]
    w = Worker(worker(web, "pushed", seeds=(), **settings))
    w.wait_for("takes its seeds from Redis list " + f"{prefix}:start_urls")
    w.wait_for("staying open", 2)  # idle, polling: nothing pushed yet
    client = redis_server.client()
    client.lpush(f"{prefix}:start_urls", "ftp://not.a.seed/", HOST + "/g/0.html")
    stats = w.finish()
    log = w.text()
    assert "Dropped seed 'ftp://not.a.seed/' from Redis list" in log
    assert stats["focused/seeds/redis"] == 1 and stats["finish_reason"] == "finished"
    fetched = w.pages()
    assert len(fetched) == len(set(fetched)) == PAGES
    assert client.llen(f"{prefix}:start_urls") == 0


def test_seeds_already_in_start_urls_and_as_arguments_merge(web, redis_server):
    settings = redis_settings(redis_server)
    prefix = settings["FOCUSED_REDIS_PREFIX"]
    redis_server.client().rpush(f"{prefix}:start_urls", HOST + "/g/0.html", HOST + "/g/1.html")
    w = Worker(worker(web, "both", seeds=(HOST + "/g/1.html",), **settings))
    stats = w.finish()
    assert stats["focused/seeds/redis"] == 2 and stats["dupefilter/filtered"] >= 1  # /g/1.html pushed twice
    assert len(set(w.pages())) == PAGES


def test_a_worker_without_seeds_or_redis_is_refused(web):
    w = Worker(worker(web, "noseeds", seeds=()))
    w.proc.wait(timeout=120)
    assert w.proc.returncode != 0 and "no seeds" in w.text()


def test_two_workers_started_together_without_delays_both_fetch(web, redis_server):
    settings = redis_settings(redis_server)
    workers = [Worker(worker(web, f"together{i}", **settings)) for i in (1, 2)]
    stats = [w.finish() for w in workers]
    fetched = [w.pages() for w in workers]
    assert all(fetched), [len(f) for f in fetched]  # the idle one polled and found the other's links
    union = fetched[0] + fetched[1]
    assert len(set(union)) == PAGES
    assert len(union) - PAGES <= sum(st.get("focused/frontier/refetched", 0) for st in stats)


def test_a_worker_killed_mid_crawl_loses_nothing(web, redis_server):
    settings = redis_settings(redis_server, FOCUSED_REDIS_LEASE_SECONDS=3, DOWNLOAD_DELAY=0.05, DOWNLOAD_DELAY_JITTER=0)
    prefix = settings["FOCUSED_REDIS_PREFIX"]
    victim = Worker(worker(web, "victim", **settings))
    victim.wait_for("Crawled (200)", 5)
    survivor = Worker(worker(web, "survivor", **settings))
    survivor.wait_for("Crawled (200)", 5)
    victim.wait_for("Crawled (200)", 40)
    assert survivor.proc.poll() is None, survivor.text()[-3000:]  # open while the victim holds leases
    victim.proc.kill()  # kill -9: its leases stay in Redis until they expire
    victim.proc.wait(timeout=30)
    stats = survivor.finish()
    assert stats["finish_reason"] == "finished"
    assert stats.get("focused/frontier/requeued", 0) >= 1  # the victim's leases came back...
    assert stats.get("focused/frontier/refetched", 0) >= 1  # ...and the survivor fetched them
    union = victim.pages() + survivor.pages()
    assert len(set(union)) == PAGES  # no URL lost
    assert len(union) - PAGES <= stats["focused/frontier/refetched"]
    client = redis_server.client()
    assert client.zcard(f"{prefix}:frontier:waiting") == client.zcard(f"{prefix}:frontier:leases") == 0


def test_workers_share_one_page_budget(web, redis_server):
    # one worker alone needs 100 x 0.1 s for the budget: the second, started once the first crawls, joins
    # well before that even on a loaded machine (with 0.02 s the first took all 100 while the second started)
    settings = redis_settings(redis_server, FOCUSED_MAX_PAGES=100, DOWNLOAD_DELAY=0.1, DOWNLOAD_DELAY_JITTER=0)
    first = Worker(worker(web, "budget1", **settings))
    first.wait_for("Crawled (200)", 2)
    workers = [first, Worker(worker(web, "budget2", **settings))]
    stats = [w.finish() for w in workers]
    fetched = [w.pages() for w in workers]
    assert all(fetched), [len(f) for f in fetched]
    union = fetched[0] + fetched[1]
    assert len(union) == len(set(union))  # none fetched twice
    # together they store the budget of one crawl exactly; a page or two on the wire per worker when it
    # closed is fetched, not stored
    assert len(union) == 100
    late = sum(st.get("focused/budget/dropped_pages", 0) for st in stats)
    assert late <= 2 * 2
    assert {st["finish_reason"] for st in stats} == {"focused_max_pages"}
