"""The spider's side of the page-analysis worker (:mod:`focused.analysis.worker`): what to ask of it, and
what to do when it fails.

Built by the spider when ``FOCUSED_ANALYSIS_WORKERS`` asks for workers. :meth:`PageAnalysis.read`
sends a page to a worker and awaits its reading (pages that come before the workers
have started are read in the crawl process, so a short crawl does not wait for them;
with ``auto`` the worker is started after :data:`AUTO_START_AFTER` pages), leaving the critic's verdict
in the runtime's memo and the fingerprint in the response's meta for the
components that would otherwise compute them. An analysis that raises is done
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
from collections.abc import Awaitable, Callable
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from focused.analysis.worker import AnalysisConfig, AnalysisPool
from focused.core.runtime import CrawlRuntime
from focused.page.parsed import ParsedPage
from focused.settings.access import setting
from focused.spidermiddlewares.neardup import FINGERPRINT_META_KEY
from focused.strategies.apprentice import ApprenticeStrategy

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import TextResponse

logger = logging.getLogger(__name__)

#: Workers started after deaths before the crawl stops using them.
MAX_RESTARTS = 5

Read = tuple[ParsedPage, list[str], int]


#: With ``FOCUSED_ANALYSIS_WORKERS = auto`` the worker starts once this many pages have been read: its
#: start-up (a second interpreter, the critic: about 1.5 s of CPU) pays off only on longer crawls.
AUTO_START_AFTER = 100


class PageAnalysis:
    def __init__(self, crawler: Crawler, workers: int, max_links: int, start_after: int = 0) -> None:
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
            time_budget=setting(crawler.settings, "FOCUSED_PAGE_TIME_BUDGET"),
            malloc_tuning=setting(crawler.settings, "FOCUSED_MALLOC_TUNING"),
        )
        self.config, self.workers = config, workers
        self.start_after = start_after
        self._pages_before = 0  # pages read in the crawl process before the workers were asked for
        self.pool: AnalysisPool | None = None
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
        inline: Callable[[TextResponse, str, bool], Awaitable[Read | None]],
    ) -> Read | None:
        """The page's parse, outlinks and unread links; None if workers died twice reading it (dropped) or
        it took longer than ``FOCUSED_PAGE_TIME_BUDGET`` (skipped)."""
        if self.start_after:  # auto: a short crawl does without
            self._pages_before += 1
            if self._pages_before <= self.start_after:
                self.crawler.stats.inc_value("focused/analysis/before_ready")
                return await inline(response, html, follow)
            self.start_after = 0
            self._start()
        for retry in (False, True):  # a page in flight when a worker died is given to the next one once
            pool = self.pool
            if pool is None:  # no workers (any more): read here
                return await inline(response, html, follow)
            generation = self._generation
            if not pool.ready.done() and not retry:  # workers starting (a second or two): read here meanwhile
                self.crawler.stats.inc_value("focused/analysis/before_ready")
                return await inline(response, html, follow)
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
            if analysis.too_slow:
                skipped_slow(self.crawler, response.url)
                return None
            if analysis.verdict is not None:
                self.runtime.remember(response.url, analysis.verdict)
            if analysis.fingerprinted:
                response.meta[FINGERPRINT_META_KEY] = analysis.fingerprint
            return analysis.parsed, analysis.links, analysis.over
        self.crawler.stats.inc_value("focused/analysis/dropped")
        logger.error("Page dropped: the page-analysis worker died while reading %s (or a page beside it)", response.url)
        return None

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
        """Stop the workers and wait for them to exit."""
        if self.pool is not None:
            self.pool.close()

    async def spider_closed(self) -> None:
        """The ``spider_closed`` handler: :meth:`close` in a thread, so the reactor runs while a worker exits
        (a few hundred ms); Scrapy awaits it before the crawl ends. Without workers (a crawl shorter than their
        start) nothing is awaited: the close is what it was before workers existed."""
        if self.pool is not None:
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
