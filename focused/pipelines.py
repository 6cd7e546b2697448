"""The item pipeline that labels every fetched page with the critic and stores it.

With ``JOBDIR`` a resumed crawl continues where it stopped: the crawl
database chosen by the first run (recorded in ``JOBDIR/focused-crawl.json``)
is continued, not restarted, and the page count, fetch order and harvest
resume from what it holds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import DropItem
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.job import job_dir

from focused import signals
from focused.core.budget import PageBudget
from focused.core.runtime import CrawlRuntime
from focused.crawldb import CrawlDB, CrawlDBError, check_crawl_db
from focused.crawldb.jobfile import read_job, write_job
from focused.errors import ConfigError
from focused.items import PageItem
from focused.paths import project_path
from focused.settings import defaults
from focused.settings.access import setting
from focused.signals import LabelledPage

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class CriticPipeline:
    """Label pages with Pr(c*|page) and the predicted class; write the crawl database.

    Fetch order counts labelled pages from 1. The page's text and HTML leave
    the item here, so feed exports carry the labels, not the page.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.runtime = CrawlRuntime.of(crawler)
        #: FOCUSED_MAX_PAGES: every new page takes a place in it before it is stored
        self.budget = PageBudget.of(crawler)
        self.db_template = setting(crawler.settings, "FOCUSED_DB") or ""
        self.commit_every = setting(crawler.settings, "FOCUSED_DB_COMMIT_EVERY")
        self.commit_seconds = setting(crawler.settings, "FOCUSED_DB_COMMIT_SECONDS")
        self.jobdir = job_dir(crawler.settings)
        self.job: dict[str, Any] = {}
        self.store_html = setting(crawler.settings, "FOCUSED_DB_STORE_HTML")
        self.db: CrawlDB | None = None
        self.pages = 0
        self.fetch_order = 0
        self.relevant = 0
        self.relevance_sum = 0.0
        self.continued = False
        self.writer_failed = False
        self._check_db_file()

    def _check_db_file(self) -> None:
        """A file where the crawl database goes that is none: one line before the crawl starts.

        Found here, while Scrapy builds the crawl, the error ends it in one line; found when the
        spider opens, Scrapy would add a traceback of its own (its stats never started).
        """
        job = read_job(self.jobdir) if self.jobdir else None
        named = (job or {}).get("crawl_db") or ("" if "{" in self.db_template else self.db_template)
        if named:
            try:
                check_crawl_db(project_path(named))
            except CrawlDBError as exc:
                raise ConfigError(str(exc)) from exc

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def db_path(self) -> str:
        """``FOCUSED_DB`` filled in; ``{unique}`` (process id and a random suffix) keeps two crawls apart."""
        settings = self.crawler.settings
        stamp = time.strftime("%Y%m%dT%H%M%S")
        return self.db_template.format(
            topic=self.runtime.topic_label.replace("/", "_").replace(",", "+"),
            strategy=setting(settings, "FOCUSED_STRATEGY"),
            time=stamp,
            job=(setting(settings, "FOCUSED_JOB") or stamp).replace("/", "_"),
            unique=f"{os.getpid()}-{secrets.token_hex(3)}",
        )

    def open_spider(self) -> None:
        job = read_job(self.jobdir) if self.jobdir else None
        self.job = dict(job or {})
        if job is not None and "counters" in job:  # a resumed crawl without a crawl database
            self.pages, self.fetch_order, self.relevant, self.relevance_sum = job["counters"]
        path: Path | None = None
        if job is not None and job.get("crawl_db"):
            path = Path(job["crawl_db"])
            self._warn_other_db(path)
        elif self.db_template:
            path = project_path(self.db_path())
        if path is not None:
            self._open_db(path, resumed=job is not None)
        if self.jobdir and job is None:
            self.job = {"crawl_db": str(path) if path else "", "started": time.time()}
            write_job(self.jobdir, self.job)
        self.budget.resume(self.pages)
        if self.pages:
            logger.info("Resuming at page %d (harvest %.3f so far)", self.pages, self.relevance_sum / self.pages)
            self._update_stats()

    def _warn_other_db(self, path: Path) -> None:
        """One line when a resumed crawl is given another database (``-a db=``) than its job's: the job's is used."""
        if not self.db_template or self.db_template == defaults.FOCUSED_DB:
            return
        if "{" not in self.db_template and project_path(self.db_template).resolve() == path.resolve():
            return
        logger.warning(
            "This crawl resumes the job in %s, which writes the crawl database %s; -a db=%s is not used "
            "(to write another database, start a new job: another JOBDIR)",
            self.jobdir,
            path,
            self.db_template,
        )
        self.stats.set_value("focused/db/other_ignored", self.db_template)

    def _open_db(self, path: Path, *, resumed: bool) -> None:
        continued = resumed and path.exists()
        if resumed and not continued:
            logger.warning("The crawl database %s of this job is gone; starting a new one there", path)
        try:
            self.db = CrawlDB(
                path,
                commit_every=self.commit_every,
                commit_seconds=self.commit_seconds,
                store_html=self.store_html,
                on_error=self._writer_died,
            )
        except CrawlDBError as exc:
            raise ConfigError(str(exc)) from exc
        self.continued = continued
        if continued:
            self.pages, self.fetch_order, self.relevant, self.relevance_sum = self.db.totals(self.runtime.threshold)
        else:
            settings = self.crawler.settings
            self.db.set_meta(
                topic=self.runtime.topic.name,
                topic_classes=list(self.runtime.topic.classes),
                strategy=setting(settings, "FOCUSED_STRATEGY"),
                critic_model=str(self.runtime.model_path),
                parent_aggregation=setting(settings, "FOCUSED_PARENT_AGGREGATION"),
                predicate=setting(settings, "FOCUSED_PREDICATE") or "",
                started=time.time(),
            )
        self.stats.set_value("focused/db", str(path))
        logger.info("Crawl database: %s%s", path, " (continued)" if continued else "")
        self.crawler.signals.send_catch_log(signals.crawldb_opened, db=self.db)

    def _writer_died(self, exc: BaseException) -> None:
        """Called from the writer thread: stop the crawl on the reactor thread."""
        from twisted.internet import reactor

        reactor.callFromThread(self._writer_failed, exc)

    def _writer_failed(self, exc: BaseException) -> None:
        """The crawl database cannot take pages any more: stop the crawl (exit status 1) with one error line."""
        if self.writer_failed:
            return
        self.writer_failed = True
        committed = self.db.committed if self.db is not None else 0
        path = self.db.path if self.db is not None else "?"
        logger.error(
            "The crawl database writer failed (%s): stopping the crawl; %d of %d pages were stored in %s",
            exc.__cause__ or exc,
            committed,
            self.pages,
            path,
        )
        self.stats.set_value("focused/db/error", str(exc.__cause__ or exc))
        engine = self.crawler.engine
        if engine is not None and engine.spider is not None:
            deferred_from_coro(engine.close_spider_async(reason="crawldb_failed"))

    def close_spider(self) -> None:
        if self.db is not None:
            stats = {k: v for k, v in self.stats.get_stats().items() if isinstance(v, int | float | str)}
            try:
                with contextlib.suppress(CrawlDBError):  # close() says why
                    self.db.set_meta(pages=self.pages, finished=time.time(), stats=stats)
                self.db.close()
            except CrawlDBError as exc:  # already reported when it happened, unless it failed at the very end
                if not self.writer_failed:
                    logger.error("%s; %d pages were stored in %s", exc, self.db.committed, self.db.path)
                    self.stats.set_value("focused/db/error", str(exc))  # the crawl exits with status 1
                    self.writer_failed = True
        elif self.jobdir:
            self._save_counters()

    def _save_counters(self) -> None:
        """Without a crawl database the counters live in the job file (rewritten every commit batch)."""
        assert self.jobdir
        self.job["counters"] = [self.pages, self.fetch_order, self.relevant, self.relevance_sum]
        write_job(self.jobdir, self.job)

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        # a page fetched again after a resume replaces its row: it counts once
        refetched = self.continued and self.db is not None and self.db.known(item.url)
        if not refetched and not self.budget.claim():
            self.stats.inc_value("focused/budget/dropped_pages")
            raise DropItem(f"page budget reached: {item.url} not stored", log_level="DEBUG")
        verdict = self.runtime.judge(item.url, item.text or "")
        relevance = self.runtime.relevance.relevance(item.url, item.text or "", verdict)  # or the predicate's 1/0
        self.fetch_order += 1
        item.fetch_order = self.fetch_order
        item.relevance = round(float(relevance), 6)
        item.predicted_class = verdict.predicted_class
        item.top_classes = list(verdict.top_classes)
        relevant = relevance >= self.runtime.threshold
        if refetched:
            self.stats.inc_value("focused/pages_refetched")
        else:
            self.pages += 1
            self.relevant += relevant
            self.relevance_sum += relevance
        self._update_stats()
        if self.db is not None and not self.writer_failed:
            self._store(item)
        elif self.jobdir and self.db is None and self.pages % self.commit_every == 0:
            self._save_counters()
        text = item.text or ""
        item.text = None
        item.html = None
        # after the store, whatever it did: the page budget never depends on the writer
        self.crawler.signals.send_catch_log(
            signals.page_labelled,
            page=LabelledPage(
                item.url,
                item.fetch_order,
                item.relevance,
                item.predicted_class,
                relevant,
                tuple(item.redirect_urls),
                pages=self.pages,
                harvest=self.relevance_sum / self.pages,
                text=text,
                links=tuple(item.links),
            ),
        )
        return item

    def _store(self, item: PageItem) -> None:
        assert self.db is not None
        assert item.fetch_order is not None and item.relevance is not None and item.predicted_class is not None
        try:
            self.db.add_page(
                url=item.url,
                fetch_order=item.fetch_order,
                parent=item.parent,
                depth=item.depth,
                status=item.status,
                content_type=item.content_type,
                title=item.title,
                relevance=item.relevance,
                predicted_class=item.predicted_class,
                top_classes=item.top_classes,
                links=item.links,
                html=item.html,
            )
        except CrawlDBError as exc:
            self._writer_failed(exc)

    def _update_stats(self) -> None:
        harvest = self.relevance_sum / self.pages
        self.stats.set_value("focused/pages", self.pages)
        self.stats.set_value("focused/relevant_pages", self.relevant)
        self.stats.set_value("focused/harvest_rate", round(harvest, 4))
        self.stats.set_value("focused/loss_rate", round(1.0 - harvest, 4))
