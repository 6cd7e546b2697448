"""Downloader middleware that skips binary bodies served as text (``text/html`` full of random bytes).

Such a body is not a page: parsed, it would be stored, labelled by the critic
and counted against the budget. What is binary: :func:`focused.page.binary.looks_binary`.
Skipped responses are counted in ``focused/skipped/binary``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest
from scrapy.http import TextResponse

from focused.page.binary import looks_binary

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

logger = logging.getLogger(__name__)

STAT = "focused/skipped/binary"


class BinaryBodyMiddleware:
    """Drop (``IgnoreRequest``) text responses whose body is binary."""

    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        if isinstance(response, TextResponse) and looks_binary(response.body, response.encoding):
            self.stats.inc_value(STAT)
            logger.debug("Skipped %s: a binary body served as %s", response.url, response.headers.get("Content-Type"))
            raise IgnoreRequest(f"binary body served as text: {response.url}")
        return response
