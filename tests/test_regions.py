"""Regions of a page's links (focused.page.regions) and sibling feedback per region."""

from __future__ import annotations

import numpy as np
import pytest

from focused.bench.runner import CrawlSpec, run_crawl
from focused.crawldb import iter_pages
from focused.learning.apprentice.pagelinks import page_payloads
from focused.learning.apprentice.payload import LinkPayload
from focused.learning.apprentice.siblings import SiblingFeedback, payload_tags, source_tag
from focused.page.parse import parse_page
from focused.page.regions import link_regions
from focused.page.stream import stream_page
from focused.replay.server import ReplayServer
from tests.sites import HOST, train_critic, two_lists_site

DEPARTMENT = """<html><body><h2>Faculty</h2><ul><li><a href="/f1">A</a></li><li><a href="/f2">B</a></li></ul>
<h2>Students</h2><a href="/s1">C</a><br><a href="/s2">D</a><br><a href="/s3">E</a>
<table><tr><td><a href="/c1">x</a></td><td><a href="/c2">y</a></td></tr></table>
<p>some text and <a href="/lone">a link</a> alone in its paragraph</p></body></html>"""


def test_each_list_and_each_headed_run_of_links_is_a_region():
    page = parse_page(DEPARTMENT)
    assert [href for href, _, _ in page.links] == ["/f1", "/f2", "/s1", "/s2", "/s3", "/c1", "/c2", "/lone"]
    # the list; the links under "Students" in the body (and the paragraph's lone link with them); the table
    assert page.link_regions() == [0, 0, 1, 1, 1, 2, 2, 1]


def test_a_link_alone_in_its_container_joins_the_parent_and_headings_divide():
    # containers 1 (body) > 2 (p) for the first link, 1 > 3 (ul) for two more; no heading
    assert link_regions([((1, 2), 0), ((1, 3), 0), ((1, 3), 0)]) == [0, 1, 1]
    # the same container under two headings: two regions; a single link under a heading joins nothing
    assert link_regions([((1,), 0), ((1,), 0), ((1,), 1), ((1,), 1), ((1,), 2)]) == [0, 0, 1, 1, 2]
    assert link_regions([]) == []


def test_the_streaming_parser_gives_no_regions_and_truncation_keeps_them_parallel():
    assert stream_page(DEPARTMENT).link_regions() == []  # one region: the page
    page = parse_page(DEPARTMENT)
    page.truncate(3)
    assert len(page.links) == len(page.places) == len(page.link_regions()) == 3


def views(texts, urls):
    return np.full(len(texts), 0.3)


def test_payloads_carry_the_tag_of_their_region_or_of_the_page():
    url = "http://x.test/dept"
    page = parse_page(DEPARTMENT)
    links = ["http://x.test/f1", "http://x.test/s1", "http://x.test/s2", "http://x.test/c1", "http://x.test/gone"]
    kw = {"relevance": 0.5, "top_classes": [], "n_features": 2**10, "d_max": 2, "snippet_critic": views}
    by_page = payload_tags(page_payloads(page, url, links, tagged=True, **kw))
    assert set(by_page.tolist()) == {source_tag(url)}
    by_region = payload_tags(page_payloads(page, url, links, tagged=True, regions=True, **kw)).tolist()
    # a link the parse did not see gets the page's tag
    assert by_region == [
        source_tag(url, 0),
        source_tag(url, 1),
        source_tag(url, 1),
        source_tag(url, 2),
        source_tag(url),
    ]
    assert len(set(by_region)) == 4


