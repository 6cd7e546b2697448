"""Seeds pushed to Redis: scrapy-redis's ``<prefix>:start_urls`` list, for the workers of a shared frontier.

``redis-cli LPUSH focused:start_urls http://example.org/`` seeds a running
crawl (or one about to start): a worker takes what the list holds when it
starts, and again whenever it is idle (every ``FOCUSED_REDIS_POLL_SECONDS``
while it waits for work), oldest first, and schedules each URL as a seed. A
URL that is not http(s) is dropped with one error line; a URL seen before
(pushed twice, or found as a link) is filtered by the shared frontier as usual.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.exceptions import DontCloseSpider
from scrapy.http import Request

from focused.frontier.settings import redis_prefix
from focused.priority import SEED_PRIORITY

if TYPE_CHECKING:
    import redis
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: URLs taken from the list per round trip.
BATCH = 100


class RedisSeeds:
    """Takes seeds from ``<prefix>:start_urls`` for one worker (see the module docstring)."""

    def __init__(self, crawler: Crawler, spider_name: str, callback: Any) -> None:
        from scrapy_redis.connection import get_redis_from_settings

        self.crawler = crawler
        self.key = f"{redis_prefix(crawler.settings, spider_name)}:start_urls"
        self.callback = callback
        self.client: redis.Redis = get_redis_from_settings(crawler.settings)
        self._warned = False

    def pop(self) -> list[str]:
        """Every URL the list holds now (oldest first), checked; none when Redis does not answer."""
        # here: Scrapy's spider loader imports this module in every crawl, and only a Redis frontier's needs redis
        import redis

        urls: list[str] = []
        while True:
            try:
                batch = self.client.rpop(self.key, BATCH)
            except redis.RedisError as exc:  # the frontier store reports outages; one line here
                if not self._warned:
                    logger.warning("Cannot read seeds from Redis list %s: %s", self.key, exc)
                    self._warned = True
                return urls
            self._warned = False
            if not batch:
                return urls
            for raw in batch:
                url = raw.decode("utf-8", errors="replace").strip() if isinstance(raw, bytes) else str(raw)
                parts = urlsplit(url)
                if parts.scheme in ("http", "https") and parts.netloc:
                    urls.append(url)
                else:
                    logger.error("Dropped seed %r from Redis list %s: not an http(s) URL", url, self.key)
            if len(batch) < BATCH:
                return urls

    def requests(self) -> list[Request]:
        urls = self.pop()
        if urls:
            logger.info("%d seeds from Redis list %s", len(urls), self.key)
            self.crawler.stats.inc_value("focused/seeds/redis", len(urls))
        return [Request(url, callback=self.callback, priority=SEED_PRIORITY) for url in urls]

    def on_idle(self) -> None:
        """Schedule the seeds pushed since; an idle worker that found some stays open."""
        found = self.requests()
        for request in found:
            self.crawler.engine.crawl(request)
        if found:
            raise DontCloseSpider

    def close(self) -> None:
        self.client.close()
