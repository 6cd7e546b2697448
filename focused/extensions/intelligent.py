"""The extension that keeps the intelligent crawler's statistics K learning (Aggarwal et al. 2001).

After every labelled page it updates K and the link graph
(:meth:`~focused.strategies.intelligent.IntelligentStrategy.observe`) with the
page's relevance as the crawl defines it (the critic's verdict at
``FOCUSED_RELEVANCE_THRESHOLD``, or the predicate); every
``FOCUSED_INTELLIGENT_RESCORE_EVERY`` pages it re-scores every waiting URL from
its payloads through the scheduler (:data:`focused.signals.rescore_frontier`),
the paper's Reassign-Priorities, which also rebalances the factor weights over
the current candidates. ``FOCUSED_INTELLIGENT_LOAD`` (``-a knowledge=FILE``)
starts from the K of an earlier crawl; ``FOCUSED_INTELLIGENT_SAVE``
(``-a save_knowledge=FILE``) writes K when the crawl closes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals
from scrapy.exceptions import NotConfigured

from focused import signals
from focused.core.runtime import CrawlRuntime
from focused.errors import ConfigError
from focused.paths import project_path
from focused.priority import score_to_priority
from focused.settings.access import setting
from focused.strategies.intelligent import IntelligentStrategy

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from focused.signals import LabelledPage

logger = logging.getLogger(__name__)


class IntelligentFeedback:
    """Update K after every labelled page, re-score the frontier periodically, save K at the end."""

    def __init__(self, crawler: Crawler, strategy: IntelligentStrategy) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.strategy = strategy
        settings = crawler.settings
        self.every = setting(settings, "FOCUSED_INTELLIGENT_RESCORE_EVERY")
        if self.every < 0:
            raise ConfigError(f"FOCUSED_INTELLIGENT_RESCORE_EVERY must be >= 0 (0: never), not {self.every}")
        self.save_path = setting(settings, "FOCUSED_INTELLIGENT_SAVE") or ""
        self.pages = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IntelligentFeedback:
        strategy = CrawlRuntime.of(crawler).strategy
        if not isinstance(strategy, IntelligentStrategy):
            raise NotConfigured
        ext = cls(crawler, strategy)
        crawler.signals.connect(ext.page_labelled, signal=signals.page_labelled)
        crawler.signals.connect(ext.spider_closed, signal=scrapy_signals.spider_closed)
        return ext

    def page_labelled(self, page: LabelledPage) -> None:
        self.strategy.observe(page.url, page.text, page.links, page.relevance, page.aliases)
        self.pages += 1
        if self.every and self.pages % self.every == 0:
            self.rescore()

    def rescore(self) -> None:
        started = time.perf_counter()
        results = self.crawler.signals.send_catch_log(signals.rescore_frontier, scorer=self._rescore)
        changed = sum(r for _, r in results if isinstance(r, int))
        self.stats.inc_value("focused/intelligent/rescores")
        self.stats.inc_value("focused/intelligent/rescore_ms", round(1000 * (time.perf_counter() - started)))
        self._record()
        logger.debug("Intelligent crawl: re-scored the frontier after %d pages (%d changed)", self.pages, changed)

    def _rescore(self, payloads: Sequence[Sequence[Any]]) -> list[int | None]:
        return [None if s is None else score_to_priority(s) for s in self.strategy.rescore(payloads)]

    def _record(self) -> dict[str, Any]:
        summary = self.strategy.summary()
        for key, value in summary.items():
            self.stats.set_value(f"focused/intelligent/{key}", value)
        return summary

    def spider_closed(self) -> None:
        summary = self._record()
        logger.info("Intelligent crawl statistics K: %s", summary)
        if self.save_path:
            path = project_path(self.save_path)
            try:
                metadata = {
                    "strategy": self.strategy.name,
                    "predicate": setting(self.crawler.settings, "FOCUSED_PREDICATE") or "",
                    "topic": CrawlRuntime.of(self.crawler).topic_label,
                }
                self.strategy.k.save(path, metadata=metadata)
            except OSError as exc:
                logger.error("Could not save the intelligent-crawl statistics to %s: %s", path, exc)
                return
            logger.info("Saved the intelligent-crawl statistics K (%d pages) in %s", self.strategy.k.n_t, path)
