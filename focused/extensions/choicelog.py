"""The extension that records why each page was fetched, for ``focused report``.

For every stored page it writes to the crawl database (table ``choices``) the
priority the frontier gave the page's request when it was popped (after parent
merging and re-scoring) and the score the strategy gave the link when it was
found. It listens to ``item_scraped`` (one call per page, nothing per link).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from scrapy import signals as scrapy_signals

from focused import signals
from focused.crawldb import CrawlDB, CrawlDBError
from focused.items import PageItem
from focused.spidermiddlewares.scoring import SCORE_META_KEY

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response


class ChoiceLog:
    """Store each fetched page's frontier priority and link score in the crawl database."""

    def __init__(self) -> None:
        self.db: CrawlDB | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        ext = cls()
        crawler.signals.connect(ext.crawldb_opened, signal=signals.crawldb_opened)
        crawler.signals.connect(ext.item_scraped, signal=scrapy_signals.item_scraped)
        return ext

    def crawldb_opened(self, db: CrawlDB) -> None:
        self.db = db

    def item_scraped(self, item: Any, response: Response) -> None:
        if self.db is None or not isinstance(item, PageItem) or self.db.error is not None:
            return
        request = response.request
        if request is None:
            return
        with contextlib.suppress(CrawlDBError):  # the pipeline reports a failed writer and stops the crawl
            self.db.add_choice(url=item.url, priority=request.priority, link_score=request.meta.get(SCORE_META_KEY))
