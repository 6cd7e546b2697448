"""A page of thousands of links is made, scored and scheduled a chunk per reactor turn: the spider and the
middlewares before the link scoring middleware make its requests, and the scheduler sifts them, a chunk
between turns, so no one step of the reactor holds all of them. Ordinary pages take no turn."""

from __future__ import annotations

import asyncio

import pytest
from scrapy import Request
from twisted.internet import defer

from focused.spidermiddlewares import scoring
from focused.spidermiddlewares.scoring import SCHEDULE_CHUNK, THREAD_LINKS
from tests.test_merge_early import _response, _routing


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from tests.sites import train_critic

    return train_critic(tmp_path_factory.mktemp("critic") / "critic.npz")


def _run(model, monkeypatch, links: int) -> tuple[list[str], list[int], list[str]]:
    """The events of one page of ``links`` links through the middleware: S a request made upstream, T a
    reactor turn, R a request handed on; the sizes the scheduler sifted; the URLs handed on."""
    middleware, scheduler, _ = _routing(model)
    events: list[str] = []
    sifted: list[int] = []

    async def turn() -> None:
        events.append("T")

    take_early = scheduler.take_early

    def sift(requests, merge):
        sifted.append(len(requests))
        return take_early(requests, merge)

    monkeypatch.setattr(scoring, "_next_turn", turn)
    monkeypatch.setattr(scoring, "deferToThread", lambda f, *args: defer.succeed(f(*args)))
    monkeypatch.setattr(scheduler, "take_early", sift)

    async def upstream():
        for i in range(links):
            events.append("S")
            yield Request(f"http://site.test/p{i}")

    async def page() -> list[str]:
        out = []
        async for request in middleware.process_spider_output(_response(), upstream()):
            events.append("R")
            out.append(request.url)
        return out

    urls = asyncio.run(page())
    return events, sifted, urls


def _longest(events: list[str], kind: str) -> int:
    """The most ``kind`` events between two turns."""
    return max(run.count(kind) for run in "".join(events).split("T"))


def test_a_page_of_thousands_of_links_takes_a_reactor_turn_every_chunk(model, monkeypatch):
    links = 3_000
    events, sifted, urls = _run(model, monkeypatch, links)
    assert urls == [f"http://site.test/p{i}" for i in range(links)]  # all of them, in the page's order
    assert _longest(events, "S") <= THREAD_LINKS + SCHEDULE_CHUNK  # made upstream a chunk per turn
    assert _longest(events, "R") <= SCHEDULE_CHUNK  # handed on a chunk per turn
    assert max(sifted) <= SCHEDULE_CHUNK and sum(sifted) == links  # sifted a chunk at a time


def test_an_ordinary_page_takes_no_turn(model, monkeypatch):
    events, sifted, urls = _run(model, monkeypatch, 45)
    assert "T" not in events and sifted == [45] and len(urls) == 45
