"""Scrapy's robots.txt middleware, with a ``robots.txt`` that cannot be fetched said in one line.

When a host does not answer (connection refused, no such name, timeout),
Scrapy's :class:`~scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware`
logs an ERROR with a 30-line traceback of the download machinery, before the
page itself fails for the same reason. This subclass keeps Scrapy's behaviour
and stats and logs that case as one WARNING line; other errors keep their
traceback.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as ScrapyRobotsTxtMiddleware
from scrapy.downloadermiddlewares.robotstxt import logger as scrapy_logger
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
)
from twisted.internet.error import ConnectError, DNSLookupError, TimeoutError

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

#: A host that does not answer: said in one line.
UNREACHABLE = (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    ConnectError,
    DNSLookupError,
    TimeoutError,
)


class UnreachableInOneLine(logging.Filter):
    """Turn Scrapy's "Error downloading" record of an unreachable host into one WARNING line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, UNREACHABLE):
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.msg = "No robots.txt for %(request)s, its host does not answer: %(f_exception)s"
        return True


_FILTER = UnreachableInOneLine()


class RobotsTxtMiddleware(ScrapyRobotsTxtMiddleware):
    """:class:`scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware`, an unreachable host in one line."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        if _FILTER not in scrapy_logger.filters:
            scrapy_logger.addFilter(_FILTER)
