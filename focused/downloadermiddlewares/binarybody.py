"""Downloader middleware that skips binary bodies served as text (``text/html`` full of random bytes).

Such a body is not a page: parsed, it would be stored, labelled by the critic
and counted against the budget. A text response is binary when its first
64 KiB hold a NUL byte (outside UTF-16/32) or, decoded with its encoding, more
than ``MAX_BAD_RATIO`` of the characters are undecodable or control characters.
Skipped responses are counted in ``focused/skipped/binary``.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest
from scrapy.http import TextResponse

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

logger = logging.getLogger(__name__)

STAT = "focused/skipped/binary"
SAMPLE_BYTES = 65536
#: Text in any real encoding has almost no replacement or control characters; random bytes have ~25% or more.
MAX_BAD_RATIO = 0.05
#: What no text has: the replacement character of an undecodable byte, and the C0 and C1 controls
#: other than tab, line feed, vertical tab, form feed and carriage return.
_BAD_CHAR = re.compile("[\ufffd\x00-\x08\x0e-\x1f\x7f-\x9f]")


def looks_binary(body: bytes, encoding: str) -> bool:
    """True if ``body`` (decoded as ``encoding``) is not text."""
    sample = body[:SAMPLE_BYTES]
    if not sample:
        return False
    wide = encoding.lower().replace("-", "").replace("_", "").startswith(("utf16", "utf32"))
    if not wide and b"\x00" in sample:
        return True
    try:
        text = sample.decode(encoding, errors="replace")
    except LookupError:
        text = sample.decode("utf-8", errors="replace")
    if not text:
        return False
    return len(_BAD_CHAR.findall(text)) > MAX_BAD_RATIO * len(text)


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
