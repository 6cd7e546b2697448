"""On a polite crawl of one site, the frontier hands out no request while one waits in the downloader
(``FOCUSED_MAX_QUEUED_DOWNLOADS``): a request handed out early waits there behind the site's delay with the
priority it had, and the links found meanwhile, better ones, wait behind it."""

from __future__ import annotations

import random

import pytest

from focused.bench.runner import CrawlSpec, run_crawl
from focused.crawldb import iter_pages
from focused.replay.server import ReplayServer
from focused.replay.store import ReplayStore
from tests.sites import COOKING, HOST, NEUTRAL, SPORT, add, page, train_critic, words


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return train_critic(tmp_path_factory.mktemp("critic") / "critic.npz")


def hub_behind_a_menu(n: int = 8, seed: int = 5) -> ReplayStore:
    """``/`` links to n cooking pages (its menu) and to a sport hub, which links to n sport pages."""
    rng = random.Random(seed)
    store = ReplayStore()
    cooking = [(f"/cook/{i}.html", words(COOKING, 3, rng)) for i in range(n)]
    sport = [(f"/sport/{i}.html", words(SPORT, 3, rng)) for i in range(n)]
    add(store, "/", page("Home", words(NEUTRAL, 40, rng), [*cooking, ("/sport/", words(SPORT, 3, rng))]), "misc")
    add(store, "/sport/", page("Sport", words(SPORT, 80, rng), sport), "sport")
    for links, vocab, label in ((cooking, COOKING, "cooking"), (sport, SPORT, "sport")):
        for href, _ in links:
            add(store, href, page(href, words(vocab, 80, rng), [("/", "home")]), label)
    return store


def polite_crawl(model, tmp_path, max_queued: int) -> tuple[list[str], dict]:
    with ReplayServer(hub_behind_a_menu()) as server:
        spec = CrawlSpec(
            name=f"polite-{max_queued}",
            topic="sport",
            strategy="apprentice",
            seeds=(HOST + "/",),
            model=model,
            proxy=server.proxy_url,
            db=tmp_path / f"polite-{max_queued}.sqlite",
            max_pages=6,
            settings={  # the live web's politeness, as the project's defaults have it, on one site
                "DOWNLOAD_DELAY": 0.3,
                "CONCURRENT_REQUESTS": 16,
                "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
                "FOCUSED_MAX_UNSCORED_PAGES": 16,
                "FOCUSED_MAX_QUEUED_DOWNLOADS": max_queued,
            },
        )
        result = run_crawl(spec, timeout=120)
    assert result.returncode == 0, result.log.read_text()[-3000:]
    return [p.url.removeprefix(HOST) for p in iter_pages(spec.db)], result.stats


def test_a_polite_crawl_hands_out_the_best_links_found_not_the_first(model, tmp_path):
    fetched, stats = polite_crawl(model, tmp_path, 1)
    assert fetched[:2] == ["/", "/sport/"] and len(fetched) == 6, fetched
    # one cooking page may leave while the hub is downloading (its links are not in yet); then the hub's
    assert sum(url.startswith("/sport/") for url in fetched[2:]) >= 3, fetched
    assert stats.get("focused/frontier/held_back_queued", 0) > 0
    # without the limit the whole menu leaves with the hub, and waits in the downloader before its links
    unlimited, stats = polite_crawl(model, tmp_path, 0)
    assert unlimited[:2] == ["/", "/sport/"] and all(url.startswith("/cook/") for url in unlimited[2:]), unlimited
    assert "focused/frontier/held_back_queued" not in stats
