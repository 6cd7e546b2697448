"""Crawler traps: canonical URLs, near-duplicates, trap patterns, limits, and real crawls of a small probe."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request
from scrapy.utils.test import get_crawler

from focused.bench.studies.traps import DEFENCES_OFF, TRAPS, run_case
from focused.bench.studies.trapweb import TrapWeb, train_probe_critic
from focused.core.trapstate import TrapState, url_pattern
from focused.crawldb import iter_pages
from focused.downloadermiddlewares.trapguard import TrapGuardMiddleware
from focused.errors import ConfigError
from focused.page.simhash import SimHashIndex, distance, simhash
from focused.replay.server import ReplayServer
from focused.spidermiddlewares.canonical import strip_session_ids
from focused.spidermiddlewares.linkguard import LinkGuardMiddleware, path_repeats
from focused.spidermiddlewares.neardup import NearDuplicateMiddleware

NAMES = frozenset({"phpsessid", "jsessionid", "sid"})


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("http://a.test/p?PHPSESSID=0a1b2c&x=1", "http://a.test/p?x=1"),
        ("http://a.test/p?x=1&phpsessid=0a1b&y=2#top", "http://a.test/p?x=1&y=2#top"),
        ("http://a.test/p;jsessionid=ABC123?sort=new&SID=ff", "http://a.test/p?sort=new"),
        ("http://a.test/dir;jsessionid=ABC/page.html", "http://a.test/dir/page.html"),
        ("http://a.test/p;type=a?q=1", "http://a.test/p;type=a?q=1"),
        ("http://a.test/p?side=1&sids=2", "http://a.test/p?side=1&sids=2"),
        ("http://a.test/p", "http://a.test/p"),
    ],
)
def test_session_ids_are_dropped(url: str, canonical: str) -> None:
    assert strip_session_ids(url, NAMES) == canonical


def test_path_repeats_and_patterns() -> None:
    assert path_repeats("http://a.test/docs/docs/docs/x") == 3
    assert path_repeats("http://a.test/a/b/a/b/a/b/") == 3
    assert path_repeats("http://a.test/") == 0
    assert url_pattern("http://A.test/calendar/2026/11?day=3&view=m") == "a.test/calendar/0/0?day&view"
    assert (
        url_pattern("http://a.test/p/12.html")
        == url_pattern("http://a.test/p/7.html")
        != url_pattern("http://a.test/q/7")
    )


def _text(rng: random.Random, n: int = 150) -> str:
    return " ".join(
        rng.choice("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()) for _ in range(n)
    )


def test_simhash_near_duplicates() -> None:
    rng = random.Random(0)
    base = _text(rng)
    assert simhash("too short") is None
    assert distance(simhash(base), simhash(base)) == 0  # type: ignore[arg-type]
    # Dates, counters and ids do not count; one word changed in 150 barely moves the fingerprint.
    assert distance(simhash(base + " 3 November 2026"), simhash(base + " 28 November 2031")) <= 3  # type: ignore[arg-type]
    assert distance(simhash(base + " extra"), simhash(base)) <= 3  # type: ignore[arg-type]
    # Pages full of numbers are not alike for that (a phone list and a short course page).
    phones = " ".join(f"{name} 255 {i} 3 4 5" for i, name in enumerate(_text(rng, 300).split()))
    course = "weeks " + " ".join(str(i) for i in range(1, 30)) + " " + _text(rng, 40)
    assert distance(simhash(phones), simhash(course)) > 10  # type: ignore[arg-type]
    others = [simhash(_text(rng)) for _ in range(20)]
    assert min(distance(simhash(base), o) for o in others) > 10  # type: ignore[arg-type]


@pytest.mark.parametrize("k", [0, 3, 7])
def test_simhash_index_finds_exactly_the_close_fingerprints(k: int) -> None:
    rng = random.Random(k)
    index = SimHashIndex(k)
    stored = [rng.getrandbits(64) for _ in range(200)]
    for fp in stored:
        index.add(fp)
    for fp in stored[:50]:
        bits = rng.sample(range(64), k + 1)
        near = fp
        for b in bits[:k]:
            near ^= 1 << b
        assert index.nearest(near) is not None
        assert index.nearest(near ^ (1 << bits[k])) is None  # k + 1 bits away (the others are ~32 away)
    with pytest.raises(ValueError, match="0 to 15"):
        SimHashIndex(16)


def test_a_pattern_becomes_a_trap_when_most_of_its_pages_are_near_duplicates() -> None:
    state = TrapState(distance=3, pattern_duplicates=3)
    assert not state.page("http://a.test/cal/1", 0b1)
    for month in (2, 3):
        assert state.page(f"http://a.test/cal/{month}", 0b11)
    assert not state.is_trap("http://a.test/cal/99")
    assert state.page("http://a.test/cal/4", 0b111)
    assert state.is_trap("http://a.test/cal/99") and not state.is_trap("http://a.test/other/1")
    # A pattern whose near-duplicates are a minority is no trap.
    minority = TrapState(distance=0, pattern_duplicates=2)
    for i in range(5):
        minority.page(f"http://a.test/p/{i}", 1 << (10 + i))
    minority.page("http://a.test/p/5", 1 << 10)
    minority.page("http://a.test/p/6", 1 << 11)
    assert not minority.is_trap("http://a.test/p/7")


def test_per_host_budget() -> None:
    crawler = get_crawler(settings_dict={"FOCUSED_MAX_PAGES_PER_HOST": 2})
    crawler.stats.open_spider()
    mw = TrapGuardMiddleware.from_crawler(crawler)
    for url in ("http://a.test/1", "http://a.test/robots.txt", "http://A.test/2", "http://b.test/1"):
        assert mw.process_request(Request(url)) is None
    for url in ("http://a.test/3", "http://a.test/4"):
        with pytest.raises(IgnoreRequest):
            mw.process_request(Request(url))
    assert crawler.stats.get_value("focused/traps/host_budget") == 2


@pytest.mark.parametrize(
    ("setting", "value", "component"),
    [
        ("FOCUSED_MAX_DEPTH", -1, LinkGuardMiddleware),
        ("FOCUSED_MAX_PATH_REPEATS", "many", LinkGuardMiddleware),
        ("FOCUSED_MAX_PAGES_PER_HOST", -5, TrapGuardMiddleware),
        ("FOCUSED_NEAR_DUPLICATE_BITS", 20, NearDuplicateMiddleware),
    ],
)
def test_bad_limits_are_config_errors(setting: str, value: object, component: type) -> None:
    with pytest.raises(ConfigError, match=setting):
        component.from_crawler(get_crawler(settings_dict={setting: value}))


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("traps")
    with ReplayServer(TrapWeb(40, seed=1)) as server:
        yield {"tmp": tmp, "proxy": server.proxy_url, "model": train_probe_critic(tmp / "critic.model")}


def test_traps_are_contained(probe: dict) -> None:
    """A 40-page site and its traps, budget 100: bfs fetches the whole site and few trap pages."""
    case = run_case(probe["tmp"], probe["proxy"], probe["model"], "bfs", 100, {})
    assert case["site"] == 40
    assert case["in_traps"] <= 12, case
    assert case["stats"]["session_ids"] > 0 and case["stats"]["near_duplicate"] > 0


def test_without_the_defences_the_traps_take_the_budget(probe: dict) -> None:
    """The same crawl with every defence off: the probe does trap a crawler (the test above can fail)."""
    case = run_case(probe["tmp"], probe["proxy"], probe["model"], "bfs", 100, dict(DEFENCES_OFF))
    assert sum(case[k] for k in TRAPS) >= 40, case


def test_depth_and_path_limits_alone_bound_the_growing_path(probe: dict) -> None:
    settings = {"FOCUSED_NEAR_DUPLICATES": False, "FOCUSED_MAX_DEPTH": 3, "FOCUSED_MAX_PATH_REPEATS": 2}
    case = run_case(probe["tmp"], probe["proxy"], probe["model"], "bfs", 100, settings, name="limits")
    assert case["growing_path"] <= 2, case  # /docs/ and /docs/docs/
    db = Path(probe["tmp"]) / "limits.sqlite"
    assert max(p.depth for p in iter_pages(db)) <= 3
    assert case["stats"]["too_deep"] > 0


def test_fingerprints_from_the_word_table_equal_those_computed_afresh(monkeypatch):
    import zlib

    import numpy as np

    from focused.page import simhash as sh
    from focused.page import words as wordtable

    text = "Monday 12 March: the 3rd page of 2007 lists 45 courses " * 3 + "physics atoms quarks Tuesday x1y2"
    words = sh.tokenize(text)
    fresh = np.array(
        [
            zlib.crc32(("0" if w in sh._DATE_WORDS else w if w.isalpha() else sh._DIGITS.sub("0", w)).encode())
            for w in words
        ],
        dtype=np.uint64,
    )
    assert np.array_equal(sh._word_hashes(words), fresh)
    bigrams = sh._bigram_hashes(fresh)
    expected = int(sum(1 << i for i in range(64) if 2 * sum(int(h) >> i & 1 for h in bigrams) > len(bigrams)))
    assert sh.simhash(text) == expected
    # a table far too small for the page's words: the fingerprint comes from the plain path, the same
    monkeypatch.setattr(wordtable, "_table", wordtable.WordTable(max_words=5))
    assert sh.simhash(text) == expected
    # a table cleared again and again on the way (each text fits, the two together do not)
    monkeypatch.setattr(wordtable, "_table", wordtable.WordTable(max_words=len(set(text.lower().split())) + 5))
    for _ in range(3):
        assert sh.simhash(text) == expected
        assert sh.simhash("completely other words here for a change of the table " * 2) is not None
    assert sh._word_hash("march") == sh._word_hash("0") == sh._word_hash("2007")
