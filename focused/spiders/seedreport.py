"""Why each seed of a crawl gave no page, and the one line that says so when none did.

A crawl whose every seed is refused (an internal address not allowed,
``robots.txt``, a crawler-trap rule), unreachable (no such host, connection
refused, timeout) or answered with an error stores nothing and would end like
a crawl that finished. The spider sends its seeds with :meth:`SeedReport.failed`
as their errback; the crawl command asks :meth:`SeedReport.failure_line` at the
end, and a crawl that stored no page because no seed could be fetched exits
with status 1 and that line, which names each seed, why, and what to change.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadTimeoutError,
    IgnoreRequest,
)
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet.error import ConnectionRefusedError, DNSLookupError, TCPTimedOutError, TimeoutError

from focused.addresses import allow_entry
from focused.downloadermiddlewares.internal import InternalAddressError, InternalAddressRefused

if TYPE_CHECKING:
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

#: The request meta key that marks a seed (its URL as given; kept through redirects and retries).
SEED_META_KEY = "focused_seed"
#: Seeds named in the failure line; the others are counted.
SHOWN = 5


class SeedReport:
    """The seeds of this crawl process and, for those that gave no page, why."""

    def __init__(self, seeds: list[str]) -> None:
        self.seeds = list(seeds)
        #: seed -> why it gave no page
        self.reasons: dict[str, str] = {}
        #: FOCUSED_ALLOW_INTERNAL entries that would let the refused seeds through
        self.allow: list[str] = []

    def failed(self, failure: Failure) -> Failure | None:
        """The errback of a seed request: note why. A refusal or an HTTP error goes on to Scrapy, which
        counts it quietly; a download error (no such host, connection refused) is one warning line here,
        instead of Scrapy's error with its traceback."""
        request = getattr(failure, "request", None)
        meta = getattr(request, "meta", {}) or {}
        seed = str(meta.get(SEED_META_KEY) or getattr(request, "url", ""))
        reason = self.reasons[seed] = self.describe(failure)
        if failure.check(IgnoreRequest, HttpError):
            return failure
        logger.warning("Seed %s gave no page: %s", seed, reason)
        return None

    def not_a_page(self, seed: str, content_type: str) -> None:
        """A seed fetched, but not a page the crawler reads (an image, a PDF...)."""
        self.reasons[seed] = f"not an HTML page: {content_type or 'no Content-Type'}"

    def describe(self, failure: Failure) -> str:
        exc = failure.value
        if isinstance(exc, InternalAddressRefused):
            if exc.allow not in self.allow:
                self.allow.append(exc.allow)
            return f"an internal address: allow it with -s FOCUSED_ALLOW_INTERNAL={exc.allow}"
        if isinstance(exc, InternalAddressError):  # the resolver's refusal, before the middleware saw it
            url = str(getattr(getattr(failure, "request", None), "url", ""))
            return f"resolves to an internal address: allow it with -s FOCUSED_ALLOW_INTERNAL={allow_entry(url)}"
        if isinstance(exc, HttpError):
            return f"HTTP {exc.response.status}"
        if isinstance(exc, IgnoreRequest):
            message = str(exc)
            if "robots.txt" in message:
                return "forbidden by its robots.txt; -s ROBOTSTXT_OBEY=False ignores it, for sites you run"
            return message.split(": http", 1)[0] or "refused"
        if isinstance(exc, CannotResolveHostError | DNSLookupError):
            return "its host name does not resolve"
        if isinstance(exc, DownloadConnectionRefusedError | ConnectionRefusedError):
            return "connection refused: nothing listens there"
        if isinstance(exc, DownloadTimeoutError | TimeoutError | TCPTimedOutError):
            return "no answer within DOWNLOAD_TIMEOUT"
        return failure.getErrorMessage() or type(exc).__name__

    def failure_line(self, pages: int) -> str | None:
        """The error line of a crawl that stored ``pages`` pages (all runs): None unless it stored none
        and every seed of this process failed (a seed filtered as already seen has not)."""
        if pages or not self.seeds or any(seed not in self.reasons for seed in self.seeds):
            return None
        shown = [f"{seed} ({self.reasons[seed]})" for seed in self.seeds[:SHOWN]]
        more = len(self.seeds) - SHOWN
        if more > 0:
            shown.append(f"and {more} more")
        line = "no page was stored: " + ("the seed" if len(self.seeds) == 1 else "every seed") + " failed: "
        line += "; ".join(shown)
        if len(self.allow) > 1:
            line += f"; to allow them all: -s FOCUSED_ALLOW_INTERNAL={','.join(self.allow)}"
        return line
