"""The spider middleware that turns the frontier policy's scores into priorities."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from scrapy.http import Request, Response, TextResponse
from scrapy.settings import BaseSettings
from scrapy.utils.conf import build_component_list
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.misc import load_object
from twisted.internet import task
from twisted.internet.threads import deferToThread

from focused.core.runtime import CrawlRuntime
from focused.core.scheduler import PAYLOAD_BYTES_META_KEY, SCHEDULER_ATTR
from focused.frontier.payloads import encode_payloads
from focused.items import PageItem
from focused.page.parse import parse_page
from focused.page.parsed import ParsedPage
from focused.priority import score_to_priority
from focused.strategies.base import FetchedPage

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

SCORE_META_KEY = "focused_score"
#: The page's :class:`~focused.page.parsed.ParsedPage`, from the spider to this middleware (one parse a page).
PARSED_META_KEY = "focused_parsed"
#: A page with more links than this is scored in a worker thread, so that the reactor goes on meanwhile...
THREAD_LINKS = 500
#: ...as is a page whose HTML is longer than this (its links' anchor texts and the leaves around them may be
#: as much to read as thousands of links)...
THREAD_HTML_CHARS = 200_000
#: ...and its requests are scheduled this many per reactor turn (about 30 ms of work).
SCHEDULE_CHUNK = 100
#: The critic judges a longer visible text in a worker thread.
THREAD_TEXT_CHARS = 200_000
#: The spider middlewares that may sit between this one and the engine without keeping links to waiting URLs
#: from merging into the frontier here: for such a link they change nothing the merge keeps (its priority
#: and payload). Any other one there (or DEPTH_PRIORITY, DEPTH_STATS_VERBOSE) sends every link their way.
MERGE_SAFE_MIDDLEWARES = frozenset(
    {
        "scrapy.spidermiddlewares.start.StartSpiderMiddleware",
        "scrapy.spidermiddlewares.httperror.HttpErrorMiddleware",
        "focused.spidermiddlewares.httperror.QuietHttpErrorMiddleware",
        "scrapy.spidermiddlewares.referer.RefererMiddleware",
        "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware",
        "scrapy.spidermiddlewares.depth.DepthMiddleware",
    }
)


class LinkScoringMiddleware:
    """Score all outlinks of a page in one batch and set their priorities.

    The page's item comes out of the spider before its links; the critic's
    verdict on it (memoised by :class:`~focused.core.runtime.CrawlRuntime`, so the
    pipeline reuses it) feeds the strategy, which scores the links together.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.runtime = CrawlRuntime.of(crawler)
        self.max_depth = crawler.settings.getint("DEPTH_LIMIT")
        self.merge_here = merges_early(crawler.settings)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        content: tuple[str, str] | None = None  # the page item's text and HTML as they came (the pipeline drops them)
        requests: list[Request] = []
        async for obj in result:
            if isinstance(obj, Request):
                requests.append(obj)
                if len(requests) > THREAD_LINKS and len(requests) % SCHEDULE_CHUNK == 0:
                    # a page of thousands of links: the spider and the middlewares before this one make its
                    # requests a chunk per reactor turn too, not all in one step of the reactor
                    await _next_turn()
                continue
            if isinstance(obj, PageItem) and obj.url == response.url:
                content = (obj.text or "", obj.html or "")
                if len(obj.text or "") > THREAD_TEXT_CHARS:  # the critic's verdict, memoised for the pipeline
                    await maybe_deferred_to_future(deferToThread(self.runtime.judge, obj.url, obj.text or ""))
            yield obj
        parsed = response.meta.pop(PARSED_META_KEY, None)
        if not requests:
            return
        html = content[1] if content is not None else response.text if isinstance(response, TextResponse) else ""
        if len(requests) <= THREAD_LINKS and len(html) <= THREAD_HTML_CHARS:
            for request in self._for_the_engine(response, self._score(response, content, requests, parsed), merge=True):
                yield request
            return
        # a page of thousands of links, or a long one: scored off the reactor thread, sifted (take_early) and
        # scheduled a chunk per reactor turn (no merges here: they go the engine's way, chunked with the rest)
        scored = await maybe_deferred_to_future(deferToThread(self._score, response, content, requests, parsed))
        for start in range(0, len(scored), SCHEDULE_CHUNK):
            if start:
                await _next_turn()
            for request in self._for_the_engine(response, scored[start : start + SCHEDULE_CHUNK], merge=False):
                yield request

    def _for_the_engine(self, response: Response, requests: list[Request], merge: bool) -> list[Request]:
        """The scored requests the engine must schedule. Links to pages fetched or being fetched (their
        features went to the apprentice) stop here (counted as the scheduler counts them, in
        ``dupefilter/filtered``); with ``merge``, links to URLs already waiting are merged into their
        frontier entries here (priority and payload, as the scheduler would: a waiting URL passed the
        middlewares between this one and the engine already, and the engine's path cost more than the
        scoring itself, for a quarter of all links of a crawl that has found most of its web)."""
        scheduler = getattr(self.crawler, SCHEDULER_ATTR, None)
        if scheduler is None:
            return requests
        depth = int(response.meta.get("depth", 0)) + 1
        merge = merge and self.merge_here and not (self.max_depth and depth > self.max_depth)
        out, merged = scheduler.take_early(requests, lambda request: merge and "depth_reset" not in request.meta)
        if merged:  # as the depth middleware would have recorded them
            self.stats.max_value("request_depth_max", depth)
        return out

    def _score(
        self, response: Response, content: tuple[str, str] | None, requests: list[Request], parsed: ParsedPage | None
    ) -> list[Request]:
        """Score the links: ``content`` is the page item's text and HTML (None: no item, the response is read)."""
        if content is not None:
            text, html = content
            verdict = self.runtime.judge(response.url, text)
        else:
            html = response.text if isinstance(response, TextResponse) else ""
            parsed = parse_page(html)
            text = parsed.text
            verdict = self.runtime.judge(response.url, text)
        page = FetchedPage(response.url, int(response.meta.get("depth", 0)), verdict, html, parsed, text)
        scored = self.runtime.strategy.score(page, [r.url for r in requests])
        for request, score in zip(requests, scored.scores, strict=True):
            request.priority = score_to_priority(score)
            request.meta[SCORE_META_KEY] = round(float(score), 6)
        if scored.payloads is not None:
            # moved out of the meta by the scheduler, into the frontier entry (a page's at once: by the strategy,
            # which encoded them for itself already, or here)
            blobs = scored.blobs if scored.blobs is not None else encode_payloads(scored.payloads)
            for request, blob in zip(requests, blobs, strict=True):
                request.meta[PAYLOAD_BYTES_META_KEY] = blob
        self.stats.inc_value("focused/links_scored", len(requests))
        return requests


async def _next_turn() -> None:
    """Let the reactor run its timers and sockets before going on."""
    from twisted.internet import reactor  # the one Scrapy installed (importing it earlier would install one)

    await maybe_deferred_to_future(task.deferLater(reactor, 0, lambda: None))


def merges_early(settings: BaseSettings) -> bool:
    """Whether links to waiting URLs may merge into the frontier at this middleware: nothing between it and
    the engine would change or drop them (see :data:`MERGE_SAFE_MIDDLEWARES`)."""
    if settings.getfloat("DEPTH_PRIORITY") or settings.getbool("DEPTH_STATS_VERBOSE"):
        return False
    paths = []
    for path in build_component_list(settings.getwithbase("SPIDER_MIDDLEWARES")):
        cls = load_object(path) if isinstance(path, str) else path
        paths.append(f"{cls.__module__}.{cls.__qualname__}")
    name = f"{LinkScoringMiddleware.__module__}.{LinkScoringMiddleware.__qualname__}"
    return name in paths and set(paths[: paths.index(name)]) <= MERGE_SAFE_MIDDLEWARES  # lower orders: nearer
