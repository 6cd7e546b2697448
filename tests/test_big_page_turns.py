"""A page of thousands of links is made, scored and scheduled a chunk per reactor turn: the spider and the
middlewares before the link scoring middleware make its requests, and the scheduler sifts them, a chunk
between turns, so no one step of the reactor holds all of them; it is scored in a thread, as a long page of few
links is (long anchor texts are as much to read). Ordinary pages take no turn and are scored on the reactor."""

from __future__ import annotations

import asyncio

import pytest
from scrapy import Request
from twisted.internet import defer

from focused.items import PageItem
from focused.spidermiddlewares import scoring
from focused.spidermiddlewares.scoring import SCHEDULE_CHUNK, THREAD_HTML_CHARS, THREAD_LINKS
from tests.test_merge_early import _response, _routing


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from tests.sites import train_critic

    return train_critic(tmp_path_factory.mktemp("critic") / "critic.npz")


def _run(model, monkeypatch, links: int, html: str = "", seen: list | None = None):
    """The events of one page of ``links`` links (and an item of ``html``, when given) through the middleware: S
    a request made upstream, T a reactor turn, D the scoring handed to a thread, R a request handed on; the sizes
    the scheduler sifted; the URLs handed on. ``seen`` gets the page the strategy scored. At each turn the
    page's item loses its text and HTML, as the item pipeline, which may run then, drops them."""
    middleware, scheduler, _ = _routing(model)
    events: list[str] = []
    sifted: list[int] = []
    items: list[PageItem] = []

    async def turn() -> None:
        events.append("T")
        for item in items:
            item.text = item.html = None

    score = middleware.runtime.strategy.score

    def scoring_page(page, urls):
        if seen is not None:
            seen.append(page)
        return score(page, urls)

    monkeypatch.setattr(middleware.runtime.strategy, "score", scoring_page)

    take_early = scheduler.take_early

    def sift(requests, merge):
        sifted.append(len(requests))
        return take_early(requests, merge)

    monkeypatch.setattr(scoring, "_next_turn", turn)

    def in_thread(f, *args):
        events.append("D")
        return defer.succeed(f(*args))

    monkeypatch.setattr(scoring, "deferToThread", in_thread)
    monkeypatch.setattr(scheduler, "take_early", sift)

    async def upstream():
        if html:
            items.append(PageItem(_response().url, 200, 0, None, "text/html", text="a page", html=html))
            yield items[0]
        for i in range(links):
            events.append("S")
            yield Request(f"http://site.test/p{i}")

    async def page() -> list[str]:
        out = []
        async for obj in middleware.process_spider_output(_response(), upstream()):
            if isinstance(obj, Request):
                events.append("R")
                out.append(obj.url)
        return out

    urls = asyncio.run(page())
    return events, sifted, urls


def _longest(events: list[str], kind: str) -> int:
    """The most ``kind`` events between two turns."""
    return max(run.count(kind) for run in "".join(events).split("T"))


def test_a_page_of_thousands_of_links_takes_a_reactor_turn_every_chunk(model, monkeypatch):
    links, seen = 3_000, []
    events, sifted, urls = _run(model, monkeypatch, links, html="<p>a page</p>", seen=seen)
    assert urls == [f"http://site.test/p{i}" for i in range(links)]  # all of them, in the page's order
    assert _longest(events, "S") <= THREAD_LINKS + SCHEDULE_CHUNK  # made upstream a chunk per turn
    assert _longest(events, "R") <= SCHEDULE_CHUNK  # handed on a chunk per turn
    assert max(sifted) <= SCHEDULE_CHUNK and sum(sifted) == links  # sifted a chunk at a time
    assert events.count("D") == 1  # scored in a thread
    assert [(p.text, p.html) for p in seen] == [("a page", "<p>a page</p>")]  # as it came, whatever dropped it since


def test_a_long_page_of_few_links_is_scored_in_a_thread(model, monkeypatch):
    events, sifted, urls = _run(model, monkeypatch, 45, html="<p>" + "x" * THREAD_HTML_CHARS + "</p>")
    assert events.count("D") == 1 and sum(sifted) == 45 and len(urls) == 45


def test_an_ordinary_page_takes_no_turn(model, monkeypatch):
    events, sifted, urls = _run(model, monkeypatch, 45, html="<p>a page</p>")
    assert "T" not in events and "D" not in events and sifted == [45] and len(urls) == 45
