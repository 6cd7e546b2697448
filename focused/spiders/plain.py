"""``plain``: Scrapy's own link following, no focus: the throughput reference.

The benchmark crawls the same replay with this spider and with ``focused`` to
show what the focused pipeline (critic, scoring, frontier, database) costs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor

from focused.settings.access import setting
from focused.settings.profiles import apply_profile
from focused.settings.seeds import parse_seeds


class PlainSpider(scrapy.Spider):
    """Follow every http(s) link from the seeds with Scrapy's default frontier."""

    name = "plain"
    custom_settings = {  # noqa: RUF012 (Scrapy reads it as a class attribute)
        "SCHEDULER": "scrapy.core.scheduler.Scheduler",
        "SPIDER_MIDDLEWARES": {
            "focused.spidermiddlewares.scoring.LinkScoringMiddleware": None,
            "focused.spidermiddlewares.restrict.RestrictToCrawlMiddleware": None,
        },
        "ITEM_PIPELINES": {"focused.pipelines.CriticPipeline": None},
        # a spider's component dicts replace the project's: list what stays on
        "EXTENSIONS": {"focused.extensions.statsfile.StatsFile": 510},
    }
    _extractor = LinkExtractor(unique=True)

    @classmethod
    def update_settings(cls, settings: Any) -> None:
        super().update_settings(settings)
        apply_profile(settings)
        if setting(settings, "FOCUSED_MAX_UNSCORED_PAGES") == 0:  # strict: what Scrapy's scraper slot can say
            settings.set("SCRAPER_SLOT_MAX_ACTIVE_SIZE", 0, priority="spider")
        pages = setting(settings, "FOCUSED_MAX_PAGES")
        if pages:
            settings.set("CLOSESPIDER_PAGECOUNT", pages, priority="spider")

    def __init__(self, seeds: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seeds = parse_seeds(seeds)

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.seeds:
            yield scrapy.Request(url)

    def parse(self, response: Response) -> Iterator[scrapy.Request]:
        if not isinstance(response, TextResponse):
            return
        for link in self._extractor.extract_links(response):
            if urlsplit(link.url).scheme in ("http", "https"):
                yield scrapy.Request(link.url)
