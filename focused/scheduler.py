"""A Scrapy scheduler whose frontier is globally best-first and re-scorable.

Scrapy's default scheduler keeps one queue per priority value (and, with
``DownloaderAwarePriorityQueue``, per domain), cannot change the priority of a
waiting request, and drops a URL found again by another parent. This scheduler
wraps :class:`focused.frontier.Frontier` instead:

* one heap over every waiting request, best priority first;
* a URL found again while waiting merges the new parent's priority
  (``FOCUSED_PARENT_AGGREGATION``) instead of being dropped;
* other components re-score the waiting requests by sending the
  :data:`focused.signals.rescore_frontier` signal with a ``scorer``;
* with ``JOBDIR`` the waiting requests, their priorities and payloads are
  saved on close and restored on open (the dupefilter keeps its own state).

A request may carry a compact payload (for example hashed link features) in
``request.meta["focused_payload"]``; the scheduler moves it out of the meta
into the frontier entry so it is not serialized with every request.
"""

from __future__ import annotations

import logging
import os
import pickle
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.http import Request
from scrapy.utils.job import job_dir
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.request import request_from_dict

from focused import signals
from focused.frontier import Entry, Frontier

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.dupefilters import BaseDupeFilter
    from scrapy.spiders import Spider

logger = logging.getLogger(__name__)

PAYLOAD_META_KEY = "focused_payload"
STATE_FILE = "focused-frontier.pickle"
#: Bumped when the saved frontier's layout changes.
STATE_VERSION = 1

#: A re-scoring function: given the waiting requests and, for each, the payloads
#: of its parents, return each request's new priority (or None to keep it).
Scorer = Callable[[list[Request], list[list[Any]]], Sequence[int | None]]


class FocusedScheduler:
    """Best-first scheduler over a :class:`~focused.frontier.Frontier`."""

    def __init__(self, crawler: Crawler, dupefilter: BaseDupeFilter, jobdir: str | None = None) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.stats = crawler.stats
        self.df = dupefilter
        self.jobdir = jobdir
        self.frontier: Frontier[Request] = Frontier(
            aggregation=settings.get("FOCUSED_PARENT_AGGREGATION", "max"),
            tiebreak=settings.get("FOCUSED_TIEBREAK", "fifo"),
            seed=settings.getint("FOCUSED_SEED", 0),
        )
        self._fingerprint = crawler.request_fingerprinter.fingerprint
        self._unfiltered = 0
        self.spider: Spider | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        dupefilter_cls = load_object(crawler.settings["DUPEFILTER_CLASS"])
        scheduler = cls(crawler, build_from_crawler(dupefilter_cls, crawler), job_dir(crawler.settings))
        crawler.signals.connect(scheduler._on_rescore, signal=signals.rescore_frontier)
        return scheduler

    # -- Scrapy scheduler interface -------------------------------------------------

    def open(self, spider: Spider) -> Any:
        self.spider = spider
        if self.jobdir:
            restored = self._load_state()
            if restored:
                logger.info("Resuming crawl: %d waiting requests restored from %s", restored, self.jobdir)
        return self.df.open()

    def close(self, reason: str) -> Any:
        if self.jobdir:
            self._save_state()
        return self.df.close(reason)

    def has_pending_requests(self) -> bool:
        return len(self.frontier) > 0

    def __len__(self) -> int:
        return len(self.frontier)

    def enqueue_request(self, request: Request) -> bool:
        payload = request.meta.pop(PAYLOAD_META_KEY, None)
        if request.dont_filter:
            self._unfiltered += 1
            key = f"unfiltered:{self._unfiltered}"
        else:
            key = self._fingerprint(request).hex()
            if key in self.frontier:
                self.frontier.push(key, request, request.priority, payload)
                self.stats.inc_value("focused/frontier/merged")
                return False
            if self.df.request_seen(request):
                if self.spider is not None:
                    self.df.log(request, self.spider)
                return False
        self.frontier.push(key, request, request.priority, payload)
        self.stats.inc_value("scheduler/enqueued")
        self.stats.set_value("focused/frontier/size", len(self.frontier))
        self.stats.max_value("focused/frontier/max_size", len(self.frontier))
        return True

    def next_request(self) -> Request | None:
        entry = self.frontier.pop()
        if entry is None:
            return None
        self.stats.inc_value("scheduler/dequeued")
        self.stats.set_value("focused/frontier/size", len(self.frontier))
        request = entry.item
        request.priority = entry.priority
        return request

    # -- re-scoring -------------------------------------------------------------------

    def rescore(self, scorer: Scorer) -> int:
        """Re-evaluate every waiting request with ``scorer``; returns how many changed."""

        def score_entries(entries: list[Entry[Request]]) -> Sequence[int | None]:
            return scorer([e.item for e in entries], [e.payloads for e in entries])

        changed = self.frontier.rescore(score_entries)
        self.stats.inc_value("focused/frontier/rescored", len(self.frontier))
        return changed

    def _on_rescore(self, scorer: Scorer) -> int:
        return self.rescore(scorer)

    # -- JOBDIR persistence -----------------------------------------------------------

    def _state_path(self) -> Path:
        assert self.jobdir
        return Path(self.jobdir, STATE_FILE)

    def _save_state(self) -> None:
        spider = self.spider
        state = {
            "version": STATE_VERSION,
            "frontier": self.frontier.state(lambda request: request.to_dict(spider=spider)),
            "unfiltered": self._unfiltered,
        }
        path = self._state_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".frontier-")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(state, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        logger.info("Saved %d waiting requests to %s", len(self.frontier), path)

    def _load_state(self) -> int:
        path = self._state_path()
        if not path.exists():
            return 0
        with path.open("rb") as fh:
            state = pickle.load(fh)
        if state.get("version") != STATE_VERSION:
            raise RuntimeError(f"{path} was written by another version of focused; remove it to start afresh")
        spider = self.spider
        self._unfiltered = int(state.get("unfiltered", 0))
        # The file stays until the next close overwrites it: after a crash the
        # resumed frontier is still there (at worst a few pages are fetched twice).
        return self.frontier.restore(state["frontier"], lambda data: request_from_dict(data, spider=spider))
