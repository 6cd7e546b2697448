"""Small generated webs and critics for crawl tests."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from focused.bench.runner import CrawlSpec
from focused.learning.critic.naive_bayes import Critic
from focused.replay.server import ReplayServer
from focused.replay.store import ReplayStore, StoredResponse

SPORT = tuple("football goal match team league score player coach stadium season championship referee".split())
COOKING = tuple("recipe oven flour sugar bake butter dough kitchen simmer sauce pastry spice".split())
NEUTRAL = tuple("welcome page index directory contact information home about news".split())

HOST = "http://site.test"


def words(vocab: tuple[str, ...], n: int, rng: random.Random) -> str:
    return " ".join(rng.choice(vocab) for _ in range(n))


def train_critic(path: Path, seed: int = 0) -> Path:
    """A 3-class critic (sport, cooking, misc) trained on generated texts."""
    rng = random.Random(seed)
    texts, labels = [], []
    for label, vocab in (("sport", SPORT), ("cooking", COOKING), ("misc", NEUTRAL)):
        for _ in range(40):
            texts.append(words(vocab, 60, rng) + " " + words(NEUTRAL, 10, rng))
            labels.append(label)
    Critic.train(texts, labels, n_features=2**12, metadata={"test": True}).save(path)
    return path


def page(title: str, body: str, links: list[tuple[str, str]]) -> bytes:
    anchors = "\n".join(f'<li><a href="{href}">{text}</a></li>' for href, text in links)
    return (
        f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{body}</p><ul>{anchors}</ul></body></html>"
    ).encode()


def add(store: ReplayStore, path: str, content: bytes, label: str) -> None:
    headers = [("Content-Type", "text/html; charset=utf-8")]
    store.add(StoredResponse(HOST + path, 200, headers, content), label=label, group="site")


def hub_site(n: int = 6, seed: int = 1) -> ReplayStore:
    """``/`` links to a cooking hub, then a sport hub; each hub links to n leaves of its kind.

    Breadth-first fetches the cooking leaves first (their hub was found first);
    a best-first crawler focused on sport fetches the sport leaves first.
    """
    rng = random.Random(seed)
    store = ReplayStore()
    add(
        store,
        "/",
        page("Home", words(NEUTRAL, 40, rng), [("/cook/", "kitchen"), ("/sport/", "games")]),
        "misc",
    )
    for kind, vocab in (("cook", COOKING), ("sport", SPORT)):
        label = "cooking" if kind == "cook" else "sport"
        leaves = [(f"/{kind}/{i}.html", f"{kind} {i}") for i in range(n)]
        add(store, f"/{kind}/", page(kind, words(vocab, 80, rng), leaves), label)
        for href, _ in leaves:
            add(store, href, page(href, words(vocab, 80, rng), [("/", "home")]), label)
    return store


def neutral_hubs_site(n: int = 30, seed: int = 4) -> ReplayStore:
    """``/`` links to two hubs of the same neutral text: ``/a/`` lists n cooking pages, ``/b/`` n sport
    pages, every anchor "item i". The critic's views give every leaf the same priority, so only what
    the fetched leaves of a hub were tells its waiting ones apart (sibling feedback)."""
    rng = random.Random(seed)
    store = ReplayStore()
    text = words(NEUTRAL, 60, rng)
    add(store, "/", page("Home", text, [("/a/", "index"), ("/b/", "index")]), "misc")
    for hub, label, vocab in (("a", "cooking", COOKING), ("b", "sport", SPORT)):
        leaves = [(f"/{hub}/{i}.html", f"item {i}") for i in range(n)]
        add(store, f"/{hub}/", page(f"Index {hub}", words(NEUTRAL, 60, rng), leaves), "misc")  # no near-duplicates
        for href, _ in leaves:
            add(store, href, page(href, words(vocab, 80, rng), []), label)
    return store


def regions_site(hubs: int = 25, per_region: int = 3, seed: int = 2) -> ReplayStore:
    """A chain of sport hub pages; each links first to cooking pages (under a "Shop" header),
    then to sport pages (under a "Results" header), then to the next hub.

    Anchor texts are neutral ("item 3"), so only the DOM region (the header a
    few leaves away) tells a good link from a bad one. The baseline gives every
    link of a hub the same Pr(sport|hub) and so fetches in document order,
    cooking first; an apprentice that learned the regions fetches sport first.
    """
    rng = random.Random(seed)
    store = ReplayStore()
    for h in range(hubs):
        cook = [(f"/c/{h}-{i}.html", f"item {i}") for i in range(per_region)]
        sport = [(f"/s/{h}-{i}.html", f"item {i + per_region}") for i in range(per_region)]
        nxt = [(f"/hub/{h + 1}.html", "next")] if h + 1 < hubs else []
        body = (
            f"<html><head><title>Hub {h}</title></head><body><h1>Hub {h}</h1><p>{words(SPORT, 60, rng)}</p>"
            "<div><h2>Shop offers</h2><ul>"
            + "".join(f'<li><a href="{u}">{t}</a></li>' for u, t in cook)
            + "</ul></div><div><h2>Match results</h2><ul>"
            + "".join(f'<li><a href="{u}">{t}</a></li>' for u, t in sport)
            + "</ul></div><p>"
            + "".join(f'<a href="{u}">{t}</a>' for u, t in nxt)
            + "</p></body></html>"
        )
        add(store, f"/hub/{h}.html", body.encode(), "sport")
        for href, _ in cook:
            add(store, href, page(href, words(COOKING, 80, rng), []), "cooking")
        for href, _ in sport:
            add(store, href, page(href, words(SPORT, 80, rng), []), "sport")
    return store


def graph_site(n: int = 240, out: int = 6, seed: int = 3) -> ReplayStore:
    """``n`` pages, half sport and half cooking, each linking to the next page and to ``out``
    random others (anchors from the target's topic): a wide frontier, every page reachable
    from ``/g/0.html``, some links to pages that do not exist (404s)."""
    rng = random.Random(seed)
    store = ReplayStore()
    kinds = ["sport" if i % 2 == 0 else "cooking" for i in range(n)]
    for i in range(n):
        vocab = SPORT if kinds[i] == "sport" else COOKING
        targets = [(i + 1) % n, *rng.sample(range(n), out)]
        links = [(f"/g/{t}.html", words(SPORT if kinds[t] == "sport" else COOKING, 2, rng)) for t in targets]
        if i % 10 == 0:
            links.append((f"/missing/{i}.html", "gone"))
        add(store, f"/g/{i}.html", page(f"page {i}", words(vocab, 60, rng), links), kinds[i])
    return store


@contextmanager
def graph_web(tmp: Path, pages: int = 240) -> Iterator[dict[str, Any]]:
    """:func:`graph_site` served by a replay proxy, with a sport/cooking critic: what crawl tests get."""
    model = train_critic(tmp / "critic.model")
    with ReplayServer(graph_site(pages), latency=0.01) as server:
        yield {"model": model, "proxy": server.proxy_url, "tmp": tmp}


def graph_crawl(
    web: dict[str, Any],
    name: str,
    *,
    strategy: str,
    max_pages: int = 0,
    seeds: tuple[str, ...] = (HOST + "/g/0.html",),
    **settings: Any,
) -> CrawlSpec:
    """A crawl of :func:`graph_web` for topic ``sport``: concurrency 2, DEBUG log, its database named ``name``."""
    return CrawlSpec(
        name=name,
        topic="sport",
        strategy=strategy,
        seeds=tuple(seeds),
        model=web["model"],
        proxy=web["proxy"],
        db=web["tmp"] / f"{name}.sqlite",
        max_pages=max_pages,
        settings={"FOCUSED_REPLAY_CONCURRENCY": 2, "LOG_LEVEL": "DEBUG", **settings},
    )


class PassThroughSpiderMiddleware:
    """Someone else's spider middleware that changes nothing (the link scoring middleware cannot know that)."""

    async def process_spider_output(self, response: Any, result: Any) -> Any:
        async for obj in result:
            yield obj


def shared_links_site(n: int = 5, seed: int = 3) -> ReplayStore:
    """``/`` links to two sport hubs, a cooking one and n cooking pages; each hub links to the same n sport
    pages and the n cooking pages, so that many links of a hub go to URLs already waiting."""
    rng = random.Random(seed)
    store = ReplayStore()
    hubs = [("/hub/a.html", "games"), ("/hub/b.html", "more games"), ("/hub/c.html", "kitchen")]
    leaves = [(f"/sport/{i}.html", f"match {i}") for i in range(n)]
    leaves += [(f"/cook/{i}.html", f"dish {i}") for i in range(n)]
    add(store, "/", page("Home", words(NEUTRAL, 40, rng), hubs + leaves[n:]), "misc")
    for (href, _), vocab, label in zip(hubs, (SPORT, SPORT, COOKING), ("sport", "sport", "cooking"), strict=True):
        add(store, href, page(href, words(vocab, 80, rng), leaves[:: 1 if label == "sport" else -1]), label)
    for href, _ in leaves:
        kind = "sport" if "/sport/" in href else "cooking"
        add(store, href, page(href, words(SPORT if kind == "sport" else COOKING, 80, rng), [("/", "home")]), kind)
    return store
