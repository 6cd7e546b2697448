"""End-to-end crawls: ``scrapy crawl focused`` through the replay proxy of a generated site."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from focused.bench.runner import PROJECT_ROOT, CrawlSpec, run_crawl
from focused.crawldb import iter_links, iter_pages, read_meta
from focused.replay.labels import write_labels
from focused.replay.server import ReplayServer
from tests.commands import scrapy_crawl
from tests.sites import HOST, hub_site, train_critic


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("site")
    store = hub_site()
    labels = tmp / "labels.tsv"
    write_labels(labels, ((u, store.labels[u], "site") for u in store.labels))
    model = train_critic(tmp / "critic.npz")
    with ReplayServer(store) as server:
        yield {"store": store, "labels": labels, "model": model, "proxy": server.proxy_url, "tmp": tmp}


def crawl(site, strategy, name, resume=False, **settings):
    spec = CrawlSpec(
        name=name,
        topic="sport",
        strategy=strategy,
        seeds=(HOST + "/",),
        model=site["model"],
        proxy=site["proxy"],
        db=site["tmp"] / f"{name}.sqlite",
        max_pages=0,
        labels=site["labels"],
        settings={"FOCUSED_REPLAY_CONCURRENCY": 1, **settings},
    )
    result = run_crawl(spec, timeout=120, resume=resume)
    assert result.returncode == 0, result.log.read_text()[-3000:]
    return result, [p.url for p in iter_pages(spec.db)]


def leaf_positions(order, kind):
    return [i for i, url in enumerate(order) if f"/{kind}/" in url and url.endswith(".html")]


def test_baseline_and_bfs_fetch_in_different_orders(site):
    _, bfs = crawl(site, "bfs", "bfs")
    _, best = crawl(site, "baseline", "baseline")
    assert len(bfs) == len(best) == 15  # home, two hubs, 12 leaves
    assert set(bfs) == set(best)
    # breadth-first: the cooking hub was discovered first, so its leaves come first
    assert max(leaf_positions(bfs, "cook")) < min(leaf_positions(bfs, "sport"))
    # best-first on Pr(sport|u): the sport hub's leaves jump ahead of the cooking ones
    assert max(leaf_positions(best, "sport")) < min(leaf_positions(best, "cook"))


def test_oracle_and_crawl_database(site):
    result, order = crawl(site, "oracle", "oracle")
    assert max(leaf_positions(order, "sport")) < min(leaf_positions(order, "cook"))
    pages = list(iter_pages(result.spec.db))
    assert [p.fetch_order for p in pages] == list(range(1, len(pages) + 1))
    assert pages[0].url == HOST + "/" and pages[0].parent is None and pages[0].depth == 0
    sport = [p for p in pages if "/sport/" in p.url]
    cook = [p for p in pages if "/cook/" in p.url]
    assert min(p.relevance for p in sport) > 0.5 > max(p.relevance for p in cook)
    assert {p.predicted_class for p in sport} == {"sport"}
    assert all(p.parent == HOST + "/sport/" for p in sport if p.url.endswith(".html"))
    assert (HOST + "/", HOST + "/cook/") in set(iter_links(result.spec.db))
    meta = read_meta(result.spec.db)
    assert meta["topic"] == "sport" and meta["strategy"] == "oracle"
    stats = result.stats
    assert stats["focused/pages"] == 15
    assert stats["focused/relevant_pages"] == len(sport)
    assert 0 < stats["focused/harvest_rate"] < 1
    assert stats["focused/loss_rate"] == pytest.approx(1 - stats["focused/harvest_rate"], abs=1e-3)
    assert stats["focused/links_scored"] > 0


@pytest.mark.parametrize("threshold", [0.1, 1.0])  # the home page is at ~0.13, the sport pages at ~0.998
def test_the_relevance_threshold_decides_which_pages_count_as_relevant(site, threshold):
    """``FOCUSED_RELEVANCE_THRESHOLD`` (not the default 0.5) sets the relevant count in the stats and the database."""
    result, _ = crawl(site, "bfs", f"threshold-{threshold}", FOCUSED_RELEVANCE_THRESHOLD=threshold)
    relevance = [p.relevance for p in iter_pages(result.spec.db)]
    expected = sum(r >= threshold for r in relevance)
    assert expected != sum(r >= 0.5 for r in relevance)  # this site tells the threshold from the default
    assert result.stats["focused/relevant_pages"] == expected
    assert read_meta(result.spec.db)["stats"]["focused/relevant_pages"] == expected


def test_page_budget_and_feed_export(site):
    feed = site["tmp"] / "items.jsonl"
    result, order = crawl(
        site,
        "baseline",
        "budget",
        FOCUSED_MAX_PAGES=5,
        FEEDS=json.dumps({str(feed): {"format": "jsonlines"}}),
    )
    assert len(order) == 5  # the budget is exact (tests/test_budget.py)
    assert result.stats["finish_reason"] == "focused_max_pages"
    items = [json.loads(line) for line in feed.read_text().splitlines()]
    assert len(items) == len(order)
    assert {"url", "fetch_order", "relevance", "predicted_class", "parent", "depth"} <= set(items[0])
    assert items[0]["text"] is None and items[0]["html"] is None  # the page itself is not exported


def run_scrapy(*args, cwd=PROJECT_ROOT):
    return scrapy_crawl(*args, "-s", "FOCUSED_DB=", cwd=cwd)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-a", "topic=nosuchtopic", "-a", "seeds=http://a.test/"], "nosuchtopic"),
        (["-a", "topic=sport", "-a", "seeds=ftp://a.test/x"], "seeds must be http(s) URLs"),
        (["-a", "topic=sport", "-a", "seeds=http://a.test/", "-a", "strategy=dfs"], "unknown strategy"),
        (["-a", "topic=sport", "-a", "seeds=http://a.test/", "-a", "colour=red"], "unknown spider argument"),
    ],
)
def test_bad_input_fails_with_a_clear_message(site, args, message):
    proc = run_scrapy(*args, "-a", f"model={site['model']}")
    assert proc.returncode != 0
    assert message in proc.stderr


def test_missing_model_says_how_to_build_it(tmp_path):
    proc = run_scrapy("-a", "topic=course", "-a", "seeds=http://a.test/", "-a", f"model={tmp_path / 'none.npz'}")
    assert proc.returncode != 0
    assert "focused train-topic" in proc.stderr and "make models" not in proc.stderr


def test_unknown_topic_lists_valid_ones(site):
    proc = run_scrapy("-a", "topic=chess", "-a", "seeds=http://a.test/", "-a", f"model={site['model']}")
    assert "cooking" in proc.stderr and "sport" in proc.stderr


def test_jobdir_pause_and_resume_keeps_the_frontier(site):
    jobdir = site["tmp"] / "job"
    _, order1 = crawl(site, "baseline", "job", JOBDIR=str(jobdir), FOCUSED_MAX_PAGES=4)
    assert (Path(jobdir) / "frontier.sqlite").exists()
    assert not list(Path(jobdir).glob("*.pickle"))
    second, order = crawl(site, "baseline", "job", resume=True, JOBDIR=str(jobdir))
    _, reference = crawl(site, "baseline", "job-reference")
    assert order[:4] == order1  # the crawl database is continued
    assert not set(order1) & set(order[4:])  # nothing fetched twice
    assert len(order) == 15  # and nothing lost
    assert order == reference  # the same order as without the pause
    assert "Resuming crawl" in second.log.read_text()


def test_links_without_a_usable_host_are_dropped():
    from scrapy.http import HtmlResponse

    from focused.spiders.focused import FocusedSpider

    body = (
        b'<a href="http:// www.guess.com">space</a><a href="http://%20/x">blank host</a>'
        b'<a href="mailto:a@b.c">mail</a><a href="/ok.html">ok</a><a href="#top">self</a>'
        b'<a href="http://user@example.org:8080/x">port</a><a href="/ok.html">again</a>'
    )
    response = HtmlResponse("http://site.test/", body=body, encoding="utf-8")
    links = FocusedSpider._links(FocusedSpider.__new__(FocusedSpider), response)
    assert links == ["http://site.test/ok.html", "http://user@example.org:8080/x"]
