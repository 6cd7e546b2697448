"""The ``focused`` spider: fetch pages, yield one item per page and its outlinks.

It only parses and yields. Scoring links (:mod:`focused.spidermiddlewares.scoring`), labelling
pages (:mod:`focused.pipelines`) and ordering the frontier
(:mod:`focused.core.scheduler`) are other components' jobs.

Usage::

    scrapy crawl focused -a topic=course -a seeds=http://www.cs.cornell.edu/
    scrapy crawl focused -a topic=course -a seeds_file=seeds.txt -a strategy=bfs
    scrapy crawl focused -a topic=course -s REDIS_URL=redis://HOST:6379/0   # seeds: LPUSH focused:start_urls URL

Spider arguments are shorthands for settings (``-a topic=X`` is
``-s FOCUSED_TOPIC=X``), so every component reads one source of truth.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy import signals
from scrapy.http import Response, TextResponse
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from focused.analysis.client import AUTO_START_AFTER, PageAnalysis, skipped_slow
from focused.analysis.outlinks import take_links
from focused.analysis.worker import is_auto, workers_for
from focused.core.runtime import CrawlRuntime
from focused.errors import ConfigError
from focused.frontier.linkrequest import LinkRequest
from focused.frontier.settings import uses_redis
from focused.items import PageItem
from focused.page.parse import parse_page
from focused.page.parsed import PageTooSlow, ParsedPage
from focused.page.text import is_page_type
from focused.priority import SEED_PRIORITY
from focused.settings.access import setting
from focused.settings.profiles import apply_profile
from focused.settings.scrapyd import SCRAPYD_ARGUMENTS, apply_job, apply_jobdir
from focused.settings.seeds import parse_seeds, read_seeds_file
from focused.settings.validation import ARGUMENT_SETTINGS
from focused.spidermiddlewares.scoring import PARSED_META_KEY
from focused.spiders.redis_seeds import RedisSeeds
from focused.spiders.seedreport import SEED_META_KEY, SeedReport

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

#: Pages longer than this (characters) are parsed in a worker thread: a 5 MB page takes seconds.
THREAD_PAGE_CHARS = 200_000
PARENT_META_KEY = "focused_parent"


class FocusedSpider(scrapy.Spider):
    """Crawl from seeds, following every http(s) link the frontier ranks highest."""

    name = "focused"
    seeds: list[str]
    #: FOCUSED_MAX_LINKS_PER_PAGE (0: no cap)
    max_links: int = 3000
    max_url_length: int = 0  # the crawl's URLLENGTH_LIMIT (from_crawler)
    redis_seeds: RedisSeeds | None = None
    #: FOCUSED_ANALYSIS_WORKERS > 0: pages are read in worker processes
    analysis: PageAnalysis | None = None
    #: why seeds gave no page (``scrapy crawl`` exits 1 when none did)
    seed_report: SeedReport

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
        for arg, name in ARGUMENT_SETTINGS.items():
            if arg in kwargs:
                crawler.settings.set(name, kwargs[arg], priority="cmdline")
        if kwargs.get("_job"):  # run by Scrapyd
            apply_job(crawler.settings, cls.name, str(kwargs["_job"]))
        apply_jobdir(crawler.settings)  # before the scheduler, the pipeline and the extensions read JOBDIR
        if setting(crawler.settings, "FOCUSED_EXAMPLES"):  # `scrapy crawl` trained it already; another runner here
            from focused.core.examples import prepare_crawl

            model, topic, _ = prepare_crawl(crawler.settings)
            crawler.settings.set("FOCUSED_CRITIC_MODEL", str(model), priority="cmdline")
            crawler.settings.set("FOCUSED_TOPIC", topic, priority="cmdline")
        spider = super().from_crawler(crawler, *args, **kwargs)
        if uses_redis(crawler.settings):  # seeds pushed to <prefix>:start_urls, as with scrapy-redis
            spider.redis_seeds = RedisSeeds(crawler, cls.name, spider.parse)
            crawler.signals.connect(spider.redis_seeds.on_idle, signal=signals.spider_idle)
            crawler.signals.connect(spider.redis_seeds.close, signal=signals.spider_closed)
        spider.seeds = spider._configured_seeds()
        spider.seed_report = SeedReport(spider.seeds)
        spider.max_links = setting(crawler.settings, "FOCUSED_MAX_LINKS_PER_PAGE")
        spider.max_url_length = crawler.settings.getint("URLLENGTH_LIMIT")
        workers_setting = setting(crawler.settings, "FOCUSED_ANALYSIS_WORKERS")
        workers = workers_for(workers_setting)
        if workers:
            start_after = AUTO_START_AFTER if is_auto(workers_setting) else 0
            spider.analysis = PageAnalysis(crawler, workers, spider.max_links, start_after, spider.max_url_length)
            crawler.signals.connect(spider.analysis.spider_closed, signal=signals.spider_closed)
        return spider

    def _configured_seeds(self) -> list[str]:
        settings = self.crawler.settings
        seeds = parse_seeds(setting(settings, "FOCUSED_SEEDS") or "")
        if setting(settings, "FOCUSED_SEEDS_FILE"):
            seeds += read_seeds_file(settings["FOCUSED_SEEDS_FILE"])
        from focused.learning.critic.examples import examples_metadata  # here: `scrapy list` imports this module

        runtime = CrawlRuntime.of(self.crawler)
        if not seeds and examples_metadata(runtime.critic) is not None:
            # -a examples=URLs: they are the seeds, on a shared frontier too (the seen-set makes a second worker's
            # push of them a no-op); examples given as files have none
            seeds = runtime.seeds()
        if not seeds and self.redis_seeds is not None:
            self.logger.info(
                "No seeds given: this worker takes its seeds from Redis list %s (and the shared frontier)",
                self.redis_seeds.key,
            )
        elif not seeds:
            seeds = runtime.seeds()
            if not seeds:
                raise ConfigError(
                    "no seeds: use -a seeds=URL[,URL...] or -a seeds_file=FILE "
                    "(or, with REDIS_URL, push them to the Redis list <prefix>:start_urls)"
                )
        return list(dict.fromkeys(seeds))

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.seeds:
            yield scrapy.Request(
                url, callback=self.parse, errback=self.seed_failed, priority=SEED_PRIORITY, meta={SEED_META_KEY: url}
            )
        if self.redis_seeds is not None:
            for request in self.redis_seeds.requests():
                yield request

    async def parse(self, response: Response) -> AsyncIterator[PageItem | scrapy.Request]:
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1").lower()
        if not isinstance(response, TextResponse) or not is_page_type(content_type):
            self.crawler.stats.inc_value("focused/skipped/non_html")
            if SEED_META_KEY in response.meta:
                self.seed_report.not_a_page(response.meta[SEED_META_KEY], content_type)
            return
        html = response.text
        follow = "html" in content_type or not content_type
        if self.analysis is not None:  # in a worker process
            read = await self.analysis.read(response, html, follow, self._read_here)
            if read is None:
                return
            parsed, links, over = read
        else:
            read = await self._read_here(response, html, follow)
            if read is None:
                return
            parsed, links, over = read
        if parsed.bad_base:  # an unjoinable <base href>: the links were resolved against the page's URL
            self.crawler.stats.inc_value("focused/links/bad_base")
        if parsed.bad_links:
            self.crawler.stats.inc_value("focused/links/bad_href", parsed.bad_links)
        if parsed.long_links:  # over URLLENGTH_LIMIT: dropped before any later stage keeps them
            self.crawler.stats.inc_value("focused/links/too_long", parsed.long_links)
        if over:
            self.crawler.stats.inc_value("focused/links/over_cap", over)
            self.crawler.stats.inc_value("focused/links/capped_pages")
        response.meta[PARSED_META_KEY] = parsed  # taken by the link scoring middleware
        yield PageItem(
            url=response.url,
            status=response.status,
            depth=int(response.meta.get("depth", 0)),
            parent=response.meta.get(PARENT_META_KEY),
            content_type=content_type.split(";")[0],
            title=parsed.title.strip(),
            links=links,
            redirect_urls=list(response.meta.get("redirect_urls", [])),
            text=parsed.text,
            html=html,
        )
        for url in links:
            yield LinkRequest(url, callback=self.parse, meta={PARENT_META_KEY: response.url})

    def seed_failed(self, failure: Failure) -> Failure | None:
        """The errback of the seeds: :class:`~focused.spiders.seedreport.SeedReport` notes why."""
        return self.seed_report.failed(failure)

    async def _read_here(
        self, response: TextResponse, html: str, follow: bool
    ) -> tuple[ParsedPage, list[str], int] | None:
        """:meth:`_read` in the crawl process; a long page in a thread (seconds of parsing: off the reactor).

        None: the page took longer than ``FOCUSED_PAGE_TIME_BUDGET`` (skipped, counted). Here the budget
        bounds the streaming parse of deeply nested pages (a worker process bounds all of the reading).
        """
        budget = setting(self.crawler.settings, "FOCUSED_PAGE_TIME_BUDGET")
        deadline = time.monotonic() + budget if budget > 0 else None
        try:
            if len(html) > THREAD_PAGE_CHARS:
                return await maybe_deferred_to_future(deferToThread(self._read, response, html, follow, deadline))
            return self._read(response, html, follow, deadline)
        except PageTooSlow:
            skipped_slow(self.crawler, response.url)
            return None

    def _read(
        self, response: TextResponse, html: str, follow: bool, deadline: float | None = None
    ) -> tuple[ParsedPage, list[str], int]:
        """The one parse of the page (links, title, visible text, DOM leaves), its outlinks, and the
        ``<a href>`` left unread beyond the cap of ``FOCUSED_MAX_LINKS_PER_PAGE`` links."""
        parsed = parse_page(html, deadline)
        if not follow:
            return parsed, [], 0
        links, over = self._take_links(response, parsed)
        return parsed, links, over

    def _links(self, response: TextResponse, parsed: ParsedPage | None = None) -> list[str]:
        """The page's http(s) outlinks, once each, in document order, without itself (see :meth:`_take_links`)."""
        return self._take_links(response, parse_page(response.text) if parsed is None else parsed)[0]

    def _take_links(self, response: TextResponse, parsed: ParsedPage) -> tuple[list[str], int]:
        """The page's outlinks (at most ``max_links``) and how many ``<a href>`` were left unread
        (:func:`focused.analysis.outlinks.take_links`)."""
        return take_links(parsed, response.url, response.encoding, self.max_links, self.max_url_length)
