"""A Scrapy scheduler whose frontier is globally best-first, re-scorable and durable.

Scrapy's default scheduler keeps one queue per priority value (and, with
``DownloaderAwarePriorityQueue``, per domain), cannot change the priority of a
waiting request, drops a URL found again by another parent, and with
``JOBDIR`` loses every waiting request when the process is killed. This
scheduler keeps its frontier in a :class:`~focused.frontier.store.FrontierStore`:

* one best-first order over every waiting request;
* a URL found again while waiting merges the new parent's priority
  (``FOCUSED_PARENT_AGGREGATION``) instead of being dropped;
* other components re-score the waiting requests by sending the
  :data:`focused.signals.rescore_frontier` signal with a ``scorer``;
* the seen-set is the store's, so it cannot disagree with the frontier
  (``DUPEFILTER_CLASS`` is not used; duplicates are counted in
  ``dupefilter/filtered`` and logged as Scrapy's dupefilter does);
* no request is handed out while the pages stored plus the requests in
  flight reach the page budget (:class:`~focused.core.budget.PageBudget`);
* no request is handed out while more downloaded pages than
  ``FOCUSED_MAX_UNSCORED_PAGES`` await scoring (their links may outrank
  every waiting URL): a bounded look-ahead, 0 for strict best-first;
* no request is handed out while a hold is open (:mod:`focused.core.holds`): a
  background re-score in strict best-first, the apprentice's training with
  ``FOCUSED_APPRENTICE_WAIT`` (:data:`focused.signals.hold_frontier`);
* a popped request is *leased*: it stays in the store, in flight, until the
  engine has fully handled its response (page stored in the crawl database,
  outlinks scored and enqueued) or given up on it; only then is it
  acknowledged. With ``JOBDIR`` the store is SQLite
  (:class:`~focused.frontier.sqlite.SQLiteStore`), so after a crash or a kill
  every in-flight request goes back to waiting and nothing is lost;
* with ``REDIS_URL`` the store is Redis
  (:class:`~focused.frontier.redis.RedisStore`), shared by every crawler
  process of the crawl: a worker sends the requests enqueued since its last
  pop in one call right before its next pop (a page's links: one round
  trip, :meth:`FocusedScheduler._flush`), renews its leases every third of
  ``FOCUSED_REDIS_LEASE_SECONDS`` (a killed worker's come back after that
  long), does not close while another holds leases
  (their pages may bring new URLs), and one whose Redis is gone for longer
  than ``FOCUSED_REDIS_RETRY_SECONDS`` stops with one error line.

A request may carry a compact payload (for example hashed link features) in
``request.meta["focused_payload"]``; the scheduler moves it out of the meta
into the store, as bytes.
"""

from __future__ import annotations

import functools
import logging
import math
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from scrapy import signals as scrapy_signals
from scrapy.exceptions import DontCloseSpider
from scrapy.http import Request
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.job import job_dir
from twisted.internet import task
from twisted.internet.base import DelayedCall
from twisted.internet.defer import Deferred

from focused import malloc, signals
from focused.core.budget import PageBudget
from focused.core.enginestate import downloads_waiting, engine_requests, unscored_pages
from focused.core.fingerprints import UrlFingerprints
from focused.core.holds import Holds, wake_later, wake_now
from focused.core.rescoring import BackgroundRescores
from focused.frontier.leases import Leases
from focused.frontier.memory import MemoryStore
from focused.frontier.payloads import encode_payload
from focused.frontier.rescore import DecodingRescorer, Scorer, run_job
from focused.frontier.settings import open_store, store_name
from focused.frontier.store import FrontierStore, Push, PushResult, StoreError
from focused.settings.access import setting
from focused.settings.scrapyd import resume_hint
from focused.urls import collapse_aliases

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.spiders import Spider

    from focused.crawldb import CrawlDB
    from focused.frontier.redis import RedisStore

logger = logging.getLogger(__name__)

PAYLOAD_META_KEY = "focused_payload"
#: The payload already encoded (:func:`~focused.frontier.payloads.encode_payloads`), kept as it is. Plain bytes,
#: which the garbage collector does not track: a frontier of objects it tracks lengthens every full collection.
PAYLOAD_BYTES_META_KEY = "focused_payload_bytes"

