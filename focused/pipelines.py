"""The item pipeline that labels every fetched page with the critic and stores it."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from focused import signals
from focused.crawldb import CrawlDB
from focused.items import PageItem
from focused.runtime import CrawlRuntime, project_path

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LabelledPage:
    """What :data:`focused.signals.page_labelled` carries."""

    url: str
    fetch_order: int
    relevance: float
    predicted_class: str
    relevant: bool
    aliases: tuple[str, ...] = ()  # URLs that redirected to this page


class CriticPipeline:
    """Label pages with Pr(c*|page) and the predicted class; write the crawl database.

    Fetch order counts labelled pages from 1. The page's text and HTML leave
    the item here, so feed exports carry the labels, not the page.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.runtime = CrawlRuntime.of(crawler)
        self.db_template = crawler.settings.get("FOCUSED_DB") or ""
        self.commit_every = crawler.settings.getint("FOCUSED_DB_COMMIT_EVERY", 200)
        self.store_html = crawler.settings.getbool("FOCUSED_DB_STORE_HTML", True)
        self.db: CrawlDB | None = None
        self.pages = 0
        self.relevant = 0
        self.relevance_sum = 0.0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def db_path(self) -> str:
        settings = self.crawler.settings
        return self.db_template.format(
            topic=self.runtime.topic.name.replace("/", "_").replace(",", "+"),
            strategy=settings.get("FOCUSED_STRATEGY"),
            time=time.strftime("%Y%m%dT%H%M%S"),
        )

    def open_spider(self) -> None:
        if not self.db_template:
            return
        path = project_path(self.db_path())
        self.db = CrawlDB(path, commit_every=self.commit_every, store_html=self.store_html)
        settings = self.crawler.settings
        self.db.set_meta(
            topic=self.runtime.topic.name,
            topic_classes=list(self.runtime.topic.classes),
            strategy=settings.get("FOCUSED_STRATEGY"),
            critic_model=str(self.runtime.model_path),
            parent_aggregation=settings.get("FOCUSED_PARENT_AGGREGATION"),
            started=time.time(),
        )
        self.stats.set_value("focused/db", str(path))
        logger.info("Crawl database: %s", path)

    def close_spider(self) -> None:
        if self.db is not None:
            self.db.set_meta(pages=self.pages, finished=time.time())
            self.db.close()

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        verdict = self.runtime.judge(item.url, item.text or "")
        self.pages += 1
        item.fetch_order = self.pages
        item.relevance = round(float(verdict.relevance), 6)
        item.predicted_class = verdict.predicted_class
        item.top_classes = list(verdict.top_classes)
        relevant = verdict.relevance >= self.runtime.threshold
        self.relevant += relevant
        self.relevance_sum += verdict.relevance
        self._update_stats()
        if self.db is not None:
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
        item.text = None
        item.html = None
        self.crawler.signals.send_catch_log(
            signals.page_labelled,
            page=LabelledPage(
                item.url, self.pages, item.relevance, item.predicted_class, relevant, tuple(item.redirect_urls)
            ),
        )
        return item

    def _update_stats(self) -> None:
        harvest = self.relevance_sum / self.pages
        self.stats.set_value("focused/pages", self.pages)
        self.stats.set_value("focused/relevant_pages", self.relevant)
        self.stats.set_value("focused/harvest_rate", round(harvest, 4))
        self.stats.set_value("focused/loss_rate", round(1.0 - harvest, 4))
