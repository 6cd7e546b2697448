"""The page budget of a crawl (``FOCUSED_MAX_PAGES``): exactly N pages stored, and few more fetched.

Three components keep it, through the one :class:`PageBudget` of the crawler:

* the pipeline claims a place for every new page before it stores it
  (:meth:`PageBudget.claim`); once N places are taken, a page that still
  arrives is not stored (``focused/budget/dropped_pages``);
* the scheduler hands out no request while the pages stored plus the requests
  the engine holds reach N (:meth:`PageBudget.room`): the downloader never
  holds more requests than the budget can still take, so no request waits
  behind the politeness delay for a place that will not be there;
* when the N-th place is taken the spider is closed, and the requests still
  queued in the downloader's slots (a worker of a shared frontier may have
  some) go back to the frontier instead of being fetched.

So a single crawl process fetches N pages, plus the responses that store no
page (``robots.txt``, HTTP errors, redirects, non-HTML). Workers of one Redis
frontier share the budget: the pages all of them stored plus the places they
claimed for pages not yet committed (:class:`~focused.core.sharedcount.SharedCount`:
a killed worker's claims expire, its uncommitted pages never count), and each
holds back on the shared count plus its own requests in flight; another
worker's requests already on the wire when the budget closes (at most
``CONCURRENT_REQUESTS_PER_DOMAIN`` per site per worker) are fetched and not
stored.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import deferred_from_coro

from focused.core.enginestate import engine_requests, take_queued_downloads
from focused.frontier.settings import uses_redis
from focused.settings.access import setting

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler

    from focused.core.sharedcount import SharedCount

logger = logging.getLogger(__name__)

_ATTR = "_focused_page_budget"
#: A shared count this far below the budget (in pages, at least; or a twentieth of the budget) may be half a
#: second old when the scheduler looks (:meth:`~focused.core.sharedcount.SharedCount.look`).
LOOK_MARGIN = 16
#: The spider's close reason when the budget is reached.
REASON = "focused_max_pages"


class PageBudget:
    """``FOCUSED_MAX_PAGES`` of one crawl (0: no budget); see the module docstring."""

    def __init__(self, crawler: Crawler, limit: int, shared: SharedCount | None = None) -> None:
        self.crawler = crawler
        self.limit = limit
        self.shared = shared
        #: pages stored, this run and earlier runs of a resumed crawl (this worker's, with a shared count)
        self.stored = 0
        self.reached = False
        self._closing: Any = None
        #: where requests taken back from the downloader go: the scheduler sets it to its ``give_back``
        self.give_back: Callable[[list[Request]], None] | None = None

    @classmethod
    def of(cls, crawler: Crawler) -> PageBudget:
        """The crawler's budget, made on first use."""
        budget = getattr(crawler, _ATTR, None)
        if budget is None:
            limit = setting(crawler.settings, "FOCUSED_MAX_PAGES")
            budget = cls(crawler, limit, _shared_count(crawler) if limit > 0 else None)
            setattr(crawler, _ATTR, budget)
        return budget

    def resume(self, stored: int) -> None:
        """The pages earlier runs of a resumed crawl stored (the pipeline reads them from its database)."""
        self.stored = stored

    def total(self) -> int:
        """The pages stored so far by the crawl (by all workers of a shared frontier)."""
        return self.shared.add(0) if self.shared is not None else self.stored

    def claim(self) -> bool:
        """A place for one more page: False once the budget is spent (the page must not be stored)."""
        if not self.limit:
            self.stored += 1
            return True
        if self.shared is not None:
            total = self.shared.add(1)
            if total > self.limit:
                self.shared.add(-1)  # another worker took the last place
                self.check(self.limit)
                return False
        elif self.stored >= self.limit:
            self.check(self.stored)
            return False
        else:
            total = self.stored + 1
        self.stored += 1
        self.check(total)
        return True

    def room(self) -> bool:
        """Whether the scheduler may hand out one more request: the pages stored plus the requests the
        engine holds are below the budget. Reaching the budget here closes the spider."""
        if not self.limit:
            return True
        if self.reached:
            return False
        requests = engine_requests(self.crawler)
        held = len(requests) if requests is not None else 0
        if self.shared is not None:  # no round trip of its own while far from the budget
            total = self.shared.look(self.limit - held - max(LOOK_MARGIN, self.limit // 20))
        else:
            total = self.stored
        if self.check(total):
            return False
        return total + held < self.limit

    def check(self, total: int | None = None) -> bool:
        """Close the spider once ``total`` (default: :meth:`total`) reaches the budget; True if it has."""
        if not self.limit:
            return False
        if not self.reached:
            total = self.total() if total is None else total
            # shared: not while other workers' claims fill it (a killed worker's expire: room again)
            if total >= self.limit and (self.shared is None or self.shared.settled >= self.limit):
                self._reach(total)
        return self.reached

    def _reach(self, total: int) -> None:
        self.reached = True
        logger.info("Page budget reached (%d of %d pages): closing the spider", min(total, self.limit), self.limit)
        dropped = self._drop_queued()
        if dropped:
            logger.info("%d requests queued in the downloader go back to the frontier, not fetched", dropped)
            self.crawler.stats.inc_value("focused/budget/dropped_requests", dropped)
        try:
            engine = self.crawler.engine
        except RuntimeError:  # no engine (components driven by hand)
            return
        if engine is not None and engine.spider is not None:
            self._closing = deferred_from_coro(engine.close_spider_async(reason=REASON))

    def _drop_queued(self) -> int:
        """Take the requests waiting in the downloader's slots (behind the politeness delay) out of it:
        their leases go back to the frontier (a resumed crawl with a larger budget fetches them), and
        each fails with ``IgnoreRequest``, which the engine drops quietly."""
        queued = take_queued_downloads(self.crawler)
        if not queued:
            return 0
        if self.give_back is not None:
            self.give_back([request for request, _ in queued])
        for request, waiting in queued:
            waiting.errback(IgnoreRequest(f"page budget reached: {request.url} not fetched"))
        return len(queued)


def _shared_count(crawler: Crawler) -> SharedCount | None:
    """The count shared by the workers of a Redis frontier (``None`` for any other frontier). Imported here:
    it imports redis, which no other crawl needs at start-up."""
    if not uses_redis(crawler.settings):
        return None
    from focused.core.sharedcount import SharedCount

    return SharedCount.of(crawler)
