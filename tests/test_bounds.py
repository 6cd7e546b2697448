"""Bounded work per page: one parse, deep nesting, the links-per-page cap, the frontier size cap."""

from __future__ import annotations

import random

import pytest

from focused.bench.runner import CrawlSpec, run_crawl
from focused.crawldb import iter_links, iter_pages
from focused.frontier.heap import Frontier
from focused.frontier.memory import MemoryStore
from focused.frontier.sqlite import SQLiteStore
from focused.frontier.store import Push
from focused.learning.apprentice.features import extract_link_features
from focused.page.parse import parse_page
from focused.page.stream import stream_page
from focused.page.text import html_to_text
from focused.replay.server import ReplayServer
from focused.replay.store import ReplayStore
from tests.sites import HOST, NEUTRAL, SPORT, add, page, train_critic, words

DEPTH = 100_000


def deep_page(depth: int = DEPTH) -> str:
    return (
        "<html><head><title>Deep</title></head><body><p>before the pit</p>"
        + "<div>" * depth
        + 'football at the bottom <a href="/target.html">the target</a> goal'
        + "</div>" * depth
        + "<p>after the pit</p></body></html>"
    )


def test_deep_nesting_keeps_text_and_links():
    parsed = parse_page(deep_page())
    assert parsed.deep  # libxml2 gave up at its depth limit: the streaming reader took over
    assert parsed.title == "Deep"
    assert [href for href, _, _ in parsed.links] == ["/target.html"]
    text = html_to_text(deep_page())
    for words_ in ("before the pit", "football at the bottom", "the target", "after the pit"):
        assert words_ in text
    links = extract_link_features(deep_page(), HOST + "/deep.html", d_max=2)
    assert links.urls == [HOST + "/target.html"]
    assert links.anchors == ["the target"]
    assert sorted(links.features[0]) == sorted(
        [
            "before@-2",
            "the@-2",
            "pit@-2",
            "football@-1",
            "at@-1",
            "the@-1",
            "bottom@-1",
            "the@0",
            "target@0",
            "goal@1",
            "after@2",
            "pit@2",
            "the@2",
        ]
    )


def test_streaming_reader_agrees_with_the_tree_on_an_ordinary_page():
    html = (
        "<html><head><title>T</title><script>var x = '<a href=/no>';</script></head><body>"
        "<h1>Head</h1><p>left <a href='/a.html'><b>an</b> chor</a> right<br>next</p>"
        "<ul><li><a href='/b.html'></a></li><li>item <img src='i.gif'> tail</li></ul>"
        "<map><area href='/c.html'></map><noscript>hidden</noscript></body></html>"
    )
    tree, stream = parse_page(html), stream_page(html)
    assert not tree.deep and stream.deep
    assert stream.leaves == tree.leaves
    assert stream.links == tree.links
    assert stream.title == tree.title == "T"
    assert stream.text == tree.text


def test_frontier_drops_its_lowest_priority_entries():
    heap: Frontier[str] = Frontier()
    for i, priority in enumerate([5, 1, 9, 1, 7, 3]):
        heap.push(f"k{i}", f"u{i}", priority)
    # the two that would be popped last: priority 1, the later one first (FIFO ties)
    assert heap.drop_lowest(2) == ["k3", "k1"]
    assert [heap.pop().key for _ in range(4)] == ["k2", "k4", "k0", "k5"]
    assert heap.pop() is None


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_stores_drop_lowest_and_keep_them_seen(kind, tmp_path):
    store = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "f.sqlite", encode=str, decode=str)
    rng = random.Random(0)
    priorities = [rng.randrange(1000) for _ in range(200)]
    store.push_many([Push(f"k{i}", f"u{i}", p) for i, p in enumerate(priorities)])
    assert store.drop_lowest(50) == 50
    assert len(store) == 150
    kept = sorted(p.priority for p in store.pop_many(150))
    assert kept == sorted(priorities)[50:]
    assert all(store.seen(f"k{i}") for i in range(200))  # dropped URLs are not added again
    store.close()


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory):
    """A seed linking to a page of 20,000 links, a page nested 100,000 deep, and ten ordinary pages."""
    tmp = tmp_path_factory.mktemp("hostile")
    rng = random.Random(5)
    store = ReplayStore()
    ordinary = [(f"/o/{i}.html", words(SPORT, 2, rng)) for i in range(10)]
    add(
        store,
        "/",
        page("home", words(NEUTRAL, 30, rng), [("/many.html", "many"), ("/deep.html", "deep"), *ordinary]),
        "misc",
    )
    many = "".join(f'<a href="/m/{i}.html">{words(SPORT, 1, rng)} {i}</a> ' for i in range(20_000))
    add(store, "/many.html", f"<html><body><p>{words(SPORT, 20, rng)}</p>{many}</body></html>".encode(), "sport")
    add(store, "/deep.html", deep_page().encode(), "sport")
    add(store, "/target.html", page("target", words(SPORT, 40, rng), []), "sport")
    for href, _ in ordinary:
        add(store, href, page(href, words(SPORT, 40, rng), []), "sport")
    model = train_critic(tmp / "critic.npz")
    with ReplayServer(store) as server:
        yield {"model": model, "proxy": server.proxy_url, "tmp": tmp}


def test_many_links_are_capped_and_counted_and_other_pages_still_fetched(hostile_site):
    spec = CrawlSpec(
        name="hostile",
        topic="sport",
        strategy="apprentice",
        seeds=(HOST + "/",),
        model=hostile_site["model"],
        proxy=hostile_site["proxy"],
        db=hostile_site["tmp"] / "hostile.sqlite",
        max_pages=40,
        settings={
            "FOCUSED_REPLAY_CONCURRENCY": 4,
            "FOCUSED_MAX_LINKS_PER_PAGE": 1_000,
            "DOWNLOAD_TIMEOUT": 30,
            "FOCUSED_ALLOW_INTERNAL": "127.0.0.0/8,::1",
        },
    )
    result = run_crawl(spec, timeout=300)
    assert result.returncode == 0, result.log.read_text()[-3000:]
    stats = result.stats
    assert stats["focused/links/capped_pages"] == 1
    assert stats["focused/links/over_cap"] == 19_000  # the <a href> beyond the first 1,000
    links: dict[str, list[str]] = {}
    for src, dst in iter_links(spec.db):
        links.setdefault(src, []).append(dst)
    assert len(links[HOST + "/many.html"]) == 1_000
    assert links[HOST + "/many.html"][:2] == [HOST + "/m/0.html", HOST + "/m/1.html"]
    fetched = {p.url for p in iter_pages(spec.db)}
    # not starved: every ordinary page and the deep page's link target came through, nothing timed out
    assert {f"{HOST}/o/{i}.html" for i in range(10)} <= fetched
    assert HOST + "/target.html" in fetched  # the link at depth 100,000 was followed
    assert links[HOST + "/deep.html"] == [HOST + "/target.html"]
    assert not stats.get("downloader/exception_count")
