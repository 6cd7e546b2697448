"""The spider's side of the page-analysis worker (:mod:`focused.analysis.worker`): what to ask of it, and
what to do when it fails.

Built by the spider when ``FOCUSED_ANALYSIS_WORKERS`` asks for workers. :meth:`PageAnalysis.read`
sends a page to a worker and awaits its reading, leaving the critic's verdict
in the runtime's memo and the fingerprint in the response's meta for the
components that would otherwise compute them. Pages that come before the workers
have started (with ``auto`` the worker is started after :data:`AUTO_START_AFTER` pages) are read the
same way in a thread of the crawl process, one at a time in their order, so a short crawl does not
wait for the workers and the reactor does not wait for the reading. An analysis that raises is done
again in the crawl process. A worker that dies is replaced (up to
:data:`MAX_RESTARTS` times, then pages are read in the crawl process) and the
pages it had in flight go to the new one, once: a page in flight at two deaths
is dropped (counted, logged) rather than read in the crawl process, where
whatever killed the workers would kill the crawl. Workers that never read a
page (they cannot start) hand every page back to the crawl process.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from focused.analysis.worker import Analysis, AnalysisConfig, AnalysisPool, analyze_page
from focused.core.runtime import CrawlRuntime
from focused.page.parsed import PageTooSlow, ParsedPage
from focused.settings.access import setting
from focused.spidermiddlewares.neardup import FINGERPRINT_META_KEY
from focused.strategies.apprentice import ApprenticeStrategy

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import TextResponse

    #: The spider's reading of a page in the crawl process (``FocusedSpider._read_here``): the fallback.
    ReadHere = Callable[[TextResponse, str, bool], Awaitable["Read | None"]]

logger = logging.getLogger(__name__)

#: Workers started after deaths before the crawl stops using them.
MAX_RESTARTS = 5

Read = tuple[ParsedPage, list[str], int]


#: With ``FOCUSED_ANALYSIS_WORKERS = auto`` the worker starts once this many pages have been read: its
#: start-up (a second interpreter, the critic: about 1.5 s of CPU) pays off only on longer crawls.
AUTO_START_AFTER = 100


class PageAnalysis:
    def __init__(
        self, crawler: Crawler, workers: int, max_links: int, start_after: int = 0, max_url_length: int = 0
    ) -> None:
        self.crawler = crawler
        self.runtime = runtime = CrawlRuntime.of(crawler)
        strategy = runtime.strategy
        online = strategy.online if isinstance(strategy, ApprenticeStrategy) else None
        critic = runtime.critic if _portable(runtime.critic, runtime.topic) else None
        if critic is None:
            logger.info("The critic cannot go to the analysis worker; pages are judged in the crawl process")
        config = AnalysisConfig(
            critic=critic,
            topic=runtime.topic if critic is not None else None,
            fingerprints=setting(crawler.settings, "FOCUSED_NEAR_DUPLICATES"),
            d_max=online.d_max if online is not None else None,
            n_features=online.learner.n_features if online is not None else 0,
            max_links=max_links,
            max_url_length=max_url_length,
            time_budget=setting(crawler.settings, "FOCUSED_PAGE_TIME_BUDGET"),
            malloc_tuning=setting(crawler.settings, "FOCUSED_MALLOC_TUNING"),
        )
        self.config, self.workers = config, workers
        self.start_after = start_after
        self._pages_before = 0  # pages read in the crawl process before the workers were asked for
        self.pool: AnalysisPool | None = None
        #: the thread that reads pages before the workers are ready (:meth:`_read_aside`), made at the first
        self._aside: ThreadPoolExecutor | None = None
        self._generation = 0
        if not start_after:
            self._start()

    def _start(self) -> None:
        self.pool = AnalysisPool(self.config, self.workers)
        logger.info("Pages are read in %d worker process(es)", self.workers)

    async def read(
        self,
        response: TextResponse,
        html: str,
        follow: bool,
        inline: ReadHere,
    ) -> Read | None:
        """The page's parse, outlinks and unread links; None if workers died twice reading it (dropped) or
        it took longer than ``FOCUSED_PAGE_TIME_BUDGET`` (skipped)."""
        if self.start_after:  # auto: a short crawl does without
            self._pages_before += 1
            if self._pages_before <= self.start_after:
                return await self._read_aside(response, html, follow, inline)
            self.start_after = 0
            self._start()
        for retry in (False, True):  # a page in flight when a worker died is given to the next one once
            pool = self.pool
            if pool is None:  # no workers (any more): read here
                return await inline(response, html, follow)
            generation = self._generation
            if not pool.ready.done() and not retry:  # workers starting (a second or two): read aside meanwhile
                return await self._read_aside(response, html, follow, inline)
            try:
                await asyncio.wrap_future(pool.ready)  # a retried page waits for the new worker
                analysis = await asyncio.wrap_future(pool.submit(html, response.url, response.encoding, follow))
            except BrokenProcessPool:
                if not pool.completed:  # no worker ever read a page: they cannot start; no page is lost for it
                    self._could_not_start()
                    return await inline(response, html, follow)
                self._worker_died(generation)
                if self.pool is None:
                    break  # given up on workers: this page may be what killed them
                continue
            except Exception:
                logger.warning("Analysis of %s failed in the worker; reading it here", response.url, exc_info=True)
                self.crawler.stats.inc_value("focused/analysis/failed")
                return await inline(response, html, follow)
            pool.completed += 1
            self.crawler.stats.inc_value("focused/analysis/pages")
            return self._taken(response, analysis)
        self.crawler.stats.inc_value("focused/analysis/dropped")
        logger.error("Page dropped: the page-analysis worker died while reading %s (or a page beside it)", response.url)
        return None

    async def _read_aside(
        self,
        response: TextResponse,
        html: str,
        follow: bool,
        inline: ReadHere,
    ) -> Read | None:
        """A page before the workers are ready: :func:`analyze_page` in the crawl process's reading thread.

        One thread, so pages are read in the order they came, as by one worker; the reactor meanwhile
        downloads and schedules (reading them on it held it for 80-160 ms when several landed in one turn).
        The time budget bounds the parse, as for a page read on the reactor. An analysis that raises is
        done again by ``inline``, as one from a worker."""
        self.crawler.stats.inc_value("focused/analysis/before_ready")
        if self._aside is None:
            self._aside = ThreadPoolExecutor(1, thread_name_prefix="focused-analysis-aside")
        budget = self.config.time_budget
        deadline = time.monotonic() + budget if budget > 0 else None
        reading = self._aside.submit(analyze_page, self.config, html, response.url, response.encoding, follow, deadline)
        try:
            analysis = await asyncio.wrap_future(reading)
        except PageTooSlow:
            analysis = Analysis(ParsedPage(), [], 0, too_slow=True)
        except Exception:
            logger.warning("Analysis of %s failed in the reading thread; reading it here", response.url, exc_info=True)
            self.crawler.stats.inc_value("focused/analysis/failed")
            return await inline(response, html, follow)
        return self._taken(response, analysis)

    def _taken(self, response: TextResponse, analysis: Analysis) -> Read | None:
        """A page's analysis put where the components look for it; None for a page over the time budget."""
        if analysis.too_slow:
            skipped_slow(self.crawler, response.url)
            return None
        if analysis.verdict is not None:
            self.runtime.remember(response.url, analysis.verdict)
        if analysis.fingerprinted:
            response.meta[FINGERPRINT_META_KEY] = analysis.fingerprint
        return analysis.parsed, analysis.links, analysis.over

    def _worker_died(self, generation: int) -> None:
        """Replace the dead worker (once per death: every page in flight sees the same broken pool)."""
        if generation != self._generation or self.pool is None:
            return
        self._generation += 1
        if self.pool.restarts >= MAX_RESTARTS:
            logger.error("The page-analysis worker died %d times; reading pages in the crawl process", MAX_RESTARTS + 1)
            self.pool.close()
            self.pool = None
            return
        logger.warning("The page-analysis worker died; starting another")
        self.crawler.stats.inc_value("focused/analysis/worker_restarts")
        self.pool.restart()

    def _could_not_start(self) -> None:
        if self.pool is None:
            return
        logger.error("The page-analysis worker could not start; reading pages in the crawl process")
        self.crawler.stats.set_value("focused/analysis/unavailable", 1)
        self.pool.close()
        self.pool = None

    def close(self) -> None:
        """Stop the reading thread and the workers, and wait for the workers to exit (pages still queued are
        dropped: the crawl is over; a page being read aside finishes in its thread)."""
        if self._aside is not None:
            self._aside.shutdown(wait=False, cancel_futures=True)
        if self.pool is not None:
            self.pool.close()

    async def spider_closed(self) -> None:
        """The ``spider_closed`` handler: :meth:`close` in a thread, so the reactor runs while a worker exits
        (a few hundred ms); Scrapy awaits it before the crawl ends. Without workers (a crawl shorter than their
        start) nothing is awaited: the close is what it was before workers existed."""
        if self.pool is None:
            self.close()
        else:
            await maybe_deferred_to_future(deferToThread(self.close))


def skipped_slow(crawler: Crawler, url: str) -> None:
    """Count and log a page skipped because reading it took longer than ``FOCUSED_PAGE_TIME_BUDGET``."""
    crawler.stats.inc_value("focused/pages/skipped_slow")
    budget = setting(crawler.settings, "FOCUSED_PAGE_TIME_BUDGET")
    logger.warning("Page skipped: reading %s took longer than FOCUSED_PAGE_TIME_BUDGET (%gs)", url, budget)


def _portable(critic: object, topic: object) -> bool:
    """Whether the critic and topic can be sent to a worker (they are, once, when it starts).

    Pickled into a sink that keeps nothing: the whole pickle (27 MB for the Wikipedia critic) is never held."""
    try:
        pickle.Pickler(_Discard(), protocol=pickle.HIGHEST_PROTOCOL).dump((critic, topic))
    except Exception:
        return False
    return True


class _Discard:
    """A binary file that forgets what is written to it."""

    def write(self, data: bytes | pickle.PickleBuffer) -> int:
        return memoryview(data).nbytes  # protocol 5 hands large buffers over as they are
