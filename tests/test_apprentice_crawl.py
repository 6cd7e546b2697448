"""The apprentice inside real crawls: switch-in, fetch order, re-scoring, pause and resume."""

from __future__ import annotations

import pytest

from focused.bench.runner import CrawlSpec, run_crawl
from focused.crawldb import iter_pages
from focused.replay.server import ReplayServer
from tests.sites import HOST, regions_site, train_critic

APPRENTICE = {
    "FOCUSED_APPRENTICE_BATCH": 10,
    "FOCUSED_APPRENTICE_MIN_INSTANCES": 20,
    "FOCUSED_APPRENTICE_DMAX": 4,
    "FOCUSED_REPLAY_CONCURRENCY": 1,
    # what these tests follow is the learned link context; the sibling term (on by default) is one per source
    # page, the same for a hub's cooking and sport links, and at γ = 2 it reorders the hubs themselves
    "FOCUSED_APPRENTICE_SIBLINGS": 0,
}
PAGES = 25 * 7


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("regions")
    model = train_critic(tmp / "critic.npz")
    # 20 ms a page: the crawl waits on the network as a real one does, and the training thread gets the CPU
    # it needs to switch in early on a loaded machine (the suite runs several test files at once)
    with ReplayServer(regions_site(), latency=0.02) as server:
        yield {"model": model, "proxy": server.proxy_url, "tmp": tmp}


def crawl(site, strategy, name, max_pages=0, resume=False, **settings):
    spec = CrawlSpec(
        name=name,
        topic="sport",
        strategy=strategy,
        seeds=(HOST + "/hub/0.html",),
        model=site["model"],
        proxy=site["proxy"],
        db=site["tmp"] / f"{name}.sqlite",
        max_pages=max_pages,
        settings={**APPRENTICE, **settings},
    )
    result = run_crawl(spec, timeout=180, resume=resume)
    assert result.returncode == 0, result.log.read_text()[-3000:]
    return result, [p.url for p in iter_pages(spec.db)]


def cook_share(order, start, n=40):
    leaves = [u for u in order[start:] if "/hub/" not in u][:n]
    return sum("/c/" in u for u in leaves) / len(leaves)


def test_apprentice_learns_the_good_region_and_the_baseline_does_not(site):
    result, apprentice = crawl(site, "apprentice", "apprentice")
    _, baseline = crawl(site, "baseline", "baseline")
    assert len(apprentice) == len(baseline) == PAGES
    stats = result.stats
    switch = stats["focused/apprentice/switched_in_at"]
    # training runs in a thread while the crawl goes on: how many pages pass before the
    # first model is swapped in depends on the machine's speed
    assert 20 <= switch <= 120
    assert stats["focused/apprentice/version"] >= 2  # retrained after switch-in
    assert stats["focused/frontier/rescored"] > 0
    assert 0 < stats["focused/apprentice/high_rate"] < 1
    # before switch-in both crawlers fetch in document order (cooking first)
    assert cook_share(baseline, switch) > 0.3
    # after it, the apprentice fetches the sport pages still waiting before cooking ones; the
    # window is those sport pages (a late switch-in leaves fewer of them, not a worse order)
    waiting_sport = 25 * 3 - sum("/s/" in u for u in apprentice[:switch])
    assert waiting_sport >= 20
    assert cook_share(apprentice, switch, n=min(40, waiting_sport)) < 0.15
    assert "switched in after" in result.log.read_text()


def test_a_crawl_keeps_its_links_waiting_for_their_targets_within_the_bound(site):
    result, order = crawl(site, "apprentice", "bounded", FOCUSED_APPRENTICE_MAX_PENDING=5)
    assert len(order) == PAGES  # the crawl goes on: only training instances are lost
    assert result.stats["focused/apprentice/pending_dropped"] > 0
    assert "FOCUSED_APPRENTICE_MAX_PENDING" in result.log.read_text()


def test_a_crawl_keeps_its_training_instances_within_the_bound(site):
    result, order = crawl(site, "apprentice", "few-instances", FOCUSED_APPRENTICE_MAX_INSTANCES=40)
    assert len(order) == PAGES
    assert result.stats["focused/apprentice/instances_dropped"] > 0
    assert result.stats["focused/apprentice/version"] >= 2  # it goes on learning from the latest instances
    assert "FOCUSED_APPRENTICE_MAX_INSTANCES" in result.log.read_text()


def test_pause_and_resume_keeps_the_frontier_and_the_model(site):
    jobdir = site["tmp"] / "job"
    first, order1 = crawl(site, "apprentice", "job", max_pages=70, JOBDIR=str(jobdir))
    assert "Saved the apprentice" in first.log.read_text()
    second, order = crawl(site, "apprentice", "job", resume=True, JOBDIR=str(jobdir))
    log = second.log.read_text()
    assert "Resumed the apprentice" in log and "model v" in log
    assert "Crawl database" in log and "(continued)" in log
    assert order[: len(order1)] == order1  # the same database, continued
    order2 = order[len(order1) :]
    assert not set(order1) & set(order2)
    assert len(set(order1) | set(order2)) == PAGES
    # the resumed crawl goes on preferring the good region from its first page
    assert cook_share(order2, 0, n=30) < 0.15


def test_offline_apprentice_needs_a_model(site):
    spec = CrawlSpec(
        name="offline",
        topic="sport",
        strategy="apprentice-offline",
        seeds=(HOST + "/hub/0.html",),
        model=site["model"],
        proxy=site["proxy"],
        db=site["tmp"] / "offline.sqlite",
        max_pages=5,
    )
    result = run_crawl(spec, timeout=120)
    assert result.returncode != 0
    assert "needs a trained apprentice" in result.log.read_text()