#: Requests a shared (Redis) frontier gets at most in one push call; a page's links go together.
PUSH_BATCH = 1000

T = TypeVar("T")


def _unless_the_store_fails(default: Any) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A scheduler method that returns ``default`` and stops the crawl if its store gives up (Redis gone)."""

    def wrap(method: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(method)
        def guarded(self: FocusedScheduler, *args: Any) -> T:
            try:
                return method(self, *args)
            except StoreError as exc:
                self._store_failed(exc)
                return default

        return guarded

    return wrap


#: The crawler attribute that holds its :class:`FocusedScheduler`.
SCHEDULER_ATTR = "_focused_scheduler"


class FocusedScheduler:
    """Best-first scheduler over a frontier store (see the module docstring)."""

    def __init__(self, crawler: Crawler, jobdir: str | None = None) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.stats = crawler.stats
        self.jobdir = jobdir
        self.debug_duplicates = settings.getbool("DUPEFILTER_DEBUG")
        self._logged_duplicate = False
        self.store_name = store_name(settings, jobdir)
        self.commit_seconds = setting(settings, "FOCUSED_FRONTIER_COMMIT_SECONDS")
        # a page is one frontier entry whatever alias names it (FOCUSED_URL_ALIASES): outlinks arrive
        # collapsed already (focused.spidermiddlewares.canonical), seeds as the user gave them
        alias = collapse_aliases if setting(settings, "FOCUSED_URL_ALIASES") else None
        self._fingerprint = UrlFingerprints(crawler.request_fingerprinter, alias=alias)
        self.store: FrontierStore = MemoryStore()  # replaced in open()
        self.spider: Spider | None = None
        self._opened = False
        #: closed: a start request the spider still yields (a crawl closed as it opened) is not taken
        self._closed = False
        #: popped requests not yet acknowledged
        self._leases = Leases()
        self._crawldb: CrawlDB | None = None
        self._timer: task.LoopingCall | None = None
        #: dont_filter keys of workers sharing a frontier must differ
        self._unfiltered = f"{uuid.uuid4().hex[:12]}:" if self.store_name == "redis" else ""
        self._idle_since: float | None = None
        self._wake: DelayedCall | None = None
        self._store_error: StoreError | None = None
        #: FOCUSED_FRONTIER_MAX_SIZE (0: no cap)
        self.max_size = setting(settings, "FOCUSED_FRONTIER_MAX_SIZE")
        #: FOCUSED_MAX_UNSCORED_PAGES: no request is handed out while more pages than this await scoring
        self.max_unscored = setting(settings, "FOCUSED_MAX_UNSCORED_PAGES")
        #: FOCUSED_MAX_QUEUED_DOWNLOADS: no request is handed out while this many wait in the downloader (0: no limit)
        self.max_queued = setting(settings, "FOCUSED_MAX_QUEUED_DOWNLOADS")
        self._cap_warned = False
        #: the store's quarantined entries counted in the stats so far
        self._quarantined = 0
        #: a shared store's requests, not pushed yet: they go in one call at the scheduler's next call that
        #: reads the frontier (:meth:`_flush`), so a page's links cost one round trip, not one each
        self._pending: list[tuple[Push, Request]] = []
        self._batched = self.store_name == "redis"
        #: dont_filter requests of this worker of a shared frontier (its keys carry its own prefix)
        self._unfiltered_n = 0
        #: the store's entries dropped by its own cap (Redis), counted in the stats so far
        self._dropped = 0
        #: background re-scores under way (:meth:`rescore_background`)
        self._background = BackgroundRescores(lambda: self._closed, self._count_bad)
        #: no request is handed out while one is open (strict re-scores, focused.signals.hold_frontier)
        self._holds = Holds(self._wake_now)
        #: FOCUSED_MAX_PAGES: nothing is handed out that the budget could not store
        self.budget = PageBudget.of(crawler)
        self.budget.give_back = self.give_back

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        scheduler = cls(crawler, job_dir(crawler.settings))
        setattr(
            crawler, SCHEDULER_ATTR, scheduler
        )  # for focused.spidermiddlewares.scoring's early drop of settled links
        crawler.signals.connect(scheduler._on_rescore, signal=signals.rescore_frontier)
        crawler.signals.connect(scheduler._on_crawldb_opened, signal=signals.crawldb_opened)
        crawler.signals.connect(scheduler._on_hold, signal=signals.hold_frontier)
        if scheduler.store_name == "redis":
            crawler.signals.connect(scheduler._on_idle, signal=scrapy_signals.spider_idle)
        return scheduler

    # -- Scrapy scheduler interface -------------------------------------------------

    def open(self, spider: Spider) -> None:
        self.spider = spider
        self.store = open_store(self.crawler.settings, self.store_name, self.jobdir, spider)
        self._opened = True
        self.stats.set_value("focused/frontier/store", self.store_name)
        if self.jobdir:
            requeued = self.store.requeued
            self.stats.set_value("focused/frontier/requeued", requeued)
            if len(self.store) or requeued:
                logger.info(
                    "Resuming crawl from %s: %d waiting requests (%d were in flight when it stopped and "
                    "will be fetched again)", self.jobdir, len(self.store), requeued,
                )  # fmt: skip
        # the tick also renews a shared store's leases: often enough that a slow download keeps its lease
        renew = getattr(self.store, "renew_seconds", math.inf) / 2
        self._timer = task.LoopingCall(self._tick)
        self._timer.start(max(0.05, min(self.commit_seconds, 1.0, renew)), now=False)

    def close(self, reason: str) -> None:
        self._closed = True
        if self._timer is not None and self._timer.running:
            self._timer.stop()
        if self._wake is not None and self._wake.active():
            self._wake.cancel()
        if not self._opened:
            return
        try:
            if self._store_error is None:
                self._flush()
                self._settle()
            self.store.close()
        except StoreError as exc:  # Redis went away while closing: its leases come back when they expire
            logger.error("%s", exc)
            return
        if self.store_name == "redis":
            self.stats.set_value("focused/frontier/requeued", self.store.requeued)
        if self.jobdir:
            logger.info(
                "Frontier saved in %s: %d waiting, %d in flight; %s",
                self.jobdir, len(self.store), self.store.in_flight, resume_hint(self.crawler.settings),
            )  # fmt: skip

    @_unless_the_store_fails(False)
    def has_pending_requests(self) -> bool:
        self._flush()
        return self._store_error is None and len(self.store) > 0

    @_unless_the_store_fails(0)
    def __len__(self) -> int:
        self._flush()
        return len(self.store)

    @_unless_the_store_fails(False)
    def enqueue_request(self, request: Request) -> bool:
        """Add ``request`` to the frontier; False if it was seen (dropped) or merged into a waiting one.

        With a shared (Redis) store the request waits in this process for the scheduler's next call
        that reads the frontier and goes to Redis with the others of its page in one call; this returns
        True, and one seen or merged is counted and signalled ``request_dropped`` then (:meth:`_flush`).
        """
        if self._closed or self._store_error is not None:
            return False
        payload = request.meta.pop(PAYLOAD_META_KEY, None)
        blob = request.meta.pop(PAYLOAD_BYTES_META_KEY, None)
        if blob is None and payload is not None:
            blob = encode_payload(payload)
        if request.dont_filter:
            if self._unfiltered:  # this worker's own keys: a local count, no round trip
                self._unfiltered_n += 1
                n = self._unfiltered_n
            else:  # kept with the store: a resumed crawl's keys must not reuse a done one's
                n = int(self.store.get_meta("unfiltered", 0)) + 1
                self.store.set_meta("unfiltered", n)
            key = f"unfiltered:{self._unfiltered}{n}"
        else:
            key = self._fingerprint(request).hex()
        push = Push(key, request, request.priority, blob)
        if self._batched:
            self._pending.append((push, request))
            if len(self._pending) >= PUSH_BATCH:
                self._flush()
            return True
        result = self.store.push_many([push])[0]
        if result is PushResult.SEEN:
            self._log_duplicate(request)
            return False
        if result is PushResult.MERGED:
            self.stats.inc_value("focused/frontier/merged")
            return False
        size = len(self.store)
        if self.max_size and size > self.max_size + self.max_size // 100:
            size = self._drop_lowest(size)
        self.stats.inc_value("scheduler/enqueued")
        self.stats.set_value("focused/frontier/size", size)
        self.stats.max_value("focused/frontier/max_size", size)
        return True

    def _flush(self) -> None:
        """Push the requests :meth:`enqueue_request` kept for a shared store, in one call, and count them as
        it counts one at a time; the seen and merged ones are signalled ``request_dropped`` (as the engine
        does when it is told at once). Runs before anything is acknowledged (:meth:`_settle`), so a page's
        links are in Redis before the page is done: a worker killed with links not pushed yet leaves the
        page leased, and another worker fetches it again."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        results = self.store.push_many([push for push, _ in pending])
        new = merged = 0
        dropped: list[Request] = []
        for (_, request), result in zip(pending, results, strict=True):
            if result is PushResult.NEW:
                new += 1
                continue
            if result is PushResult.SEEN:
                self._log_duplicate(request)
            else:
                merged += 1
            dropped.append(request)
        if merged:
            self.stats.inc_value("focused/frontier/merged", merged)
        capped = int(getattr(self.store, "dropped", 0))
        if capped != self._dropped:  # the lowest-priority waiting URLs the store's cap dropped
            self.stats.inc_value("focused/frontier/dropped", capped - self._dropped)
            self._dropped = capped
        if new:
            size = self._size()
            self.stats.inc_value("scheduler/enqueued", new)
            self.stats.set_value("focused/frontier/size", size)
            self.stats.max_value("focused/frontier/max_size", size)
        for request in dropped:
            self.crawler.signals.send_catch_log(scrapy_signals.request_dropped, request=request, spider=self.spider)

    def _size(self) -> int:
        """Waiting entries, for the stats: the figure of the store's last reply if it keeps one (Redis: no call)."""
        known = getattr(self.store, "last_len", None)
        return len(self.store) if known is None else int(known)

    @_unless_the_store_fails(None)
    def next_request(self) -> Request | None:
        if self._store_error is not None:
            return None
        if not self._batched:
            self._settle()
        unscored = unscored_pages(self.crawler)
        if unscored is not None and unscored > self.max_unscored:
            # the links of those pages may outrank every waiting URL: the engine asks again once a page
            # is through (each download's completion schedules its next call)
            self.stats.inc_value("focused/frontier/held_back")
            return None
        if self.max_queued and downloads_waiting(self.crawler, self.max_queued):
            # a slow site's delay keeps them waiting: a request handed out now would be sent after them, its
            # priority stale by then (the engine asks again when a download is through)
            self.stats.inc_value("focused/frontier/held_back_queued")
            return None
        held = self._holds.holding()
        if held is not None:  # a strict re-score's priorities or a model first (the engine is woken after)
            self.stats.inc_value(f"focused/frontier/held_back_{held}")
            return None
        if not self.budget.room():
            return None
        if self._batched:  # the links found so far, then the pages they make done (sent with the pop)
            self._flush()
            self._settle()
        popped = self.store.pop_many(1)
        if self.store.quarantined != self._quarantined:  # bad entries the pop moved aside (one line each)
            self.stats.inc_value("focused/frontier/quarantined", self.store.quarantined - self._quarantined)
            self._quarantined = self.store.quarantined
        if not popped:
            return None
        entry = popped[0]
        self._idle_since = None  # busy again: a later idle spell waits FOCUSED_REDIS_IDLE_SECONDS afresh
        if entry.attempts > 0:
            self.stats.inc_value("focused/frontier/refetched")
        request: Request = entry.item
        request.priority = entry.priority
        self._leases.lease(request, entry.key, self._submitted())
        self.stats.inc_value("scheduler/dequeued")
        self.stats.set_value("focused/frontier/size", self._size())
        return request

    @_unless_the_store_fails(None)
    def give_back(self, requests: Sequence[Request]) -> None:
        """Return popped requests that will not be fetched to the frontier, as waiting (not acknowledged)."""
        keys = [key for key in map(self._leases.forget, requests) if key is not None]
        if keys:
            self.store.give_back_many(keys)
            self.stats.set_value("focused/frontier/size", len(self.store))

    def _drop_lowest(self, size: int) -> int:
        """Over FOCUSED_FRONTIER_MAX_SIZE (by 1%, so that this runs once per 1% of growth): drop the
        lowest-priority waiting URLs down to the cap. Returns the new size."""
        drop = getattr(self.store, "drop_lowest", None)
        if drop is None:  # a store without a cap
            if not self._cap_warned:
                logger.warning("FOCUSED_FRONTIER_MAX_SIZE is not applied by the %s frontier store", self.store_name)
                self._cap_warned = True
            return size
        dropped = drop(size - self.max_size)
        self.stats.inc_value("focused/frontier/dropped", dropped)
        return len(self.store)

    def take_early(self, requests: list[Request], merge: Callable[[Request], bool]) -> tuple[list[Request], int]:
        """A page's links before the engine: those to URLs fetched or being fetched are dropped (counted in
        ``dupefilter/filtered``), those to URLs waiting are merged into their entries as
        :meth:`enqueue_request` would, when ``merge(request)`` (``focused/frontier/merged_early``). Returns
        the requests left for the engine and the count merged; all of them if the store cannot tell
        cheaply (the Redis store). Counted once per page, not per link (a stats call is not free)."""
        settled = getattr(self.store, "settled", None)
        if settled is None or self._store_error is not None:
            return requests, 0
        waiting = self.store.waiting  # type: ignore[attr-defined]  # the stores with settled have it
        out: list[Request] = []
        dropped = merged = 0
        for request in requests:
            if request.dont_filter:
                out.append(request)
                continue
            key = self._fingerprint(request).hex()
            if settled(key):
                dropped += 1
                self._log_duplicate(request, count=False)
            elif merge(request) and waiting(key):
                merged += 1
                self.enqueue_request(request)
            else:
                out.append(request)
        if dropped:
            self.stats.inc_value("dupefilter/filtered", dropped)
        if merged:
            self.stats.inc_value("focused/frontier/merged_early", merged)
        return out, merged

    def _log_duplicate(self, request: Request, count: bool = True) -> None:
        if count:
            self.stats.inc_value("dupefilter/filtered")
        if self.debug_duplicates:
            logger.debug("Filtered duplicate request: %s", request)
        elif not self._logged_duplicate:
            logger.debug("Filtered duplicate request: %s - no more duplicates will be shown", request)
            self._logged_duplicate = True

    # -- leases ----------------------------------------------------------------------

    def _settle(self) -> None:
        """Acknowledge the leased requests the engine is done with, once their pages are durable
        (:class:`~focused.frontier.leases.Leases`)."""
        if self._leases:
            committed = self._crawldb.committed if self._crawldb is not None else math.inf
            keys = self._leases.due(lambda: engine_requests(self.crawler), self._submitted(), committed)
            if keys:
                self.store.ack_many(keys)

    def _submitted(self) -> int:
        return self._crawldb.submitted if self._crawldb is not None else 0

    @_unless_the_store_fails(None)
    def _tick(self) -> None:
        if self._store_error is None:
            self._flush()
            self._settle()
            self.store.maybe_commit()

    # -- a shared frontier -------------------------------------------------------------

    def _on_idle(self) -> None:
        """Keep an idle worker of a shared frontier open while other workers hold leases, and
        ``FOCUSED_REDIS_IDLE_SECONDS`` more: their pages may bring new URLs. Meanwhile it looks for
        work every ``FOCUSED_REDIS_POLL_SECONDS`` (Scrapy's engine alone looks every 5 s)."""
        if self._store_error is not None:
            return
        try:
            self._flush()
            others = cast("RedisStore", self.store).in_flight_elsewhere(self._leases.keys())
            busy = others > 0 or len(self.store) > 0
        except StoreError as exc:
            self._store_failed(exc)
            return
        now = time.monotonic()
        if busy or self._idle_since is None:
            self._idle_since = now
        idle_seconds = setting(self.crawler.settings, "FOCUSED_REDIS_IDLE_SECONDS")
        if busy or now - self._idle_since < idle_seconds:
            logger.debug("Shared frontier: %d waiting, %d in flight at other workers; staying open", len(self), others)
            self._wake_soon()
            raise DontCloseSpider

    def _wake_soon(self) -> None:
        """Have the engine look for requests again in ``FOCUSED_REDIS_POLL_SECONDS``: if the frontier is
        still empty it goes idle again (and here again), else it fetches."""
        delay = max(0.01, setting(self.crawler.settings, "FOCUSED_REDIS_POLL_SECONDS"))
        self._wake = wake_later(self.crawler, delay, self._wake)

    def _store_failed(self, exc: StoreError) -> None:
        """The store gave up (Redis gone for longer than its retry time): one error line, and the crawl stops."""
        if self._store_error is not None:
            return
        self._store_error = exc
        logger.error("%s", exc)
        self.stats.set_value("focused/frontier/error", str(exc))
        try:
            engine = self.crawler.engine
        except RuntimeError:  # no engine (a scheduler driven by hand)
            return
        deferred_from_coro(engine.close_spider_async(reason="frontier_unavailable"))

    def _on_crawldb_opened(self, db: CrawlDB) -> None:
        self._crawldb = db

    # -- re-scoring -------------------------------------------------------------------

    def rescore(self, scorer: Scorer) -> int:
        """Re-evaluate every waiting request with ``scorer``, here and now; returns how many changed.

        The store's re-score job run inline (:func:`~focused.frontier.rescore.run_job`): the same job as
        :meth:`rescore_background`'s, read, scored and applied on this thread."""
        self._flush()  # the requests not pushed yet are re-scored too
        before = self.store.bad_payloads
        job = self.store.rescore_start()
        rescorer = DecodingRescorer(scorer)
        with malloc.scratch():  # the decoding's and the model's temporaries from the heaps
            changed = run_job(job, rescorer, between=self.store.maybe_commit)
        self._count_bad(rescorer.bad + self.store.bad_payloads - before)
        self.stats.inc_value("focused/frontier/rescored", len(self.store))
        return changed

    def rescore_background(self, scorer: Scorer) -> Deferred[int]:
        """Re-evaluate every request waiting now with ``scorer`` off the reactor thread; fires with how many
        changed.

        The store fixes the waiting entries now (:meth:`~focused.frontier.store.FrontierStore.rescore_start`);
        a thread reads their payloads, decodes them and runs ``scorer`` (which must not depend on state the
        crawl changes meanwhile: the apprentice passes a frozen copy); the new priorities are then written
        here, a slice per reactor turn, to the entries that still wait and that no push merged into meanwhile
        (the merge's priority stands, as if it had come after the re-score). Several re-scores apply in the
        order they were asked for (:class:`~focused.core.rescoring.BackgroundRescores`). With
        ``FOCUSED_MAX_UNSCORED_PAGES`` 0 (strict best-first) no request is handed out while one is under way, so
        the fetch order is that of a re-score done at once.
        """
        self._flush()
        self.stats.inc_value("focused/frontier/rescored", len(self.store))
        rescored = self._background.start(self.store, scorer)
        if not self.max_unscored:  # strict best-first: the re-scored priorities first
            self._holds.hold("rescoring", rescored)
        return rescored

    def _count_bad(self, bad: int) -> None:
        if bad:
            self.stats.inc_value("focused/rescore/bad_payloads", bad)
            logger.error("Re-score skipped %d waiting requests with damaged payloads (their priority is kept)", bad)

    def _wake_now(self) -> None:
        """Have the engine ask for a request now (a hold kept them back; no download may be in flight to make
        it ask)."""
        if not self._closed:
            wake_now(self.crawler)

    def _on_hold(self, until: Deferred[Any], reason: str = "training") -> None:
        """The :data:`focused.signals.hold_frontier` handler: no request until ``until`` fires."""
        self._holds.hold(reason, until)

    def _on_rescore(self, scorer: Scorer, background: Callable[[Deferred[int]], None] | None = None) -> int | None:
        """The :data:`focused.signals.rescore_frontier` handler. With ``background`` (a signal handler may not
        return a Deferred) the re-score runs off the reactor thread and ``background`` gets its Deferred."""
        if background is not None and self._store_error is None:
            background(self.rescore_background(scorer))
            return None
        return self.rescore(scorer)
