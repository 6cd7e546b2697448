"""Crawl progress: harvest and loss in the log every N pages, and the page budget.

Workers of one Redis frontier share the budget: each counts its new pages in
``<prefix>:crawl:pages`` and stops when that total reaches ``FOCUSED_MAX_PAGES``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_from_coro

from focused import signals
from focused.settings.access import setting

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from focused.signals import LabelledPage

logger = logging.getLogger(__name__)


class HarvestMonitor:
    """Log harvest/loss every ``FOCUSED_LOG_EVERY`` pages; stop at ``FOCUSED_MAX_PAGES``.

    Harvest is the critic's mean Pr(c*|v) over the pages fetched so far (the
    paper's definition) and loss is one minus it; "recent" is the same over the
    last N pages, which shows whether the crawl is improving or drifting.
    """

    def __init__(self, crawler: Crawler, log_every: int, max_pages: int, shared: SharedCount | None = None) -> None:
        self.crawler = crawler
        self.log_every = log_every
        self.max_pages = max_pages
        self.shared = shared
        self._pages = 0
        self.window = 0.0
        self.window_n = 0
        self._closing: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        log_every = setting(crawler.settings, "FOCUSED_LOG_EVERY")
        max_pages = setting(crawler.settings, "FOCUSED_MAX_PAGES")
        if log_every <= 0 and max_pages <= 0:
            raise NotConfigured
        ext = cls(crawler, log_every, max_pages, SharedCount.of(crawler) if max_pages > 0 else None)
        crawler.signals.connect(ext.page_labelled, signal=signals.page_labelled)
        crawler.signals.connect(ext.spider_opened, signal=scrapy_signals.spider_opened)
        return ext

    def spider_opened(self) -> None:
        """A resumed crawl that had already reached its budget stops at once."""
        pages = self.crawler.stats.get_value("focused/pages", 0)
        if self.shared is not None:
            pages = self.shared.add(0)
        if self.max_pages and pages >= self.max_pages:
            self._close(pages)

    def _close(self, pages: int) -> None:
        logger.info("Page budget reached (%d of %d pages): closing the spider", pages, self.max_pages)
        self._closing = deferred_from_coro(self.crawler.engine.close_spider_async(reason="focused_max_pages"))

    def page_labelled(self, page: LabelledPage) -> None:
        self.window += page.relevance
        self.window_n += 1
        n = page.pages  # all runs of a resumed crawl
        new, self._pages = page.pages > self._pages, page.pages
        total = self.shared.add(1 if new else 0) if self.shared is not None else n
        if self.log_every > 0 and n % self.log_every == 0:
            stats = self.crawler.stats
            harvest = page.harvest
            logger.info(
                "pages=%d harvest=%.3f loss=%.3f recent_harvest=%.3f relevant=%s frontier=%s",
                n,
                harvest,
                1.0 - harvest,
                self.window / self.window_n,
                stats.get_value("focused/relevant_pages"),
                stats.get_value("focused/frontier/size", "?"),
            )
            self.window, self.window_n = 0.0, 0
        if self.max_pages and total >= self.max_pages and self._closing is None:
            self._close(total)


class SharedCount:
    """The pages of all workers of one Redis frontier (``<prefix>:crawl:pages``), for a shared budget."""

    def __init__(self, client: Any, key: str) -> None:
        self.client = client
        self.key = key
        self._warned = False
        self._local = 0

    @classmethod
    def of(cls, crawler: Crawler) -> SharedCount | None:
        from focused.frontier.settings import redis_prefix, uses_redis

        if not uses_redis(crawler.settings):
            return None
        from scrapy_redis.connection import get_redis_from_settings

        prefix = redis_prefix(crawler.settings, getattr(crawler.spidercls, "name", None) or "focused")
        return cls(get_redis_from_settings(crawler.settings), f"{prefix}:crawl:pages")

    def add(self, n: int) -> int:
        """Add this worker's ``n`` new pages; the total of all workers (this worker's own if Redis fails)."""
        import redis

        self._local += n
        try:
            return int(self.client.incrby(self.key, n))
        except redis.RedisError as exc:
            if not self._warned:
                logger.warning("The shared page count is unavailable (%s); counting this worker's pages", exc)
                self._warned = True
            return self._local
