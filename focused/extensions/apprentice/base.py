"""The extension that drives the apprentice's online relevance feedback (paper §2.2, §3.7).

On every labelled page it tells the apprentice (new training instances); when a
batch of ``FOCUSED_APPRENTICE_BATCH`` pages is complete it trains in a thread
(``deferToThread``) while the crawl goes on with the frozen model, then swaps
the new model in and re-scores every waiting URL through the scheduler
(:data:`focused.signals.rescore_frontier`). With ``JOBDIR`` the apprentice
(learner, current model, pending links) is checkpointed after every batch, in
the training thread, and on close (:mod:`focused.learning.apprentice.checkpoint`, no
pickle); a resumed crawl restores the last checkpoint and re-scores the
waiting URLs with its model, so a kill costs at most one batch of learning.

This is the loop of one process, and the base of the shared one: with a Redis
frontier the workers learn together instead
(:class:`focused.extensions.apprentice.shared.SharedFeedback`, ``FOCUSED_APPRENTICE_SHARED``);
:class:`focused.extensions.apprentice.ApprenticeFeedback` picks one.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.job import job_dir
from twisted.internet.defer import Deferred, DeferredList
from twisted.internet.threads import deferToThread

from focused import malloc, signals
from focused.errors import ConfigError
from focused.learning.apprentice.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from focused.learning.apprentice.model import ApprenticeModel
from focused.settings.access import setting
from focused.strategies.apprentice import ApprenticeStrategy

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.python.failure import Failure

    from focused.signals import LabelledPage

logger = logging.getLogger(__name__)

CHECKPOINT_DIR = "apprentice"
#: What focused wrote before checkpoints existed (pickles): never loaded.
OLD_FILES = ("apprentice-state.pickle", "apprentice.joblib")


class RelevanceFeedback:
    """Feed the apprentice, retrain it per batch off the reactor thread, re-score the frontier."""

    def __init__(self, crawler: Crawler, strategy: ApprenticeStrategy) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.online = strategy.online
        jobdir = job_dir(crawler.settings)
        self.checkpoints = Path(jobdir, CHECKPOINT_DIR) if jobdir and self.online.learn else None
        self.resumed = False
        self.closing = False
        self.training = False
        self._in_flight: Deferred[Any] | None = None
        self._in_rescore: Deferred[Any] | None = None
        self.switched_in_at: int | None = None
        self._pages = 0
        self._refreshed = 0  # pages at the last refresh of exploration bonuses and sibling terms
        #: with an exploration bonus or sibling feedback, the frontier is re-scored every this many pages
        self.refresh_pages = setting(crawler.settings, "FOCUSED_APPRENTICE_REFRESH_PAGES")
        #: ... up to this many pages (0: the whole crawl); later the learner's retrains re-score, with every term
        self.refresh_until = setting(crawler.settings, "FOCUSED_APPRENTICE_REFRESH_UNTIL")
        #: FOCUSED_APPRENTICE_WAIT: the scheduler holds its requests while a batch trains
        self.wait = setting(crawler.settings, "FOCUSED_APPRENTICE_WAIT")

    def connect(self) -> None:
        """Restore the last checkpoint (with JOBDIR) and listen to the crawl's signals."""
        if self.checkpoints is not None:
            self._load_state()
        self.crawler.signals.connect(self.page_labelled, signal=signals.page_labelled)
        self.crawler.signals.connect(self.spider_opened, signal=scrapy_signals.spider_opened)
        self.crawler.signals.connect(self.spider_closed, signal=scrapy_signals.spider_closed)

    def spider_opened(self) -> None:
        if self.online.model is None:
            return
        self._record_model(self.online.model)
        if self.resumed:  # the saved priorities may predate the last model
            self._pages = int(self.stats.get_value("focused/pages", 0))
            self._rescore_frontier(f"Resumed apprentice v{self.online.model.version}")

    def _count_dropped(self, stat: str, dropped: int, what: str, setting: str, bound: int, which: str) -> None:
        """``focused/apprentice/<stat>`` = ``dropped`` (what a bound of the apprentice's memory dropped so far),
        said once in the log when it first bites."""
        if not dropped:
            return
        key = f"focused/apprentice/{stat}"
        if not self.stats.get_value(key):
            logger.info("The apprentice keeps %d %s at most (%s): %s", bound, what, setting, which)
        self.stats.set_value(key, dropped)

    def page_labelled(self, page: LabelledPage) -> None:
        self._pages = page.fetch_order
        batch_done = self.online.observe_page((page.url, *page.aliases), page.relevance)
        self._count_dropped(
            "pending_dropped",
            self.online.pending_dropped,
            "links waiting for their targets",
            "FOCUSED_APPRENTICE_MAX_PENDING",
            self.online.max_pending,
            "those to the targets met longest ago are dropped",
        )
        self._count_dropped(
            "instances_dropped",
            self.online.learner.dropped,
            "training instances",
            "FOCUSED_APPRENTICE_MAX_INSTANCES",
            self.online.learner.max_instances,
            "the oldest are dropped",
        )
        if batch_done and not self.training and (self.checkpoints is not None or not self._engine_closing()):
            self._in_flight = self._train_batch()
        elif self._refresh_due() and self._moving_terms():
            self._refreshed = self._pages
            self.stats.inc_value("focused/apprentice/refreshes")
            if not self.closing:
                self._rescore_frontier("Exploration bonuses and sibling terms refreshed")

    def _engine_closing(self) -> bool:
        """Whether the engine is closing the spider (the pages in flight are still labelled then): a model
        trained now would score no page of this crawl, and its fit's temporaries made the crawl process's
        peak memory. With JOBDIR the last batch is trained and saved at ``spider_closed`` all the same.
        Scrapy has no signal for it: its slot's ``closing``, set when ``close_spider`` starts."""
        slot = getattr(self.crawler.engine, "_slot", None)
        return getattr(slot, "closing", None) is not None

    def _refresh_due(self) -> bool:
        """``refresh_pages`` since the last refresh, within the first ``refresh_until`` pages."""
        within = not self.refresh_until or self._pages <= self.refresh_until
        return within and self._pages >= self._refreshed + self.refresh_pages

    def _moving_terms(self) -> bool:
        """Terms of a link's score that change between models: exploration bonuses, sibling feedback."""
        return self.online.explore is not None or self.online.siblings is not None

    def _train_batch(self) -> Deferred[Any]:
        """Train on the buffered instances in a thread; the callback swaps the model in."""
        features, relevances = self.online.take_batch()
        self.training = True
        started = time.perf_counter()
        d = deferToThread(self._train_and_checkpoint, features, relevances)
        d.addCallback(self._trained, len(features), started)
        d.addErrback(self._failed)
        if self.wait:  # released once the model is in and its re-score has started
            self.crawler.signals.send_catch_log(signals.hold_frontier, until=d)
        return d

    def _train_and_checkpoint(self, features: list[Any], relevances: Any) -> ApprenticeModel | None:
        """In the training thread: learn the batch, then checkpoint (the learner is not changing now)."""
        with malloc.scratch():  # the fit's temporaries from the heaps, not faulted in afresh
            model = self.online.train(features, relevances)
        if self.checkpoints is not None:
            try:
                save_checkpoint(self.checkpoints, self.online, model if model is not None else self.online.model)
            except OSError as exc:
                logger.error("Could not checkpoint the apprentice in %s: %s", self.checkpoints, exc)
        return model

    def _trained(self, model: ApprenticeModel | None, added: int, started: float) -> None:
        self.training = False
        self.stats.inc_value("focused/apprentice/instances", added)
        self.stats.inc_value("focused/apprentice/train_ms", round(1000 * (time.perf_counter() - started)))
        if model is None:
            logger.info(
                "Apprentice not ready yet: %d instances (needs %d in both buckets); links keep %s",
                self.online.learner.n_instances, self.online.learner.min_instances,
                "the critic's views of page and anchor" if self.online.snippet_critic else "Pr(c*|u)",
            )  # fmt: skip
            return
        first = self._install(model)
        if not self.closing:  # the scheduler has closed its store by then
            what = "switched in" if first else "retrained"
            self._rescore_frontier(f"Apprentice v{model.version} {what}")

    def _install(self, model: ApprenticeModel) -> bool:
        """Switch ``model`` in and record it; whether it is the first model of the crawl."""
        first = self.online.model is None
        self.online.install(model)
        if first:
            self.switched_in_at = self._pages
            self.stats.set_value("focused/apprentice/switched_in_at", self._pages)
        self._record_model(model)
        return first

    def _rescore_frontier(self, what: str) -> None:
        """Re-score the waiting URLs off the reactor thread (the scheduler's background re-score), with a
        frozen copy of the apprentice: what the crawl learns meanwhile does not change the new priorities."""
        model = self.online.model
        started = time.perf_counter()
        frozen = self.online.frozen()
        pending: list[Deferred[int]] = []
        results = self.crawler.signals.send_catch_log(
            signals.rescore_frontier, scorer=frozen.rescore, background=pending.append
        )
        changed = sum(r for _, r in results if isinstance(r, int))
        if not pending:
            self._rescored(what, model, started, changed)
            return
        self._in_rescore = DeferredList(pending, consumeErrors=True)
        self._in_rescore.addCallback(self._background_rescored, what, model, started, changed)

    def _background_rescored(
        self, results: list[tuple[bool, Any]], what: str, model: ApprenticeModel | None, started: float, changed: int
    ) -> None:
        for ok, result in results:
            if ok:
                changed += int(result)
            else:
                logger.error("Re-scoring the frontier failed; waiting URLs keep their priorities:\n%s",
                             result.getTraceback())  # fmt: skip
        self._rescored(what, model, started, changed)

    def _rescored(self, what: str, model: ApprenticeModel | None, started: float, changed: int) -> None:
        seconds = time.perf_counter() - started
        self.stats.inc_value("focused/apprentice/rescore_ms", round(1000 * seconds))
        if model is None:  # an exploration refresh before switch-in
            logger.info(
                "%s after %d pages: re-scored the frontier in %.2fs (%d changed)", what, self._pages, seconds, changed
            )
            return
        logger.info(
            "%s after %d pages: %d instances, %.0f%% HIGH (threshold %.3g); "
            "re-scored the frontier in %.2fs (%d priorities changed)",
            what, self._pages, model.n_instances, 100 * model.high_rate, model.threshold, seconds, changed,
        )  # fmt: skip

    def _failed(self, failure: Failure) -> None:
        self.training = False
        logger.error(
            "Apprentice training failed; the crawl goes on with the previous model:\n%s", failure.getTraceback()
        )

    def _record_model(self, model: ApprenticeModel) -> None:
        self.stats.set_value("focused/apprentice/version", model.version)
        self.stats.set_value("focused/apprentice/n_instances", model.n_instances)
        self.stats.set_value("focused/apprentice/high_rate", round(model.high_rate, 4))
        self.stats.set_value("focused/apprentice/threshold", round(model.threshold, 4))

    # -- JOBDIR ------------------------------------------------------------------------

    async def spider_closed(self) -> None:
        """With JOBDIR: finish the training under way, learn the last instances and checkpoint them.

        Scrapy awaits this coroutine, so the checkpoint holds every instance
        the crawl produced, however fast it was.
        """
        if self.checkpoints is None:
            return
        self.closing = True
        if self.training and self._in_flight is not None:
            await maybe_deferred_to_future(self._in_flight)  # its errback logs a failure: this never raises
        await maybe_deferred_to_future(self._train_batch())
        logger.info("Saved the apprentice (%d instances) in %s", self.online.learner.n_instances, self.checkpoints)

    def _load_state(self) -> None:
        assert self.checkpoints is not None
        jobdir = self.checkpoints.parent
        old = [name for name in OLD_FILES if (jobdir / name).exists()]
        if old:
            raise ConfigError(
                f"JOBDIR {jobdir} was written by an older focused ({old[0]} is a pickle, which is never "
                "loaded): start the crawl with a new JOBDIR"
            )
        try:
            model = load_checkpoint(self.checkpoints, self.online)
        except CheckpointError as exc:
            raise ConfigError(str(exc)) from exc
        if not (self.checkpoints / "current.json").exists():
            return
        self.resumed = True
        logger.info(
            "Resumed the apprentice: %d instances, model %s", self.online.learner.n_instances,
            f"v{model.version}" if model else "not switched in yet",
        )  # fmt: skip
