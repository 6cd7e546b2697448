"""The Scrapy adapter of shared learning (:mod:`focused.learning.apprentice.shared`): workers of one Redis frontier.

:class:`SharedFeedback` replaces :class:`~focused.extensions.apprentice.base.RelevanceFeedback`'s
own loop when the frontier is in Redis (``FOCUSED_APPRENTICE_SHARED``, on by
default): the links of every fetched page and the critic's verdict on every
page go to Redis; on every page and every ``FOCUSED_APPRENTICE_POLL_SECONDS``
the worker installs a newer model published there, and, if it holds the
trainer's lock (``FOCUSED_APPRENTICE_LOCK_SECONDS``), trains the batches of all
workers' pages that are due, in a thread, publishes the model and re-scores the
shared frontier once. The apprentice's state is in Redis, so no JOBDIR
checkpoint is written. Redis unreachable: one warning, the crawl goes on with
the current model (the frontier store decides when to give up).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import redis
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.task import LoopingCall, deferLater
from twisted.internet.threads import deferToThread

from focused import malloc
from focused.extensions.apprentice.base import RelevanceFeedback
from focused.learning.apprentice.shared import SharedLearning, Trained
from focused.settings.access import setting

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

    from focused.learning.apprentice.payload import LinkPayload
    from focused.signals import LabelledPage
    from focused.strategies.apprentice import ApprenticeStrategy

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: trainings a closing worker runs at most (the batches still due of all workers)
MAX_FINAL_BATCHES = 1000
#: a closing worker looks this often whether the trainer holding the lock trained the batches due
FINAL_WAIT = 0.2


def open_shared(crawler: Crawler, strategy: ApprenticeStrategy) -> SharedFeedback | None:
    """The shared-learning extension when the frontier is in Redis and the apprentice learns, else ``None``."""
    from focused.frontier.settings import redis_prefix, uses_redis

    settings = crawler.settings
    if not setting(settings, "FOCUSED_APPRENTICE_SHARED") or not strategy.online.learn:
        return None
    if not uses_redis(settings):
        return None
    from scrapy_redis.connection import get_redis_from_settings

    shared = SharedLearning(
        get_redis_from_settings(settings),
        strategy.online,
        prefix=redis_prefix(settings, getattr(crawler.spidercls, "name", None) or "focused"),
        lock_seconds=setting(settings, "FOCUSED_APPRENTICE_LOCK_SECONDS"),
    )
    return SharedFeedback(
        crawler,
        strategy,
        shared,
        setting(settings, "FOCUSED_APPRENTICE_POLL_SECONDS"),
    )


class SharedFeedback(RelevanceFeedback):
    """Shared learning for one worker (module docstring)."""

    def __init__(
        self, crawler: Crawler, strategy: ApprenticeStrategy, shared: SharedLearning, poll_seconds: float
    ) -> None:
        super().__init__(crawler, strategy)
        self.checkpoints = None  # the apprentice's state is in Redis
        self.shared = shared
        self.poll_seconds = max(0.05, poll_seconds)
        self._loop = LoopingCall(self.tick)
        self._down = False
        self._broken = False
        self._waited = 0.0
        strategy.observe_links = self._observe_links

    def _guard(self, fn: Callable[[], T]) -> T | None:
        """``fn()``; Redis errors become one warning per outage (learning waits, the crawl goes on)."""
        try:
            result = fn()
        except redis.RedisError as exc:
            if not self._down:
                logger.warning(
                    "Shared apprentice %s: Redis unreachable (%s); learning waits, the apprentice keeps its model",
                    self.shared.prefix, exc,
                )  # fmt: skip
            self._down = True
            return None
        if self._down:
            logger.info("Shared apprentice %s: Redis is back", self.shared.prefix)
            self._down = False
        return result

    def _observe_links(
        self, links: Sequence[str], payloads: Sequence[LinkPayload], blobs: Sequence[bytes] | None = None
    ) -> None:
        self._guard(lambda: self.shared.observe_links(links, payloads, blobs))

    def spider_opened(self) -> None:
        self._guard(self._pick_up)  # a model published before this worker started
        self._loop.start(self.poll_seconds, now=False)

    def page_labelled(self, page: LabelledPage) -> None:
        self._pages = page.fetch_order
        self._guard(lambda: self.shared.observe_page((page.url, *page.aliases), page.relevance))
        self.tick()

    def tick(self) -> None:
        """Install a newer model from Redis; as the leader, start the training of a batch that is due."""
        if self.closing:
            return
        if self.training:  # keep the lock while training
            if self.shared.leader:
                self._guard(self.shared.acquire)
            return
        self._guard(self._step)

    def _step(self) -> None:
        self._pick_up()
        if self.shared.acquire() and self.shared.due():
            self._in_flight = self._train_shared()

    def _pick_up(self) -> None:
        model = self.shared.poll()
        if model is None:
            return
        self._install(model)
        logger.info(
            "Shared apprentice v%d installed from Redis after %d pages: %d instances, %.0f%% HIGH",
            model.version, self._pages, model.n_instances, 100 * model.high_rate,
        )  # fmt: skip

    def _train_shared(self) -> Deferred[Any]:
        self.training = True
        started = time.perf_counter()
        d = deferToThread(self._train_in_thread)
        d.addCallback(self._published, started)
        d.addErrback(self._failed)
        return d

    def _train_in_thread(self) -> Trained:
        """In the training thread, with the fit's temporaries from the heaps (:func:`focused.malloc.scratch`)."""
        with malloc.scratch():
            return self.shared.train_batch()

    def _published(self, result: Trained, started: float) -> None:
        self.training = False
        if result.batch < 0:
            return
        model = result.model
        self.stats.inc_value("focused/apprentice/instances", result.added)
        self.stats.inc_value("focused/apprentice/batches_trained")
        self.stats.inc_value("focused/apprentice/train_ms", round(1000 * (time.perf_counter() - started)))
        logger.info(
            "Shared apprentice: batch %d of all workers trained here (%d new instances, %d in all): %s",
            result.batch, result.added, self.online.learner.n_instances,
            f"published v{model.version}" if model is not None else "not ready yet",
        )  # fmt: skip
        if model is None:
            return
        first = self._install(model)
        if not self.closing:  # the scheduler has closed its store by then
            self._rescore_frontier(f"Apprentice v{model.version} {'switched in' if first else 'retrained'}")

    def _failed(self, failure: Failure) -> None:
        self._broken = True  # a closing worker stops training
        if failure.check(redis.RedisError):
            self.training = False
            self._guard(lambda: failure.raiseException())
            return
        super()._failed(failure)

    async def spider_closed(self) -> None:
        """Finish the training under way; then, leader or the lock free, train the batches still due."""
        self.closing = True
        if self._loop.running:
            self._loop.stop()
        if self.training and self._in_flight is not None:
            await maybe_deferred_to_future(self._in_flight)  # its errback logs a failure: this never raises
        finishing = self._finish(MAX_FINAL_BATCHES)
        if finishing is not None:
            await maybe_deferred_to_future(finishing)

    def _finish(self, left: int) -> Deferred[Any] | None:
        """Train the batches still due (leader, or the lock free); wait for a trainer that holds the lock.

        A trainer that died holding the lock loses it after its TTL: this worker
        then trains the last batches, so every batch is trained once.
        """
        if left > 0 and not (self._down or self._broken):
            leader = self._guard(self.shared.acquire)
            due = self._guard(self.shared.due)
            if leader and due:
                d = self._train_shared()
                d.addCallback(lambda _: self._finish(left - 1))
                return d
            if due and not leader and self._waited < self.shared.lock_ms / 1000 + 1:
                from twisted.internet import reactor  # the installed one (Scrapy installs it first)

                self._waited += FINAL_WAIT
                return deferLater(reactor, FINAL_WAIT, self._finish, left)
        self._guard(self.shared.release)
        self.shared.client.close()
        return None
