"""The spider middleware that turns the frontier policy's scores into priorities."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from scrapy.http import Request, Response, TextResponse

from focused.items import PageItem
from focused.learning.text import html_to_text
from focused.priority import score_to_priority
from focused.runtime import CrawlRuntime
from focused.scheduler import PAYLOAD_META_KEY
from focused.strategies import FetchedPage

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

SCORE_META_KEY = "focused_score"


class LinkScoringMiddleware:
    """Score all outlinks of a page in one batch and set their priorities.

    The page's item comes out of the spider before its links; the critic's
    verdict on it (memoised by :class:`~focused.runtime.CrawlRuntime`, so the
    pipeline reuses it) feeds the strategy, which scores the links together.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.runtime = CrawlRuntime.of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        item: PageItem | None = None
        requests: list[Request] = []
        async for obj in result:
            if isinstance(obj, Request):
                requests.append(obj)
                continue
            if isinstance(obj, PageItem) and obj.url == response.url:
                item = obj
            yield obj
        if not requests:
            return
        for request in self._score(response, item, requests):
            yield request

    def _score(self, response: Response, item: PageItem | None, requests: list[Request]) -> list[Request]:
        if item is not None:
            text = item.text or ""
            verdict = self.runtime.judge(item.url, text)
            html = item.html or ""
        else:
            html = response.text if isinstance(response, TextResponse) else ""
            text = html_to_text(html)
            verdict = self.runtime.judge(response.url, text)
        page = FetchedPage(response.url, int(response.meta.get("depth", 0)), verdict, html, text)
        scored = self.runtime.strategy.score(page, [r.url for r in requests])
        for request, score in zip(requests, scored.scores, strict=True):
            request.priority = score_to_priority(score)
            request.meta[SCORE_META_KEY] = round(float(score), 6)
        if scored.payloads is not None:
            # moved out of the meta by the scheduler, into the frontier entry
            for request, payload in zip(requests, scored.payloads, strict=True):
                request.meta[PAYLOAD_META_KEY] = payload
        self.stats.inc_value("focused/links_scored", len(requests))
        return requests
