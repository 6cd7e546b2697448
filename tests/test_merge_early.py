"""Links to URLs already waiting merge into the frontier at the link scoring middleware, as the scheduler
would have merged them: the same crawl, without the engine's path for most of a crawl's links."""

from __future__ import annotations

import pytest
from scrapy import Request, Spider
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from focused.bench.runner import CrawlSpec, run_crawl
from focused.core.scheduler import SCHEDULER_ATTR, FocusedScheduler
from focused.crawldb import iter_pages
from focused.replay.labels import write_labels
from focused.replay.server import ReplayServer
from focused.spidermiddlewares.scoring import LinkScoringMiddleware, merges_early
from tests.sites import HOST, shared_links_site, train_critic

PASS_THROUGH = "tests.sites.PassThroughSpiderMiddleware"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return train_critic(tmp_path_factory.mktemp("critic") / "critic.npz")


def _routing(model, **settings):
    middlewares = {
        "focused.spidermiddlewares.scoring.LinkScoringMiddleware": 950,
        **settings.pop("SPIDER_MIDDLEWARES", {}),
    }
    crawler = get_crawler(
        Spider,
        settings_dict={
            "FOCUSED_CRITIC_MODEL": str(model),
            "FOCUSED_TOPIC": "sport",
            "SPIDER_MIDDLEWARES": middlewares,
            **settings,
        },
    )
    crawler.spider = crawler._create_spider("t")
    scheduler = FocusedScheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    setattr(crawler, SCHEDULER_ATTR, scheduler)
    return LinkScoringMiddleware.from_crawler(crawler), scheduler, crawler.stats


def _response(depth=0):
    request = Request("http://site.test/page", meta={"depth": depth})
    return HtmlResponse(request.url, body=b"<html></html>", request=request)


def test_a_link_to_a_waiting_url_merges_its_priority_here_and_others_go_on(model):
    middleware, scheduler, stats = _routing(model)
    scheduler.enqueue_request(Request("http://site.test/waiting", priority=10))
    scheduler.enqueue_request(Request("http://site.test/fetched", priority=5))
    assert scheduler.next_request().url == "http://site.test/waiting"  # in flight now: settled
    scheduler.enqueue_request(Request("http://site.test/waiting2", priority=1))
    links = [Request(f"http://site.test/{name}", priority=900) for name in ("waiting", "waiting2", "new")]
    out = middleware._for_the_engine(_response(), links, merge=True)
    assert [r.url for r in out] == ["http://site.test/new"]
    assert stats.get_value("focused/frontier/merged_early") == 1
    assert stats.get_value("dupefilter/filtered") == 1  # the one in flight
    assert stats.get_value("request_depth_max") == 1
    # the merge raised the waiting URL's priority as the scheduler's own merge does: it comes out first now
    scheduler.enqueue_request(Request("http://site.test/fetched2", priority=500))
    assert scheduler.next_request().url == "http://site.test/waiting2"


@pytest.mark.parametrize(
    "settings",
    [
        {"SPIDER_MIDDLEWARES": {PASS_THROUGH: 940}},  # someone else's middleware nearer the engine
        {"DEPTH_PRIORITY": 1},
        {"DEPTH_STATS_VERBOSE": True},
    ],
)
def test_links_take_the_engines_path_when_something_on_it_could_change_them(model, settings):
    middleware, scheduler, stats = _routing(model, **settings)
    assert not merges_early(middleware.crawler.settings)
    scheduler.enqueue_request(Request("http://site.test/waiting", priority=10))
    out = middleware._for_the_engine(_response(), [Request("http://site.test/waiting")], merge=True)
    assert len(out) == 1 and stats.get_value("focused/frontier/merged_early") is None


def test_a_link_beyond_the_depth_limit_is_not_merged(model):
    middleware, scheduler, _ = _routing(model, DEPTH_LIMIT=3)
    assert merges_early(middleware.crawler.settings)  # a middleware of ours further from the engine is fine
    scheduler.enqueue_request(Request("http://site.test/waiting", priority=10))
    assert len(middleware._for_the_engine(_response(depth=3), [Request("http://site.test/waiting")], merge=True)) == 1
    assert not middleware._for_the_engine(_response(depth=2), [Request("http://site.test/waiting")], merge=True)


@pytest.mark.parametrize("strategy", ["baseline", "apprentice"])
def test_the_crawl_is_the_same_with_and_without_early_merges(tmp_path, model, strategy):
    store = shared_links_site()
    labels = tmp_path / "labels.tsv"
    write_labels(labels, ((u, store.labels[u], "site") for u in store.labels))
    runs = {}
    with ReplayServer(store) as server:
        # DEPTH_STATS_VERBOSE only adds stats, and sends every link the engine's way
        for name, extra in (("early", {}), ("engine", {"DEPTH_STATS_VERBOSE": True})):
            spec = CrawlSpec(
                name=name,
                topic="sport",
                strategy=strategy,
                seeds=(HOST + "/",),
                model=model,
                proxy=server.proxy_url,
                db=tmp_path / f"{name}.sqlite",
                max_pages=0,
                labels=labels,
                settings={
                    "FOCUSED_REPLAY_CONCURRENCY": 1,
                    "FOCUSED_APPRENTICE_MIN_INSTANCES": 5,
                    "FOCUSED_APPRENTICE_BATCH": 2,
                    "FOCUSED_APPRENTICE_WAIT": True,  # the same order whatever the training thread's speed
                    **extra,
                },
            )
            result = run_crawl(spec, timeout=120)
            assert result.returncode == 0, result.log.read_text()[-3000:]
            runs[name] = ([p.url for p in iter_pages(spec.db)], result.stats)
    (early, early_stats), (engine, engine_stats) = runs["early"], runs["engine"]
    assert len(early) == 14 and early == engine  # same pages, same order
    assert early_stats.get("focused/frontier/merged_early", 0) >= 5  # the first hub's links to cooking pages
    assert "focused/frontier/merged_early" not in engine_stats
    assert early_stats["focused/frontier/merged"] == engine_stats["focused/frontier/merged"]
    assert early_stats["request_depth_max"] == engine_stats["request_depth_max"]
    if strategy == "apprentice":  # the crawl waited for its retrains
        assert early_stats.get("focused/frontier/held_back_training", 0) > 0
