"""Spider middleware that drops outlinks too deep or with a path that repeats itself.

``FOCUSED_MAX_DEPTH`` bounds the link distance from the seeds;
``FOCUSED_MAX_PATH_REPEATS`` drops URLs in which one path segment occurs more
than that many times (``/a/b/a/b/a/b/a/``: a relative link that grows the path
on every page). 0 turns either off. Dropped links are counted in
``focused/traps/too_deep`` and ``focused/traps/repeated_path``.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response

from focused.errors import ConfigError

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


@functools.lru_cache(maxsize=16_384)  # a crawl meets most URLs many times (links to pages fetched or waiting)
def path_repeats(url: str) -> int:
    """How often the most frequent segment of ``url``'s path occurs."""
    segments = [s for s in urlsplit(url).path.split("/") if s]
    if len(set(segments)) == len(segments):  # the usual case, without counting
        return 1 if segments else 0
    return max(Counter(segments).values())


def non_negative(crawler: Crawler, name: str, default: int) -> int:
    """The integer setting ``name``, which must be 0 or more (0: no limit)."""
    try:
        value = crawler.settings.getint(name, default)
    except ValueError:
        value = -1
    if value < 0:
        raise ConfigError(f"{name} must be a whole number >= 0 (0: no limit), not {crawler.settings.get(name)!r}")
    return value


class LinkGuardMiddleware:
    """Drop outlinks beyond ``FOCUSED_MAX_DEPTH`` or repeating a path segment over ``FOCUSED_MAX_PATH_REPEATS``."""

    def __init__(self, crawler: Crawler, max_depth: int, max_repeats: int) -> None:
        self.stats = crawler.stats
        self.max_depth = max_depth
        self.max_repeats = max_repeats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        max_depth = non_negative(crawler, "FOCUSED_MAX_DEPTH", 0)
        max_repeats = non_negative(crawler, "FOCUSED_MAX_PATH_REPEATS", 0)
        if not max_depth and not max_repeats:
            raise NotConfigured
        return cls(crawler, max_depth, max_repeats)

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        depth = int(response.meta.get("depth", 0)) + 1
        too_deep = bool(self.max_depth) and depth > self.max_depth
        async for obj in result:
            if isinstance(obj, Request):
                if too_deep:
                    self.stats.inc_value("focused/traps/too_deep")
                    continue
                if self.max_repeats and path_repeats(obj.url) > self.max_repeats:
                    self.stats.inc_value("focused/traps/repeated_path")
                    continue
            yield obj
