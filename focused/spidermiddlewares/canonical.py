"""Spider middleware that canonicalizes outlinks: session-id parameters dropped, URL aliases collapsed.

``?PHPSESSID=...``, ``;jsessionid=...`` and the like give one page endlessly
many URLs; without them the frontier's seen-set recognises the page. The names
come from ``FOCUSED_SESSION_PARAMS`` (case-insensitive; empty: off). With
``FOCUSED_URL_ALIASES``, ``dir/index.html`` and ``dir//`` become ``dir/``
(:mod:`focused.urls`), so one page is fetched once.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response
from w3lib.url import url_query_cleaner

from focused.settings.access import setting
from focused.urls import collapse_aliases

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

STAT = "focused/traps/session_ids"
ALIAS_STAT = "focused/urls/aliases_collapsed"
_PATH_PARAM = re.compile(r";([^/;=?#]+)=[^/;?#]*")


def strip_session_ids(url: str, names: frozenset[str]) -> str:
    """``url`` without the query parameters and ``;name=value`` path parameters named in ``names``."""
    if ";" not in url and "?" not in url:  # most links: nothing to strip, no parsing
        return url
    parts = urlsplit(url)
    path = parts.path
    if ";" in path:
        path = _PATH_PARAM.sub(lambda m: "" if m.group(1).lower() in names else m.group(0), path)
    if path != parts.path:
        url = urlunsplit(parts._replace(path=path))
    if parts.query:
        keys = [key for key, _ in parse_qsl(parts.query, keep_blank_values=True) if key.lower() in names]
        if keys:
            url = url_query_cleaner(url, keys, remove=True, unique=False, keep_fragments=True)
    return url


class CanonicalUrlMiddleware:
    """Rewrite each outlink without its session-id parameters (counted in ``focused/traps/session_ids``)
    and with its aliases collapsed (``focused/urls/aliases_collapsed``)."""

    def __init__(self, crawler: Crawler, names: frozenset[str], aliases: bool = True) -> None:
        self.stats = crawler.stats
        self.names = names
        self.aliases = aliases

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        value = setting(crawler.settings, "FOCUSED_SESSION_PARAMS") or ""
        items = value.split(",") if isinstance(value, str) else list(value)
        names = frozenset(n.strip().lower() for n in items if n.strip())
        aliases = setting(crawler.settings, "FOCUSED_URL_ALIASES")
        if not names and not aliases:
            raise NotConfigured
        return cls(crawler, names, aliases)

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for obj in result:
            if isinstance(obj, Request):
                url = strip_session_ids(obj.url, self.names) if self.names else obj.url
                if url != obj.url:
                    self.stats.inc_value(STAT)
                if self.aliases:
                    collapsed = collapse_aliases(url)
                    if collapsed != url:
                        self.stats.inc_value(ALIAS_STAT)
                        url = collapsed
                if url != obj.url:
                    obj = obj.replace(url=url)
            yield obj
