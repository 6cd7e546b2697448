"""The ``focused`` spider: fetch pages, yield one item per page and its outlinks.

It only parses and yields. Scoring links (:mod:`focused.scoring`), labelling
pages (:mod:`focused.pipelines`) and ordering the frontier
(:mod:`focused.scheduler`) are other components' jobs.

Usage::

    scrapy crawl focused -a topic=course -a seeds=http://www.cs.cornell.edu/
    scrapy crawl focused -a topic=course -a seeds_file=seeds.txt -a strategy=bfs
    scrapy crawl focused -a topic=course -s REDIS_URL=redis://HOST:6379/0   # seeds: LPUSH focused:start_urls URL

Spider arguments are shorthands for settings (``-a topic=X`` is
``-s FOCUSED_TOPIC=X``), so every component reads one source of truth.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor

from focused.errors import ConfigError
from focused.frontier.settings import uses_redis
from focused.items import PageItem
from focused.jobs import SCRAPYD_ARGUMENTS, apply_job
from focused.learning.text import html_to_text
from focused.priority import SEED_PRIORITY
from focused.profiles import apply_profile
from focused.redis_seeds import RedisSeeds
from focused.runtime import CrawlRuntime, project_path

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

#: Spider argument -> setting it sets.
ARGUMENT_SETTINGS = {
    "topic": "FOCUSED_TOPIC",
    "seeds": "FOCUSED_SEEDS",
    "seeds_file": "FOCUSED_SEEDS_FILE",
    "strategy": "FOCUSED_STRATEGY",
    "model": "FOCUSED_CRITIC_MODEL",
    "labels": "FOCUSED_LABELS",
    "max_pages": "FOCUSED_MAX_PAGES",
    "db": "FOCUSED_DB",
    "apprentice": "FOCUSED_APPRENTICE_MODEL",
    "markines": "FOCUSED_MARKINES_MODEL",
    "restrict_to": "FOCUSED_RESTRICT_TO",
}

_PAGE_TYPES = ("text/html", "application/xhtml", "text/plain")
PARENT_META_KEY = "focused_parent"


def parse_seeds(text: str) -> list[str]:
    """Split a comma/whitespace-separated seed list and check every URL is http(s)."""
    seeds = [s.strip() for chunk in text.split(",") for s in chunk.split() if s.strip()]
    bad = [s for s in seeds if urlsplit(s).scheme not in ("http", "https") or not urlsplit(s).netloc]
    if bad:
        raise ConfigError(f"seeds must be http(s) URLs; not: {', '.join(bad)}")
    return seeds


def read_seeds_file(path: str) -> list[str]:
    """Seeds from a file, one URL per line; ``#`` starts a comment."""
    try:
        lines = project_path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read seeds file {path}: {exc}") from exc
    return parse_seeds(",".join(line.split("#", 1)[0] for line in lines))


class FocusedSpider(scrapy.Spider):
    """Crawl from seeds, following every http(s) link the frontier ranks highest."""

    name = "focused"
    seeds: list[str]
    redis_seeds: RedisSeeds | None = None

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        apply_profile(settings)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> FocusedSpider:
        unknown = sorted(set(kwargs) - set(ARGUMENT_SETTINGS) - SCRAPYD_ARGUMENTS)
        if unknown:
            raise ConfigError(
                f"unknown spider argument(s): {', '.join(unknown)}; valid: {', '.join(ARGUMENT_SETTINGS)}"
            )
        for arg, setting in ARGUMENT_SETTINGS.items():
            if arg in kwargs:
                crawler.settings.set(setting, kwargs[arg], priority="cmdline")
        if kwargs.get("_job"):  # run by Scrapyd
            apply_job(crawler.settings, cls.name, str(kwargs["_job"]))
        spider = super().from_crawler(crawler, *args, **kwargs)
        if uses_redis(crawler.settings):  # seeds pushed to <prefix>:start_urls, as with scrapy-redis
            spider.redis_seeds = RedisSeeds(crawler, cls.name, spider.parse)
            crawler.signals.connect(spider.redis_seeds.on_idle, signal=signals.spider_idle)
            crawler.signals.connect(spider.redis_seeds.close, signal=signals.spider_closed)
        spider.seeds = spider._configured_seeds()
        return spider

    def _configured_seeds(self) -> list[str]:
        settings = self.crawler.settings
        seeds = parse_seeds(settings.get("FOCUSED_SEEDS") or "")
        if settings.get("FOCUSED_SEEDS_FILE"):
            seeds += read_seeds_file(settings["FOCUSED_SEEDS_FILE"])
        if not seeds and self.redis_seeds is not None:
            self.logger.info(
                "No seeds given: this worker takes its seeds from Redis list %s (and the shared frontier)",
                self.redis_seeds.key,
            )
        elif not seeds:
            seeds = CrawlRuntime.of(self.crawler).seeds()
            if not seeds:
                raise ConfigError(
                    "no seeds: use -a seeds=URL[,URL...] or -a seeds_file=FILE "
                    "(or, with REDIS_URL, push them to the Redis list <prefix>:start_urls)"
                )
        return list(dict.fromkeys(seeds))

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.seeds:
            yield scrapy.Request(url, callback=self.parse, priority=SEED_PRIORITY)
        if self.redis_seeds is not None:
            for request in self.redis_seeds.requests():
                yield request

    def parse(self, response: Response) -> Iterator[PageItem | scrapy.Request]:
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1").lower()
        if not isinstance(response, TextResponse) or (content_type and not content_type.startswith(_PAGE_TYPES)):
            self.crawler.stats.inc_value("focused/skipped/non_html")
            return
        html = response.text
        links = self._links(response) if "html" in content_type or not content_type else []
        yield PageItem(
            url=response.url,
            status=response.status,
            depth=int(response.meta.get("depth", 0)),
            parent=response.meta.get(PARENT_META_KEY),
            content_type=content_type.split(";")[0],
            title=(response.xpath("//title/text()").get() or "").strip(),
            links=links,
            redirect_urls=list(response.meta.get("redirect_urls", [])),
            text=html_to_text(html),
            html=html,
        )
        for url in links:
            yield scrapy.Request(url, callback=self.parse, meta={PARENT_META_KEY: response.url})

    _extractor = LinkExtractor(unique=True)

    def _links(self, response: TextResponse) -> list[str]:
        """The page's http(s) outlinks, once each, in document order, without itself.

        A link without a usable host (``http:// www.x.com``, ``http://%20/x``) is
        dropped here: the downloader would fail on it with an error per link.
        """
        own = response.url.split("#", 1)[0]
        links = []
        for link in self._extractor.extract_links(response):
            url = link.url.split("#", 1)[0]
            parts = urlsplit(url)
            if url != own and parts.scheme in ("http", "https") and _valid_host(parts.hostname):
                links.append(url)
        return list(dict.fromkeys(links))


def _valid_host(host: str | None) -> bool:
    """A non-empty host without whitespace or percent-escapes (which no DNS name has)."""
    if not host:
        return False
    return not any(c.isspace() or c == "%" for c in host)
