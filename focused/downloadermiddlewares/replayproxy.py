"""Downloader middleware that routes every request through an offline replay."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from focused.settings.access import setting

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request


class ReplayProxyMiddleware:
    """Send requests to the replay proxy named by ``FOCUSED_REPLAY_PROXY``.

    Disabled (``NotConfigured``) when the setting is empty, i.e. on the live
    web. Runs before Scrapy's ``HttpProxyMiddleware``, which then does the rest.
    """

    def __init__(self, proxy: str) -> None:
        self.proxy = proxy

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        proxy = setting(crawler.settings, "FOCUSED_REPLAY_PROXY") or ""
        if not proxy:
            raise NotConfigured
        if not proxy.startswith("http://"):
            from focused.errors import ConfigError

            raise ConfigError(f"FOCUSED_REPLAY_PROXY must be an http:// URL, not {proxy!r}")
        return cls(proxy)

    def process_request(self, request: Request) -> None:
        request.meta.setdefault("proxy", self.proxy)
