"""Garbage collection tuned for a long crawl: start-up objects frozen, the youngest generation collected less often.

A crawl process holds a few hundred thousand objects from its start (Scrapy,
Twisted, the critic, NumPy's and SciPy's modules) that live as long as it
does, and CPython's cyclic collector walks all of them at every full
collection: a dozen in a 3,000-page Wikipedia crawl, up to 140 ms each on the
reactor thread, 1.4 s in all. When the engine starts, this extension collects
once and freezes what is left (:func:`gc.freeze`: those objects are never walked
again), and raises the threshold of the youngest generation to
``FOCUSED_GC_THRESHOLD`` allocations (Python's default is 700): a page allocates
thousands of short-lived objects that reference counting frees, so those
collections found little. In that crawl the collector's time fell from 2.0 to
0.5 s and the reactor's CPU from 23 to 20 s. ``FOCUSED_GC_THRESHOLD = 0``
leaves the collector as Python set it.
"""

from __future__ import annotations

import gc
import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured

from focused.settings.access import setting

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class GarbageCollection:
    """At ``engine_started``: one collection, :func:`gc.freeze`, and the youngest generation's threshold."""

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        threshold = setting(crawler.settings, "FOCUSED_GC_THRESHOLD")
        if threshold <= 0:
            raise NotConfigured
        ext = cls(threshold)
        crawler.signals.connect(ext.engine_started, signal=signals.engine_started)
        return ext

    def engine_started(self) -> None:
        gc.collect()
        gc.freeze()
        _, older, oldest = gc.get_threshold()
        gc.set_threshold(self.threshold, older, oldest)
        logger.debug(
            "Garbage collection: %d start-up objects frozen, threshold %d", gc.get_freeze_count(), self.threshold
        )
