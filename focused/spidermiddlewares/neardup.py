"""Spider middleware: a page whose visible text nearly duplicates an earlier page's feeds no links.

A trap's pages (calendar months, session-id copies, a path that grows) look
alike; following their links only finds more of them. The page itself is kept
(it was fetched and is labelled like any other), but its outlinks are dropped.
The fingerprint is a SimHash of the item's ``text`` (:mod:`focused.page.simhash`);
``FOCUSED_NEAR_DUPLICATE_BITS`` is how many of its 64 bits may differ.
Counted: ``focused/traps/near_duplicate`` (pages) and
``focused/traps/near_duplicate_links`` (links not followed).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response

from focused.core.trapstate import TrapState
from focused.errors import ConfigError
from focused.items import PageItem
from focused.page.simhash import simhash
from focused.settings.access import setting

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


#: The page's fingerprint when the page-analysis worker computed it (:mod:`focused.analysis.worker`).
FINGERPRINT_META_KEY = "focused_fingerprint"
_NOT_YET = object()


class NearDuplicateMiddleware:
    """Drop the outlinks of pages that nearly duplicate an earlier page."""

    def __init__(self, crawler: Crawler, state: TrapState) -> None:
        self.stats = crawler.stats
        self.state = state

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not setting(crawler.settings, "FOCUSED_NEAR_DUPLICATES"):
            raise NotConfigured
        bits = setting(crawler.settings, "FOCUSED_NEAR_DUPLICATE_BITS")
        try:
            return cls(crawler, TrapState.of(crawler))
        except ValueError as exc:
            raise ConfigError(f"FOCUSED_NEAR_DUPLICATE_BITS must be a whole number from 0 to 15, not {bits!r}") from exc

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        duplicate: bool | None = None  # unknown until the page's item comes by
        waiting: list[Request] = []
        async for obj in result:
            if isinstance(obj, PageItem) and duplicate is None:
                fingerprint = response.meta.pop(FINGERPRINT_META_KEY, _NOT_YET)  # from the analysis worker
                if fingerprint is _NOT_YET:
                    fingerprint = simhash(obj.text) if obj.text else None
                duplicate = self.state.page(obj.url, fingerprint)
                if duplicate:
                    self.stats.inc_value("focused/traps/near_duplicate")
                    self._drop(waiting)
                else:
                    for request in waiting:
                        yield request
                waiting = []
                yield obj
            elif isinstance(obj, Request) and duplicate is None:
                waiting.append(obj)  # links yielded before the page's item wait for its verdict
            elif isinstance(obj, Request) and duplicate:
                self._drop([obj])
            else:
                yield obj
        for request in waiting:  # no item (not a page): nothing to compare
            yield request

    def _drop(self, requests: list[Request]) -> None:
        if requests:
            self.stats.inc_value("focused/traps/near_duplicate_links", len(requests))
