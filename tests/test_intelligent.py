"""Intelligent crawling (Aggarwal et al. 2001): K, each interest ratio by hand, the significance filter,
the balanced composite, saving K, and real crawls of a local site."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from focused.bench.runner import CrawlSpec, run_crawl
from focused.crawldb import iter_pages
from focused.learning.critic.topics import Verdict
from focused.learning.intelligent.knowledge import Knowledge, KnowledgeError, interest_ratios, sibling_ratio, url_tokens
from focused.replay.server import ReplayServer
from focused.replay.store import ReplayStore
from focused.strategies.base import FetchedPage
from focused.strategies.intelligent import IntelligentStrategy, page_id, parse_factors, to_score
from tests.sites import COOKING, HOST, NEUTRAL, SPORT, add, page, train_critic, words

# ---------------------------------------------------------------------- K and the ratios, by hand


def k20() -> IntelligentStrategy:
    """20 crawled pages, 5 satisfying (P(C) = 0.25):

    * ``alpha`` on the 5 satisfying pages and 1 other: n = 6, n^C = 5;
    * ``beta`` on one satisfying page and one other: n = 2, n^C = 1;
    * ``gamma`` on the 15 others: n = 15, n^C = 0;
    * URLs ``/sport/i.html`` (satisfying) and ``/food/i.html``.
    """
    s = IntelligentStrategy()
    for i in range(20):
        ok = i < 5
        text = " ".join(w for w, on in (("alpha", ok or i == 5), ("beta", i in (0, 6)), ("gamma", i >= 5)) if on)
        s.observe(f"http://x.test/{'sport' if ok else 'food'}/{i}.html", text, [], ok)
    return s


def test_url_tokens_split_on_dots_and_slashes():
    assert url_tokens("HTTP://www.Ski.example.co.uk/Resorts/alps.html#x") == [
        "www", "ski", "example", "co", "uk", "resorts", "alps", "html",
    ]  # fmt: skip


def test_interest_ratio_and_significance_by_hand():
    # P(C) = 0.25; alpha: P(C|Q) = 5/6, I = (5/6)/0.25 = 10/3, S = (5/6 - 1/4) / sqrt(0.1875/6) = 3.30
    ratio, significant = interest_ratios(np.array([5, 1, 0]), np.array([6, 2, 15]), 0.25)
    assert ratio[0] == pytest.approx(10 / 3)
    assert ratio[1] == pytest.approx(2.0)  # beta: S = 0.25 / sqrt(0.1875/2) = 0.82 < 2
    assert ratio[2] == pytest.approx((0.5 / 15) / 0.25)  # gamma: no satisfying page, half a count
    assert significant.tolist() == [True, False, True]  # gamma: S = 0.25 / sqrt(0.1875/15) = 2.24


def test_content_ratio_of_a_candidate_sums_the_significant_words_of_its_inlinking_pages():
    s = k20()
    assert (s.k.n_t, s.k.n_c) == (20, 5)
    s.observe("http://x.test/hub.html", "alpha beta gamma", ["http://x.test/new.html"], False)
    # the hub page is the 21st: P(C) = 5/21; alpha n=7 n^C=5, beta n=3 n^C=1, gamma n=16 n^C=0
    p = 5 / 21
    alpha = (5 / 7) / p
    gamma = (0.5 / 16) / p
    assert abs(5 / 7 - p) / math.sqrt(p * (1 - p) / 7) >= 2
    assert abs(1 / 3 - p) / math.sqrt(p * (1 - p) / 3) < 2  # beta: not significant, dropped
    assert abs(0 - p) / math.sqrt(p * (1 - p) / 16) >= 2
    logs = s.factor_logs([[page_id("http://x.test/hub.html"), []]])
    assert logs["content"] == pytest.approx(math.log(alpha) + math.log(gamma), rel=1e-5)


def test_a_word_that_is_not_significant_is_dropped():
    s = k20()
    s.observe("http://x.test/b.html", "beta", ["http://x.test/c.html"], False)  # beta: n=3, n^C=1
    assert s.factor_logs([[page_id("http://x.test/b.html"), []]])["content"] == 0.0
    # with a lower threshold it counts: log((1/3) / (5/21))
    loose = k20()
    loose.t = 0.3  # beta: S = (1/3 - 5/21) / sqrt(P(C)(1 - P(C)) / 3) = 0.39
    loose.observe("http://x.test/b.html", "beta", [], False)
    got = loose.factor_logs([[page_id("http://x.test/b.html"), []]])["content"]
    assert got == pytest.approx(math.log((1 / 3) / (5 / 21)), rel=1e-5)


def test_url_token_ratio_by_hand():
    s = k20()
    payload = s.score(FetchedPage("http://x.test/a", 0, Verdict(0.0, "x", ())), ["http://x.test/sport/99.html"])
    # sport: m = 5, m^C = 5: I = 1 / 0.25 = 4, S = 0.75 / sqrt(0.1875/5) = 3.9; x, test, html: I = 1;
    # 99 never seen
    assert s.factor_logs(payload.payloads)["url"] == pytest.approx(math.log(4.0), rel=1e-5)
    food = s.score(FetchedPage("http://x.test/a", 0, Verdict(0.0, "x", ())), ["http://x.test/food/99.html"])
    assert s.factor_logs(food.payloads)["url"] == pytest.approx(math.log((0.5 / 15) / 0.25), rel=1e-5)


def test_link_ratio_by_hand():
    s = IntelligentStrategy(["link"])
    s.k.n_t, s.k.n_c = 20, 5  # P(C) = 0.25
    s.k.links.update(pp=3, pn=2, np=1, nn=4)
    s.k.version += 1
    parents = {"http://x.test/p1": True, "http://x.test/p2": True, "http://x.test/n1": False}
    for url, ok in parents.items():
        s.satisfies[page_id(url)] = ok
    p = (3 / 10) / 0.25**2  # f1 / P(C)^2 = 4.8
    q = (1 / 10) / (0.25 * 0.75)  # f3 / (P(C)(1 - P(C))) = 0.533
    logs = s.factor_logs([[page_id(u), []] for u in parents])
    assert logs["link"] == pytest.approx(math.log(p**2 * q))  # k = 3, m = 2: p^m q^(k-m) = 12.29
    assert s.factor_logs([[page_id("http://x.test/never"), []]])["link"] == 0.0  # uncrawled parents are ignored


def test_sibling_ratio_by_hand():
    assert sibling_ratio(9, 15, 0.1) == pytest.approx(6.0)  # the paper's example: 9 / (15 * 0.1)
    assert sibling_ratio(0, 0, 0.1) == 1.0  # no visited sibling: no evidence
    assert sibling_ratio(0, 15, 0.1) == pytest.approx(0.5 / 1.5)  # none satisfying: half a sibling
    assert sibling_ratio(3, 10, 0.0) == 1.0


def test_the_graph_counts_link_types_and_siblings_in_any_order():
    s = IntelligentStrategy()
    a, b, c = (f"http://x.test/{n}" for n in "abc")
    s.observe(a, "w", [b, c], True)
    s.observe(c, "w", [], False)  # a -> c crawled: pn
    s.observe(b, "w", [a, c], True)  # b -> a (pp), a -> b (pp), b -> c (pn)
    assert s.k.links == {"pp": 2, "pn": 2, "np": 0, "nn": 0}
    assert s.visited_children[page_id(a)] == 2 and s.satisfying_children[page_id(a)] == 1
    s.observe(b, "w", [a, c], True)  # fetched again: counted once
    assert s.k.n_t == 3


def test_weights_balance_each_factor_over_the_candidates():
    s = IntelligentStrategy(["content", "url"])
    s.balance({"content": np.array([2.0, -2.0]), "url": np.array([0.5, 0.5])})
    assert s.weights == {"content": 0.5, "url": 2.0}
    assert s.combine({"content": np.array([2.0]), "url": np.array([0.5])})[0] == pytest.approx(2.0)
    assert 0.5 < to_score(0.1) < to_score(100.0) < to_score(101.0) < 1.0  # monotone, no early saturation


def test_factor_names():
    assert parse_factors("url+content") == ("content", "url")
    with pytest.raises(ValueError, match="valid: content, url, link, sibling"):
        parse_factors("colour")


def test_k_is_saved_and_loaded_without_pickle(tmp_path):
    s = k20()
    s.k.observe_link(True, False)
    path = s.k.save(tmp_path / "k.npz", metadata={"topic": "sport"})
    k = Knowledge.load(path)
    assert (k.n_t, k.n_c, k.links) == (20, 5, s.k.links)
    assert np.array_equal(k.word_n, s.k.word_n) and np.array_equal(k.token_mc, s.k.token_mc)
    (tmp_path / "bad.npz").write_bytes(b"\x80\x04junk")
    with pytest.raises(KnowledgeError, match="pickle"):
        Knowledge.load(tmp_path / "bad.npz")
    with pytest.raises(KnowledgeError, match="not found"):
        Knowledge.load(tmp_path / "none.npz")


# ---------------------------------------------------------------------- real crawls


def topical_site(n: int = 120, seed: int = 5) -> ReplayStore:
    """A home page linking to cooking pages first, then sport pages; each page links mostly (4 of 5
    links) to pages of its own kind, under ``/food/`` or ``/sport/``. Breadth-first crawls about half
    sport; a crawler that learns the URL tokens, the topical locality or the words does better."""
    rng = random.Random(seed)
    store = ReplayStore()
    kinds = {
        "sport": [f"/sport/{i}.html" for i in range(n // 2)],
        "cooking": [f"/food/{i}.html" for i in range(n // 2)],
    }
    home = [(u, "more") for u in kinds["cooking"][:6] + kinds["sport"][:3]]
    add(store, "/", page("Home", words(NEUTRAL, 30, rng), home), "misc")
    for kind, urls in kinds.items():
        other = kinds["cooking" if kind == "sport" else "sport"]
        vocab = SPORT if kind == "sport" else COOKING
        for url in urls:
            links = rng.sample(urls, 4) + rng.sample(other, 1)
            add(store, url, page(url, words(vocab, 60, rng), [(u, "read") for u in links]), kind)
    return store


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("intelligent")
    model = train_critic(tmp / "critic.npz")
    with ReplayServer(topical_site(), latency=0.005) as server:
        yield {"model": model, "proxy": server.proxy_url, "tmp": tmp}


def crawl(site, name, strategy, max_pages=50, **settings):
    spec = CrawlSpec(
        name=name,
        topic="sport",
        strategy=strategy,
        seeds=(HOST + "/",),
        model=site["model"],
        proxy=site["proxy"],
        db=site["tmp"] / f"{name}.sqlite",
        max_pages=max_pages,
        settings={"FOCUSED_REPLAY_CONCURRENCY": 1, "FOCUSED_ALLOW_INTERNAL": "127.0.0.0/8,::1", **settings},
    )
    result = run_crawl(spec, timeout=180)
    assert result.returncode == 0, result.log.read_text()[-3000:]
    return result, list(iter_pages(spec.db))


def sport_share(pages):
    return sum("/sport/" in p.url for p in pages) / len(pages)


@pytest.mark.parametrize("strategy", ["intelligent", "intelligent:url", "intelligent:link"])
def test_intelligent_crawl_learns_its_way_to_the_topic(site, strategy):
    result, pages = crawl(site, f"i-{strategy.replace(':', '-')}", strategy)
    _, bfs = crawl(site, "bfs", "bfs")
    assert len(pages) == len(bfs) == 50
    assert result.stats["focused/intelligent/rescores"] >= 4
    assert result.stats["focused/intelligent/pages"] >= 40
    assert sport_share(pages) >= sport_share(bfs) + 0.2, (sport_share(pages), sport_share(bfs))


def test_k_saved_by_one_crawl_starts_the_next(site):
    k_file = site["tmp"] / "k.npz"
    crawl(site, "first", "intelligent", FOCUSED_INTELLIGENT_SAVE=str(k_file))
    assert Knowledge.load(k_file).n_t >= 50
    _, cold = crawl(site, "cold", "intelligent", max_pages=20)
    _, warm = crawl(site, "warm", "intelligent", max_pages=20, FOCUSED_INTELLIGENT_LOAD=str(k_file))
    assert sport_share(warm) > sport_share(cold), (sport_share(warm), sport_share(cold))


def test_a_predicate_defines_relevance(site):
    # keywords only (no topic): sport pages contain "goal" or "team" nearly always; url: keeps it under /sport/
    predicate = "url:/sport/ and (text:goal or text:team) and not class:cooking>0.9"
    spec_settings = {"FOCUSED_PREDICATE": predicate}
    result, pages = crawl(site, "predicate", "intelligent", **spec_settings)
    assert all(p.relevance in (0.0, 1.0) for p in pages)
    assert all(p.relevance == 0.0 for p in pages if "/sport/" not in p.url)
    assert sum(p.relevance for p in pages) >= 0.9 * sum("/sport/" in p.url for p in pages)
    assert result.stats["focused/relevant_pages"] == sum(p.relevance for p in pages)
    _, bfs = crawl(site, "bfs-predicate", "bfs", **spec_settings)
    assert sport_share(pages) >= sport_share(bfs) + 0.2


def test_soft_counts_split_a_page_by_its_relevance():
    hard, soft = IntelligentStrategy(), IntelligentStrategy(soft=True)
    for s in (hard, soft):
        s.observe("http://x.test/a", "alpha", ["http://x.test/b"], 0.8)
        s.observe("http://x.test/b", "alpha beta", [], 0.3)
    assert (hard.k.n_c, soft.k.n_c) == (1.0, pytest.approx(1.1))
    assert hard.k.links == {"pp": 0, "pn": 1, "np": 0, "nn": 0}
    assert soft.k.links == pytest.approx({"pp": 0.24, "pn": 0.56, "np": 0.06, "nn": 0.14})
    ids = soft.words[page_id("http://x.test/b")]
    assert sorted(soft.k.word_nc[ids].tolist()) == pytest.approx([0.3, 1.1])  # beta, alpha


def test_bad_factor_or_k_file_is_one_clear_line(tmp_path):
    from scrapy.settings import Settings

    from focused.errors import ConfigError
    from focused.strategies.base import BuildContext
    from focused.strategies.intelligent import build_intelligent

    def context(values):
        return BuildContext(Settings(values), critic=None, topic=None, relevance_of=lambda *args: 0.0)

    cases = [
        ("intelligent:colour", {}, "strategy 'intelligent:colour': unknown intelligent-crawling factor 'colour'"),
        ("intelligent", {"FOCUSED_INTELLIGENT_FACTORS": "url,bogus"}, "FOCUSED_INTELLIGENT_FACTORS='url,bogus'"),
        ("intelligent", {"FOCUSED_INTELLIGENT_LOAD": str(tmp_path / "none.npz")}, "not found"),
        ("intelligent", {"FOCUSED_INTELLIGENT_SIGNIFICANCE": "-1"}, "must be a number >= 0"),
    ]
    for name, settings, message in cases:
        with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
            build_intelligent(name, context(settings))
        assert "\n" not in str(err.value)
    assert build_intelligent("intelligent:url+link", context({})).factors == ("url", "link")
