"""The page budget is a promise: ``max_pages=N`` stores exactly N pages, and fetches N plus the responses
that store no page (robots.txt, HTTP errors), on the live-web profile (politeness delays) as on the replay
profile; the requests queued in the downloader when the budget closes are not fetched but go back to the
frontier."""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from dataclasses import replace
from typing import Any

import pytest

from focused.bench.runner import PROJECT_ROOT, CrawlSpec, run_crawl, scrapy_command, stats_path
from focused.crawldb import iter_pages
from tests.local_server import HTML, LocalServer, direct_crawl
from tests.sites import SPORT, words

#: Pages of the test site; each links to every other and to a missing page.
PAGES = 24


def site() -> dict[str, tuple[int, list[tuple[str, str]], bytes]]:
    rng = random.Random(7)
    pages: dict[str, tuple[int, list[tuple[str, str]], bytes]] = {}
    for i in range(PAGES):
        links = "".join(f'<a href="/p{j}.html">match {j}</a> ' for j in range(PAGES) if j != i)
        links += f'<a href="/missing{i}.html">gone</a>'
        text = words(SPORT, 120, rng)  # no two pages alike (near-duplicates would feed no links)
        body = f"<html><head><title>Match {i}</title></head><body><p>{text}</p>{links}</body></html>"
        pages["/" if i == 0 else f"/p{i}.html"] = (200, HTML, body.encode())
    return pages


@pytest.fixture(scope="module")
def web():
    with LocalServer(site()) as served:
        yield served


def stored(spec: CrawlSpec) -> list[str]:
    return [page.url for page in iter_pages(spec.db)]


def fetched_nothing_more(stats: dict[str, Any], n: int) -> None:
    """The stated bound: N pages plus the responses that stored no page (robots.txt, HTTP errors)."""
    robots = stats.get("robotstxt/response_count", 0)
    errors = stats.get("httperror/response_ignored_count", 0)
    assert stats["downloader/response_count"] <= n + robots + errors, stats
    assert robots <= 1


@pytest.mark.parametrize(
    ("profile", "n"),
    [("", 3), ("", 1), ("replay", 5)],
    ids=["live-3", "live-1", "replay-5"],
)
def test_a_crawl_stores_exactly_its_budget(web, tmp_path, profile, n):
    """The live-web profile (DOWNLOAD_DELAY, AUTOTHROTTLE, 16 requests in the downloader) used to store 16
    pages of a budget of 3: the requests queued behind the delay were all fetched after the budget."""
    spec = replace(direct_crawl(web, tmp_path, f"budget-{profile or 'live'}-{n}", FOCUSED_PROFILE=profile), max_pages=n)
    before = len(web.hits)
    result = run_crawl(spec, timeout=300)
    log = result.log.read_text()
    assert result.returncode == 0, log[-3000:]
    assert result.stats["finish_reason"] == "focused_max_pages"
    pages = stored(spec)
    assert len(pages) == len(set(pages)) == n
    assert result.stats["focused/pages"] == result.stats["item_scraped_count"] == n
    fetched_nothing_more(result.stats, n)
    hits = [h for h in web.hits[before:] if h != "/robots.txt"]
    assert len(hits) <= n + result.stats.get("httperror/response_ignored_count", 0)
    assert "Traceback" not in log


def test_a_resumed_crawl_with_a_larger_budget_stores_exactly_the_new_one(web, tmp_path):
    jobdir = tmp_path / "job"
    spec = replace(direct_crawl(web, tmp_path, "resumed", FOCUSED_PROFILE="replay", JOBDIR=str(jobdir)), max_pages=4)
    first = run_crawl(spec, timeout=300)
    assert first.returncode == 0 and len(stored(spec)) == 4
    again = run_crawl(spec, timeout=300, resume=True)  # the same budget: nothing more to fetch
    assert again.returncode == 0 and len(stored(spec)) == 4
    assert "Traceback" not in again.log.read_text()  # its seed, yielded as it closed, is not scheduled
    assert again.stats.get("downloader/response_count", 0) == 0
    more = run_crawl(replace(spec, max_pages=9), timeout=300, resume=True)
    assert more.returncode == 0, more.log.read_text()[-3000:]
    pages = stored(spec)
    assert len(pages) == len(set(pages)) == 9
    fetched_nothing_more(more.stats, 5)


# -- workers of one Redis frontier ------------------------------------------------------------------------


def test_queued_requests_go_back_to_the_frontier_when_another_worker_spends_the_budget(web, tmp_path, redis_server):
    """A worker of a shared frontier on the live profile, without the scheduler's limit on requests waiting in
    the downloader, fills it (16 requests behind the politeness delay). When the shared count reaches the budget
    (another worker's pages, here set by the test), the queued requests are not fetched: they go back to the
    frontier, waiting, for a later crawl."""
    prefix = f"budget-{os.getpid()}-{time.monotonic_ns()}"
    settings = {
        "REDIS_URL": redis_server.url,
        "FOCUSED_REDIS_PREFIX": prefix,
        "FOCUSED_PROFILE": "",
        "FOCUSED_MAX_QUEUED_DOWNLOADS": 0,  # Scrapy's own limit: CONCURRENT_REQUESTS in the downloader
    }
    spec = replace(direct_crawl(web, tmp_path, "worker", LOG_LEVEL="DEBUG", **settings), max_pages=20)
    log_path = spec.db.with_suffix(".log")
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), SCRAPY_SETTINGS_MODULE="focused.settings")
    with log_path.open("w") as fh:
        proc = subprocess.Popen(scrapy_command(spec), cwd=PROJECT_ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while log_path.read_text().count("Crawled (200)") < 2:  # the seed, then one page behind the delay
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.05)
        client = redis_server.client()
        client.incrby(f"{prefix}:crawl:pages", 20)  # the other workers stored the budget
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    log = log_path.read_text()
    assert proc.returncode == 0, log[-3000:]
    assert "Traceback" not in log
    stats = json.loads(stats_path(spec).read_text())
    assert stats["finish_reason"] == "focused_max_pages"
    dropped = stats["focused/budget/dropped_requests"]
    assert dropped >= 5, stats  # what waited behind the delay was not fetched...
    assert client.zcard(f"{prefix}:frontier:waiting") >= dropped  # ...but is waiting in the frontier again
    assert client.zcard(f"{prefix}:frontier:leases") == 0
    # only what was on the wire when the budget closed was fetched after it (a slot sends 2 at most)
    late = stats.get("focused/budget/dropped_pages", 0)
    assert late <= 2
    pages = stored(spec)
    assert stats["downloader/response_count"] <= len(pages) + late + stats.get("robotstxt/response_count", 0)
