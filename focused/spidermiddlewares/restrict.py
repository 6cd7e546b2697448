"""Spider middleware that keeps a crawl inside the pages an earlier crawl fetched.

This is the paper's *recall crawler* (§3.6): the enhanced crawler restricted to
the baseline's pages, so that both end with the same pages and the question
becomes how long the enhanced one keeps its loss below the baseline's.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response

from focused.crawldb import CrawlDBError, iter_pages
from focused.errors import ConfigError
from focused.learning.apprentice.payload import page_key
from focused.paths import project_path
from focused.settings.access import setting

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class RestrictToCrawlMiddleware:
    """Drop outlinks to URLs that the crawl in ``FOCUSED_RESTRICT_TO`` did not fetch."""

    def __init__(self, crawler: Crawler, allowed: set[str]) -> None:
        self.stats = crawler.stats
        self.allowed = allowed

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        path = setting(crawler.settings, "FOCUSED_RESTRICT_TO") or ""
        if not path:
            raise NotConfigured
        try:
            allowed = {page_key(p.url) for p in iter_pages(project_path(path))}
        except CrawlDBError as exc:
            raise ConfigError(f"FOCUSED_RESTRICT_TO: {exc}") from exc
        logger.info("Restricting the crawl to the %d pages fetched by %s", len(allowed), path)
        return cls(crawler, allowed)

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for obj in result:
            if isinstance(obj, Request) and page_key(obj.url) not in self.allowed:
                self.stats.inc_value("focused/restricted/dropped")
                continue
            yield obj
