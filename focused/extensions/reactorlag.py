"""How long the reactor was kept from its timers: the longest lag of a 50 ms tick, as a stat.

A callback that blocks the reactor thread (parsing a huge page, scoring
thousands of links) delays every timer and every socket read meanwhile; this
extension schedules a tick every 50 ms and records the worst lateness in
``focused/reactor/max_lag_ms`` (and lags over 100 ms in
``focused/reactor/lags_over_100ms``). A figure for benchmarks, not a test.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from scrapy import signals
from twisted.internet import task

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

TICK_SECONDS = 0.05
logger = logging.getLogger(__name__)


class ReactorLag:
    """Scrapy extension measuring the reactor's lateness (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        self._loop = task.LoopingCall(self._tick)
        self._last = 0.0
        self._worst = 0.0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        ext = cls(crawler)
        crawler.signals.connect(ext.opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.closed, signal=signals.spider_closed)
        return ext

    def opened(self) -> None:
        self._last = time.monotonic()
        self._loop.start(TICK_SECONDS, now=False)

    def _tick(self) -> None:
        now = time.monotonic()
        lag = now - self._last - TICK_SECONDS
        self._last = now
        if lag > 0.1:
            self.stats.inc_value("focused/reactor/lags_over_100ms")
            logger.debug("The reactor was %.0f ms late", 1000 * lag)
        if lag > self._worst:
            self._worst = lag
            self.stats.set_value("focused/reactor/max_lag_ms", round(1000 * lag, 1))

    def closed(self) -> None:
        if self._loop.running:
            self._loop.stop()
