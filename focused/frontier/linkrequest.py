"""The request the focused spider makes for a link: Scrapy's, with its URL made safe from a memo.

Building a :class:`scrapy.Request` runs ``w3lib.url.safe_url_string`` on its URL,
about 8 of a request's 10 µs. A focused crawl builds a request for every link of
every page and again when a waiting request leaves the frontier; most are for
URLs met many times before (links to pages fetched or waiting are most of a
crawl's links), so :class:`LinkRequest` remembers the safe form of the URLs it has
made safe (the same function of the same URL and encoding: the same requests).
Nothing else differs from ``Request``; it is serialised with its class path, as
Scrapy serialises any ``Request`` subclass.
"""

from __future__ import annotations

from scrapy import Request

#: URLs whose safe form one process remembers per encoding (a dict entry each, about 100 bytes: the URL
#: string is the request's own, and so is the safe form when it is the same); afresh when full.
MEMO_SIZE = 20_000
_safe: dict[str, dict[str, str]] = {}  # encoding -> URL -> its safe form


class LinkRequest(Request):
    """A ``Request`` whose URL is made safe once per distinct URL and encoding (see the module docstring)."""

    def _set_url(self, url: str) -> None:
        if not isinstance(url, str) or self._url_is_verbatim():
            super()._set_url(url)
            return
        memo = _safe.get(self.encoding)
        if memo is None:
            memo = _safe.setdefault(self.encoding, {})
        safe = memo.get(url)
        if safe is not None:
            self._url = safe
            return
        super()._set_url(url)  # checks and makes safe; raises on a URL without a scheme (never remembered)
        if len(memo) >= MEMO_SIZE:
            memo.clear()
        memo[url] = url if self._url == url else self._url  # no second copy of an already safe URL
