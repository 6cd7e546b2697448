"""Downloader middleware: a per-host page budget, and no fetches of URL patterns found to be traps.

``FOCUSED_MAX_PAGES_PER_HOST`` caps the requests sent to one host (0: no
limit; ``robots.txt`` not counted); beyond it requests are dropped and counted
in ``focused/traps/host_budget``. URLs of a pattern that
:class:`focused.core.trapstate.TrapState` found to be a trap (most of its pages
near-duplicates) are dropped when they come out of the frontier, counted in
``focused/traps/pattern``.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.exceptions import IgnoreRequest

from focused.core.trapstate import TrapState
from focused.spidermiddlewares.linkguard import non_negative

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request

logger = logging.getLogger(__name__)


class TrapGuardMiddleware:
    """Drop requests to hosts over their page budget and to URL patterns known to be traps."""

    def __init__(self, crawler: Crawler, state: TrapState, per_host: int) -> None:
        self.stats = crawler.stats
        self.state = state
        self.per_host = per_host
        self.sent: Counter[str] = Counter()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        per_host = non_negative(crawler, "FOCUSED_MAX_PAGES_PER_HOST", 0)
        return cls(crawler, TrapState.of(crawler), per_host)

    def process_request(self, request: Request) -> None:
        if self.state.is_trap(request.url):
            self.stats.inc_value("focused/traps/pattern")
            raise IgnoreRequest(f"URL pattern of a crawler trap: {request.url}")
        parts = urlsplit(request.url)
        if not self.per_host or parts.path == "/robots.txt":
            return None
        host = (parts.hostname or "").lower()
        if self.sent[host] >= self.per_host:
            self.stats.inc_value("focused/traps/host_budget")
            if self.sent[host] == self.per_host:
                self.sent[host] += 1  # log once
                logger.info(
                    "Host %s reached its budget of %d pages (FOCUSED_MAX_PAGES_PER_HOST): its other URLs are dropped",
                    host,
                    self.per_host,
                )
            raise IgnoreRequest(f"page budget of host {host} spent: {request.url}")
        self.sent[host] += 1
        return None
