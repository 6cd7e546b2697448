"""Request fingerprints by URL: one canonicalization and hash per distinct link target.

A crawl meets the same link targets on page after page (a site's navigation,
the hubs of a topic); Scrapy's default fingerprinter canonicalizes the URL and
hashes it again for every new :class:`~scrapy.Request` object, about 30 µs a
link. For a GET request without a body and with that default fingerprinter, the
fingerprint is a function of the URL alone (unless the request's ``verbatim_url``
meta key asks for the URL as it is), so it is kept in a bounded cache by
URL; any other request, or a custom ``REQUEST_FINGERPRINTER_CLASS``, goes to
the crawler's fingerprinter unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

from scrapy import Request
from scrapy.utils.request import RequestFingerprinter

#: Distinct URLs kept (about 120 bytes each); the cache starts afresh when full.
MAX_URLS = 200_000


class UrlFingerprints:
    """``fingerprint(request)`` of the crawler's fingerprinter, cached by URL where that is exact."""

    def __init__(
        self, fingerprinter: object, max_urls: int = MAX_URLS, alias: Callable[[str], str] | None = None
    ) -> None:
        self._fingerprint: Callable[[Request], bytes] = fingerprinter.fingerprint  # type: ignore[attr-defined]
        # Only Scrapy's own fingerprinter, without headers, is known to depend on nothing but
        # method, URL and body.
        self._by_url: dict[str, bytes] | None = {} if type(fingerprinter) is RequestFingerprinter else None
        self.max_urls = max_urls
        #: the URL a request is known by (``focused.urls.collapse_aliases``: a seed named
        #: ``dir/index.html`` is the page a later link names ``dir/``); None: its own URL
        self._alias = alias

    def __call__(self, request: Request) -> bytes:
        cache = self._by_url
        if cache is None or request.method != "GET" or request.body or request.meta.get("verbatim_url"):
            return self._fingerprint(self._as_alias(request))
        fp = cache.get(request.url)
        if fp is None:
            if len(cache) >= self.max_urls:
                cache.clear()
            fp = cache[request.url] = self._fingerprint(self._as_alias(request))
        return fp

    def _as_alias(self, request: Request) -> Request:
        if self._alias is None or request.meta.get("verbatim_url"):
            return request
        url = self._alias(request.url)
        return request if url == request.url else request.replace(url=url)
