"""Scrapy's HTTP decompression, with decompression bombs counted.

A compressed body that would decompress past ``DOWNLOAD_MAXSIZE`` is dropped
by Scrapy's :class:`HttpCompressionMiddleware` with a warning only; this
subclass also counts it in ``focused/skipped/decompression_bomb``. It replaces
Scrapy's middleware at the same place (``DOWNLOADER_MIDDLEWARES``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import IgnoreRequest

if TYPE_CHECKING:
    from scrapy.http import Request, Response

STAT = "focused/skipped/decompression_bomb"


class CountingHttpCompressionMiddleware(HttpCompressionMiddleware):
    """:class:`HttpCompressionMiddleware` that counts the responses it drops for their decompressed size."""

    def process_response(self, request: Request, response: Response, spider: object = None) -> Request | Response:
        try:
            return super().process_response(request, response)
        except IgnoreRequest as exc:
            too_big = type(exc.__cause__).__name__ == "_DecompressionMaxSizeExceeded" or "DOWNLOAD_MAXSIZE" in str(exc)
            if too_big and self.stats is not None:
                self.stats.inc_value(STAT)
            raise
