"""Crawl progress: harvest and loss in the log every N pages; a resumed crawl past its page budget stops.

The page budget itself (``FOCUSED_MAX_PAGES``, shared by the workers of one
Redis frontier) is :class:`focused.core.budget.PageBudget`, kept by the
pipeline and the scheduler.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals as scrapy_signals
from scrapy.exceptions import NotConfigured

from focused import signals
from focused.core.budget import PageBudget
from focused.settings.access import setting

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from focused.signals import LabelledPage

logger = logging.getLogger(__name__)


class HarvestMonitor:
    """Log harvest/loss every ``FOCUSED_LOG_EVERY`` pages; stop a resumed crawl already at ``FOCUSED_MAX_PAGES``.

    Harvest is the critic's mean Pr(c*|v) over the pages fetched so far (the
    paper's definition) and loss is one minus it; "recent" is the same over the
    last N pages, which shows whether the crawl is improving or drifting.
    """

    def __init__(self, crawler: Crawler, log_every: int, budget: PageBudget) -> None:
        self.crawler = crawler
        self.log_every = log_every
        self.budget = budget
        self.window = 0.0
        self.window_n = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        log_every = setting(crawler.settings, "FOCUSED_LOG_EVERY")
        budget = PageBudget.of(crawler)
        if log_every <= 0 and not budget.limit:
            raise NotConfigured
        ext = cls(crawler, log_every, budget)
        crawler.signals.connect(ext.page_labelled, signal=signals.page_labelled)
        crawler.signals.connect(ext.spider_opened, signal=scrapy_signals.spider_opened)
        return ext

    def spider_opened(self) -> None:
        """A resumed crawl that had already reached its budget stops at once."""
        self.budget.check()

    def page_labelled(self, page: LabelledPage) -> None:
        self.window += page.relevance
        self.window_n += 1
        n = page.pages  # all runs of a resumed crawl
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
