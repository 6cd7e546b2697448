"""The shared page count of the workers of one Redis frontier: one total, and each worker's own when Redis fails."""

from __future__ import annotations

import logging

from scrapy import Spider
from scrapy.utils.test import get_crawler

from focused.core.sharedcount import SharedCount
from tests.redis_server import RedisServer


def _worker(url: str) -> SharedCount:
    """One worker's shared count, as its crawl builds it from its settings (no crawl database attached)."""
    settings = {"REDIS_URL": url, "FOCUSED_REDIS_PREFIX": "budget", "FOCUSED_MAX_PAGES": 100}
    count = SharedCount.of(get_crawler(Spider, settings_dict=settings))
    assert count is not None
    return count


def test_workers_share_one_page_count_in_redis(tmp_path) -> None:
    with RedisServer(tmp_path / "redis") as server:
        a, b = _worker(server.url), _worker(server.url)
        assert (a.add(3), b.add(2), a.add(0)) == (3, 5, 5)
        assert int(server.client().get("budget:crawl:pages")) == 5


def test_a_worker_that_cannot_read_the_shared_count_warns_once_and_counts_its_own_pages(tmp_path, caplog) -> None:
    """docs/distributed.md: "If that counter cannot be read, a worker logs one warning and counts its own pages"."""
    with RedisServer(tmp_path / "redis") as server:
        a, b = _worker(server.url), _worker(server.url)
        assert (a.add(3), b.add(2)) == (3, 5)
        server.stop()
        with caplog.at_level(logging.WARNING, logger="focused.core.sharedcount"):
            assert [a.add(1) for _ in range(3)] == [4, 5, 6]  # its own 3 pages, then one more each time
            assert [b.add(1) for _ in range(2)] == [3, 4]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings  # one per worker, not one per page
    assert all("shared page count is unavailable" in w and "counting this worker's pages" in w for w in warnings)
