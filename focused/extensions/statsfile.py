"""The extension that writes a crawl's final stats as JSON to ``FOCUSED_STATS_FILE``, for scripts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy import signals as scrapy_signals
from scrapy.exceptions import NotConfigured

from focused.settings.access import setting

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


class StatsFile:
    """Write the crawl's final stats as JSON to ``FOCUSED_STATS_FILE`` (for scripts)."""

    def __init__(self, crawler: Crawler, path: str) -> None:
        self.crawler = crawler
        self.path = path
        self.reason: str | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        path = setting(crawler.settings, "FOCUSED_STATS_FILE") or ""
        if not path:
            raise NotConfigured
        ext = cls(crawler, path)
        crawler.signals.connect(ext.spider_closed, signal=scrapy_signals.spider_closed)
        crawler.signals.connect(ext.engine_stopped, signal=scrapy_signals.engine_stopped)
        return ext

    def spider_closed(self, reason: str) -> None:
        self.reason = reason
        self._write()

    def engine_stopped(self) -> None:
        """Again, once the other components' closing work is done (the apprentice's last training
        finishes after ``spider_closed``: its figures would be missing from the file)."""
        if self.reason is not None:
            self._write()

    def _write(self) -> None:
        stats = dict(self.crawler.stats.get_stats())
        stats["finish_reason"] = self.reason
        target = Path(self.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(json.dumps(stats, default=str, indent=1, sort_keys=True))
        os.replace(tmp, target)
