"""glibc's allocator set for a long crawl, in the crawl process (:mod:`focused.malloc`).

When the crawler is built, before the crawl's threads start (the crawl database's writer, Twisted's
thread pool for training and re-scoring), this extension fixes glibc's mmap threshold so that large
blocks are mapped on their own and go back to the kernel when freed, and records it in the stat
``focused/malloc/tuned`` (1, or 0 where the C library is not glibc and nothing was changed). Once the
engine has started, it gives the start-up's free memory back to the kernel (:func:`focused.malloc.trim`, once:
the models were read before the threshold was fixed, one of them twice). The page-analysis worker does the same
when it starts (:mod:`focused.analysis.worker`).
``FOCUSED_MALLOC_TUNING = False`` leaves the allocator as glibc sets it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured

from focused import malloc
from focused.settings.access import setting

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class MallocTuning:
    """At the crawler's construction: :func:`focused.malloc.tune`, and its outcome as a stat; at the engine's
    start, :func:`focused.malloc.trim`."""

    def __init__(self, tuned: bool) -> None:
        self.tuned = tuned

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not setting(crawler.settings, "FOCUSED_MALLOC_TUNING"):
            raise NotConfigured
        tuned = malloc.tune()
        crawler.stats.set_value("focused/malloc/tuned", int(tuned))
        logger.debug("glibc's mmap threshold %s", f"fixed at {malloc.MMAP_THRESHOLD} bytes" if tuned else "unchanged")
        ext = cls(tuned)
        crawler.signals.connect(ext.engine_started, signal=signals.engine_started)
        return ext

    def engine_started(self) -> None:
        """The start-up's free memory (the models read, checked and read again) back to the kernel, once."""
        if self.tuned:
            malloc.trim()
