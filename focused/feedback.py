"""The extension that drives the apprentice's online relevance feedback (paper §2.2, §3.7).

On every labelled page it tells the apprentice (new training instances); when a
batch of ``FOCUSED_APPRENTICE_BATCH`` pages is complete it trains in a thread
(``deferToThread``) while the crawl goes on with the frozen model, then swaps
the new model in and re-scores every waiting URL through the scheduler
(:data:`focused.signals.rescore_frontier`). With ``JOBDIR`` the learner and the
pending links are saved on close and restored on start.
"""

from __future__ import annotations

import logging
import os
import pickle
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.job import job_dir
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread

from focused import signals
from focused.learning.apprentice import Apprentice, ApprenticeModel
from focused.runtime import CrawlRuntime
from focused.strategies import ApprenticeStrategy

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request
    from twisted.python.failure import Failure

    from focused.pipelines import LabelledPage

logger = logging.getLogger(__name__)

LEARNER_FILE = "apprentice.joblib"
STATE_FILE = "apprentice-state.pickle"


class RelevanceFeedback:
    """Feed the apprentice, retrain it per batch off the reactor thread, re-score the frontier."""

    def __init__(self, crawler: Crawler, strategy: ApprenticeStrategy) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.online = strategy.online
        self.jobdir = job_dir(crawler.settings)
        self.training = False
        self._in_flight: Deferred[Any] | None = None
        self.switched_in_at: int | None = None
        self._pages = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        strategy = CrawlRuntime.of(crawler).strategy
        if not isinstance(strategy, ApprenticeStrategy):
            raise NotConfigured
        ext = cls(crawler, strategy)
        crawler.signals.connect(ext.page_labelled, signal=signals.page_labelled)
        crawler.signals.connect(ext.spider_opened, signal=scrapy_signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=scrapy_signals.spider_closed)
        return ext

    def spider_opened(self) -> None:
        if self.jobdir and self.online.learn:
            self._load_state()
        if self.online.model is not None:
            self._record_model(self.online.model)

    def page_labelled(self, page: LabelledPage) -> None:
        self._pages = page.fetch_order
        batch_done = self.online.observe_page((page.url, *page.aliases), page.relevance)
        if batch_done and not self.training:
            self._in_flight = self._train_batch()

    def _train_batch(self) -> Deferred[Any]:
        """Train on the buffered instances in a thread; the callback swaps the model in."""
        features, relevances = self.online.take_batch()
        self.training = True
        started = time.perf_counter()
        d = deferToThread(self.online.train, features, relevances)
        d.addCallback(self._trained, len(features), started)
        d.addErrback(self._failed)
        return d

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
        first = self.online.model is None
        self.online.install(model)
        if first:
            self.switched_in_at = self._pages
            self.stats.set_value("focused/apprentice/switched_in_at", self._pages)
        self._record_model(model)
        started = time.perf_counter()
        results = self.crawler.signals.send_catch_log(signals.rescore_frontier, scorer=self._rescore)
        changed = sum(r for _, r in results if isinstance(r, int))
        seconds = time.perf_counter() - started
        self.stats.inc_value("focused/apprentice/rescore_ms", round(1000 * seconds))
        logger.info(
            "Apprentice v%d %s after %d pages: %d instances, %.0f%% HIGH (threshold %.3g); "
            "re-scored the frontier in %.2fs (%d priorities changed)",
            model.version, "switched in" if first else "retrained", self._pages, model.n_instances,
            100 * model.high_rate, model.threshold, seconds, changed,
        )  # fmt: skip

    def _failed(self, failure: Failure) -> None:
        self.training = False
        logger.error(
            "Apprentice training failed; the crawl goes on with the previous model:\n%s", failure.getTraceback()
        )

    def _rescore(self, requests: list[Request], payloads: list[list[Any]]) -> list[int | None]:
        return self.online.rescore(payloads)

    def _record_model(self, model: ApprenticeModel) -> None:
        self.stats.set_value("focused/apprentice/version", model.version)
        self.stats.set_value("focused/apprentice/n_instances", model.n_instances)
        self.stats.set_value("focused/apprentice/high_rate", round(model.high_rate, 4))
        self.stats.set_value("focused/apprentice/threshold", round(model.threshold, 4))

    # -- JOBDIR ------------------------------------------------------------------------

    def spider_closed(self) -> Deferred[None] | None:
        """With JOBDIR: finish the training under way, learn the last instances, then save.

        Scrapy waits for the returned Deferred, so the saved learner and model
        hold every instance the crawl produced, however fast it was.
        """
        if not (self.jobdir and self.online.learn):
            return None
        done: Deferred[None] = Deferred()
        if self.training and self._in_flight is not None:
            self._in_flight.addBoth(lambda result: done.callback(None))
        else:
            done.callback(None)
        done.addCallback(lambda _: self._train_batch())
        done.addCallback(lambda _: self._save_state())
        return done

    def _save_state(self) -> None:
        assert self.jobdir
        folder = Path(self.jobdir)
        folder.mkdir(parents=True, exist_ok=True)
        self.online.learner.save(folder / LEARNER_FILE)
        state = {"online": self.online.state(), "model": self.online.model}
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".apprentice-")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(state, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, folder / STATE_FILE)
        logger.info("Saved the apprentice (%d instances) to %s", self.online.learner.n_instances, folder)

    def _load_state(self) -> None:
        assert self.jobdir
        folder = Path(self.jobdir)
        if not (folder / STATE_FILE).exists():
            return
        with (folder / STATE_FILE).open("rb") as fh:
            state = pickle.load(fh)
        self.online.learner = Apprentice.load(folder / LEARNER_FILE)
        self.online.restore(state["online"])
        if state.get("model") is not None:
            self.online.install(state["model"])
        logger.info(
            "Resumed the apprentice: %d instances, model %s", self.online.learner.n_instances,
            f"v{self.online.model.version}" if self.online.model else "not switched in yet",
        )  # fmt: skip
