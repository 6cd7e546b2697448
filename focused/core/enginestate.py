"""What the scheduler reads of Scrapy's engine: the requests it holds and the pages it has yet to score;
whether requests wait unsent in its downloader (``FOCUSED_MAX_QUEUED_DOWNLOADS``); the requests queued there,
which the page budget takes back when it closes; and the call that
makes it ask for requests, which the scheduler's holds and idle wait schedule (:mod:`focused.core.holds`).

Scrapy has no public API for these; they come from the engine's and the
scraper's and the downloader's slots (Scrapy 2.13+), and they answer ``None`` (unknown; the queued
downloads: none) when there is no engine, as when a scheduler is driven by hand in a test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request
    from twisted.internet.defer import Deferred


def engine_requests(crawler: Crawler) -> set[Request] | None:
    """The requests the engine is downloading or processing (``None``: unknown, treat all as done).

    Scrapy has no public signal for "this response is fully processed"; its
    engine keeps the requests in progress in its slot until then (Scrapy 2.13+).
    """
    try:
        engine = crawler.engine
    except RuntimeError:  # no engine (a scheduler driven by hand, as in tests)
        return None
    slot = getattr(engine, "_slot", None)
    held = getattr(slot, "inprogress", None)
    return held if isinstance(held, set) else None


def unscored_pages(crawler: Crawler) -> int | None:
    """Responses downloaded and not yet through the spider and its middlewares (their links are not
    in the frontier yet): queued for the scraper or being scraped. ``None``: unknown."""
    try:
        engine = crawler.engine
    except RuntimeError:
        return None
    slot = getattr(getattr(engine, "scraper", None), "slot", None)
    queue, active = getattr(slot, "queue", None), getattr(slot, "active", None)
    if queue is None or active is None:
        return None
    return len(queue) + len(active)


def downloads_waiting(crawler: Crawler, n: int) -> bool:
    """Whether ``n`` or more requests the downloader holds are not transferring: waiting in a slot (for a
    site's politeness delay or a free connection) or in its middlewares (a robots.txt to fetch first, or a
    response on its way back). ``False`` when unknown. Called for every request handed out: the slots are
    only counted when the downloader holds ``n`` or more requests at all."""
    try:
        engine = crawler.engine
    except RuntimeError:
        return False
    downloader = getattr(engine, "downloader", None)
    active, slots = getattr(downloader, "active", None), getattr(downloader, "slots", None)
    if not isinstance(active, set) or not isinstance(slots, dict) or len(active) < n:
        return False
    return len(active) - sum(len(getattr(slot, "transferring", ())) for slot in slots.values()) >= n


def take_queued_downloads(crawler: Crawler) -> list[tuple[Request, Deferred[Any]]]:
    """Take out of the downloader the requests queued in its slots and not yet sent (they wait for the
    politeness delay or a free connection): each with the Deferred the downloader fires with its response.
    The caller must fire each (an errback drops the request). Empty when unknown."""
    try:
        engine = crawler.engine
    except RuntimeError:
        return []
    slots = getattr(getattr(engine, "downloader", None), "slots", None)
    if not isinstance(slots, dict):
        return []
    taken: list[tuple[Request, Deferred[Any]]] = []
    for slot in slots.values():
        queue = getattr(slot, "queue", None)
        while queue:
            taken.append(queue.popleft())
    return taken


def engine_nextcall(crawler: Crawler) -> Any:
    """The engine's call that makes it ask the scheduler for requests (``None`` without an engine, as for a
    scheduler driven by hand)."""
    try:
        return getattr(getattr(crawler.engine, "_slot", None), "nextcall", None)
    except RuntimeError:  # no engine
        return None
