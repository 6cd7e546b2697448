"""Small generated webs and critics for crawl tests."""

from __future__ import annotations

import random
from pathlib import Path

from focused.learning.critic import Critic
from focused.replay import ReplayStore, StoredResponse

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
