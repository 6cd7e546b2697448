"""glibc's allocator set for a long crawl, in the crawl process (:mod:`focused.malloc`).

When the crawler is built, before the crawl's threads start (the crawl database's writer, Twisted's
thread pool for training and re-scoring), this extension fixes glibc's mmap threshold so that large
blocks are mapped on their own and go back to the kernel when freed, and records it in the stat
``focused/malloc/tuned`` (1, or 0 where the C library is not glibc and nothing was changed). Once the
engine has started, it gives the start-up's free memory back to the kernel (:func:`focused.malloc.trim`: the
models were read before the threshold was fixed, one of them twice), and again every
:data:`TRIM_EVERY` responses, in a thread: the small objects of a crawl (requests, payloads, parsed pages)
come and go, and the whole pages their heaps leave free stay resident until trimmed (``focused/malloc/trims``
counts them). The page-analysis worker trims once, when it starts (:mod:`focused.analysis.worker`).
``FOCUSED_MALLOC_TUNING = False`` leaves the allocator as glibc sets it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet.threads import deferToThread
from twisted.python.failure import Failure

from focused import malloc
from focused.settings.access import setting

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

#: Responses between two trims after the start-up's (each takes a few ms; in the page-analysis worker they gave
#: nothing back: docs/results.md, "Memory of the 3,000-page default crawl").
TRIM_EVERY = 250


class MallocTuning:
    """At the crawler's construction: :func:`focused.malloc.tune`, and its outcome as a stat; at the engine's
    start and every :data:`TRIM_EVERY` responses, :func:`focused.malloc.trim`."""

    def __init__(self, tuned: bool, stats: StatsCollector | None = None) -> None:
        self.tuned = tuned
        self.stats = stats
        self.responses = 0
        self.trimming = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not setting(crawler.settings, "FOCUSED_MALLOC_TUNING"):
            raise NotConfigured
        tuned = malloc.tune()
        crawler.stats.set_value("focused/malloc/tuned", int(tuned))
        logger.debug("glibc's mmap threshold %s", f"fixed at {malloc.MMAP_THRESHOLD} bytes" if tuned else "unchanged")
        ext = cls(tuned, crawler.stats)
        crawler.signals.connect(ext.engine_started, signal=signals.engine_started)
        if tuned:
            crawler.signals.connect(ext.response_received, signal=signals.response_received)
        return ext

    def engine_started(self) -> None:
        """The start-up's free memory (the models read, checked and read again) back to the kernel, once."""
        if self.tuned:
            malloc.trim()

    def response_received(self) -> None:
        """Every :data:`TRIM_EVERY` responses, trim in a thread (not on the reactor's: it walks
        the heaps), unless the last trim is still running."""
        self.responses += 1
        if self.responses % TRIM_EVERY or self.trimming:
            return
        self.trimming = True
        deferToThread(malloc.trim).addBoth(self._trimmed)

    def _trimmed(self, result: object) -> None:
        self.trimming = False
        if isinstance(result, Failure):
            logger.debug("malloc_trim failed: %s", result.getErrorMessage())
            return
        if self.stats is not None:
            self.stats.inc_value("focused/malloc/trims")