def test_each_region_is_a_source_of_its_own():
    s = SiblingFeedback(weight=1.0, pseudo_count=2.0, regions=True)
    url = "http://x.test/dept"
    good, bad, fresh = source_tag(url, 0), source_tag(url, 1), source_tag(url, 2)
    for tag, relevance in [(good, 0.9)] * 4 + [(bad, 0.05)] * 4:
        s.observe([tag], relevance)
        s.page_judged(relevance)
    tags = np.array([good, bad, fresh, source_tag(url)])
    terms = s.term(tags)
    # the good list lifted, the bad one sunk; a list (or the page's unplaced links) of no judged child: none
    assert terms[0] > 0 > terms[1] and terms[2] == terms[3] == 0.0
    assert np.allclose(s.term(np.repeat(tags, 1000))[::1000], terms)  # the batch path of a re-scoring


def test_the_anchor_spread_is_noted_per_source():
    s = SiblingFeedback(weight=2.0, spread_scale=2.0)
    a, b = source_tag("http://x.test/p", 0), source_tag("http://x.test/p", 1)
    side = [np.array([0.0, z, t], dtype=np.float32) for z, t in [(1.0, a), (1.0, a), (-3.0, b), (3.0, b)]]
    s.note_source([LinkPayload(np.zeros(1, dtype=np.int32), x) for x in side])
    assert s._children[int(a)][3] == pytest.approx(0.0)
    assert s._children[int(b)][3] == pytest.approx(3.0)


@pytest.fixture(scope="module")
def lists(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lists")
    model = train_critic(tmp / "critic.npz")
    with ReplayServer(two_lists_site()) as server:
        yield {"model": model, "proxy": server.proxy_url, "tmp": tmp}


def crawl(web, name, **settings):
    spec = CrawlSpec(
        name=name,
        topic="sport",
        strategy="apprentice",
        seeds=(HOST + "/",),
        model=web["model"],
        proxy=web["proxy"],
        db=web["tmp"] / f"{name}.sqlite",
        max_pages=32,  # home, the index and 30 of the 60 leaves
        settings={
            "FOCUSED_REPLAY_CONCURRENCY": 1,
            "FOCUSED_APPRENTICE_MIN_INSTANCES": 10**9,
            "FOCUSED_APPRENTICE_REFRESH_PAGES": 5,
            **settings,
        },
    )
    result = run_crawl(spec, timeout=180)
    assert result.returncode == 0, result.log.read_text()[-3000:]
    return [p.url for p in iter_pages(spec.db)]


def test_feedback_per_region_turns_to_the_list_whose_leaves_were_on_topic(lists):
    per_page = crawl(lists, "page")  # the default: one source, the index page
    per_region = crawl(lists, "region", FOCUSED_APPRENTICE_SIBLINGS_REGIONS=True)
    sport = [sum("/b/" in u for u in order) for order in (per_page, per_region)]
    # both lists are one page's: its term lifts or lowers all its leaves alike, and they are fetched in
    # the order found (the cooking list first); per region, the sport list once a few of each were judged
    assert sport[1] >= sport[0] + 10, sport
    # lifting only, nothing turns the crawl away from the cooking list: its leaves keep the prior's order
    lifting = crawl(
        lists, "region-lift", FOCUSED_APPRENTICE_SIBLINGS_REGIONS=True, FOCUSED_APPRENTICE_SIBLINGS_LOWER=False
    )
    assert sum("/b/" in u for u in lifting) < sport[1], (lifting, sport)


def test_region_counts_survive_a_checkpoint_and_the_bench_variant_sets_them():
    from focused.bench.suite import split_strategy

    s = SiblingFeedback(weight=1.0, regions=True)
    tags = np.array([source_tag("http://x.test/a", 0), source_tag("http://x.test/a", 1)])
    s.observe(tags.tolist(), 0.8)
    s.page_judged(0.8)
    restored = SiblingFeedback(weight=1.0, regions=True)
    restored.restore_arrays(s.state_arrays())  # page keys sit above the 24 bits of tags
    assert np.allclose(restored.term(tags), s.term(tags)) and s.term(tags).any()
    assert split_strategy("apprentice:regions") == ("apprentice", {"FOCUSED_APPRENTICE_SIBLINGS_REGIONS": True})
