import pickle

import pytest
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from focused import signals
from focused.core.scheduler import PAYLOAD_META_KEY, FocusedScheduler
from tests.tripwire import tripwire_pickle


def make_scheduler(tmp_path=None, **settings):
    if tmp_path is not None:
        settings["JOBDIR"] = str(tmp_path / "job")
    crawler = get_crawler(Spider, settings_dict=settings)
    crawler.spider = crawler._create_spider("s")
    scheduler = FocusedScheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    return crawler, scheduler


def drain(scheduler):
    out = []
    while (request := scheduler.next_request()) is not None:
        out.append(request.url)
    return out


def test_best_first_across_domains():
    _, s = make_scheduler()
    for url, prio in [
        ("http://a.test/1", 5),
        ("http://b.test/1", 9),
        ("http://a.test/2", 7),
        ("http://c.test/", 1),
    ]:
        assert s.enqueue_request(Request(url, priority=prio))
    assert len(s) == 4 and s.has_pending_requests()
    assert drain(s) == ["http://b.test/1", "http://a.test/2", "http://a.test/1", "http://c.test/"]
    assert not s.has_pending_requests()


@pytest.mark.parametrize(("aggregation", "first"), [("max", "http://x.test/"), ("first", "http://y.test/")])
def test_a_url_found_again_merges_its_priority(aggregation, first):
    crawler, s = make_scheduler(FOCUSED_PARENT_AGGREGATION=aggregation)
    s.enqueue_request(Request("http://x.test/", priority=1))
    s.enqueue_request(Request("http://y.test/", priority=5))
    assert s.enqueue_request(Request("http://x.test/", priority=9)) is False
    assert len(s) == 2
    assert crawler.stats.get_value("focused/frontier/merged") == 1
    assert drain(s)[0] == first


def test_fetched_urls_are_filtered_but_dont_filter_requests_pass():
    _, s = make_scheduler()
    s.enqueue_request(Request("http://x.test/"))
    drain(s)
    assert s.enqueue_request(Request("http://x.test/")) is False
    assert s.enqueue_request(Request("http://x.test/", dont_filter=True)) is True
    assert s.enqueue_request(Request("http://x.test/", dont_filter=True)) is True
    assert len(s) == 2


@pytest.fixture(params=["memory", "sqlite"])
def store_dir(request, tmp_path):
    return None if request.param == "memory" else tmp_path


def test_rescore_signal_reorders_waiting_requests_using_payloads(store_dir):
    crawler, s = make_scheduler(store_dir)
    for i in range(5):
        s.enqueue_request(Request(f"http://x.test/{i}", priority=i, meta={PAYLOAD_META_KEY: {"good": i % 2 == 0}}))

    def scorer(payloads):
        assert len(payloads) == 5
        return [100 if p[0]["good"] else 0 for p in payloads]

    results = crawler.signals.send_catch_log(signals.rescore_frontier, scorer=scorer)
    assert [r for _, r in results] == [5]  # 0,2,4 went up; 1,3 went down
    out = drain(s)
    assert out == [f"http://x.test/{i}" for i in (0, 2, 4, 1, 3)]
    s.close("finished")


def test_the_payload_leaves_the_request_meta(store_dir):
    _, s = make_scheduler(store_dir)
    s.enqueue_request(Request("http://x.test/a", meta={PAYLOAD_META_KEY: [1, 2], "depth": 3}))
    request = s.next_request()
    assert PAYLOAD_META_KEY not in request.meta and request.meta["depth"] == 3
    s.close("finished")


def test_jobdir_round_trip_keeps_waiting_requests_payloads_and_the_seen_set(tmp_path):
    _, s = make_scheduler(tmp_path)
    s.enqueue_request(Request("http://x.test/a", priority=3, meta={PAYLOAD_META_KEY: [1, 2], "k": "v"}))
    s.enqueue_request(Request("http://x.test/b", priority=8, headers={"X-Test": "é"}))
    assert s.next_request().url == "http://x.test/b"
    s.close("shutdown")
    crawler2, s2 = make_scheduler(tmp_path)
    assert len(s2) == 1
    # the fetched URL stays filtered after the resume (the store's seen-set)
    assert s2.enqueue_request(Request("http://x.test/b")) is False
    seen = []
    crawler2.signals.send_catch_log(signals.rescore_frontier, scorer=lambda p: seen.extend(p) or [None] * len(p))
    assert seen == [[[1, 2]]]
    request = s2.next_request()
    assert (request.url, request.priority, request.meta["k"]) == ("http://x.test/a", 3, "v")
    assert s2.next_request() is None
    s2.close("finished")


def test_a_leased_request_is_acknowledged_only_when_the_engine_is_done(tmp_path):
    crawler, s = make_scheduler(tmp_path)

    class Slot:
        def __init__(self):
            self.inprogress = set()

    class Engine:
        _slot = Slot()

    crawler.engine = Engine()
    held = Engine._slot.inprogress
    s.enqueue_request(Request("http://x.test/a", priority=5))
    s.enqueue_request(Request("http://x.test/b", priority=1))
    a = s.next_request()
    held.add(a)  # what the engine does with a popped request
    assert s.next_request().url == "http://x.test/b"
    assert s.store.in_flight == 2  # a is still being handled; b has not been seen done yet
    s._settle()
    assert s.store.in_flight == 1
    held.discard(a)
    s._settle()
    assert s.store.in_flight == 0
    s.store.commit()
    s.store.close()  # without the scheduler's close: as if killed after the acknowledgements
    _, s2 = make_scheduler(tmp_path)
    assert s2.store.requeued == 0 and s2.next_request() is None
    s2.close("finished")


def test_jobdir_with_an_old_pickle_frontier_is_refused_without_loading_it(tmp_path):
    from focused.errors import ConfigError

    job = tmp_path / "job"
    job.mkdir()
    marker = tmp_path / "unpickled"
    (job / "focused-frontier.pickle").write_bytes(tripwire_pickle(marker))  # loading it would create the marker
    with pytest.raises(ConfigError, match="older focused"):
        make_scheduler(tmp_path)
    assert not marker.exists()
    pickle.loads((job / "focused-frontier.pickle").read_bytes())  # the tripwire works
    assert marker.exists()


def test_unknown_or_impossible_store_settings_are_config_errors():
    from focused.errors import ConfigError

    with pytest.raises(ConfigError, match="valid: auto, memory, sqlite"):
        make_scheduler(FOCUSED_FRONTIER_STORE="redis-ish")
    with pytest.raises(ConfigError, match="JOBDIR"):
        make_scheduler(FOCUSED_FRONTIER_STORE="sqlite")


@pytest.mark.parametrize("limit", [0, 2])
def test_no_request_is_handed_out_while_more_pages_than_allowed_await_scoring(limit):
    crawler, s = make_scheduler(FOCUSED_MAX_UNSCORED_PAGES=limit)

    class ScraperSlot:  # Scrapy's: responses queued for the spider and being scraped
        def __init__(self):
            self.queue, self.active = [], set()

    class Scraper:
        slot = ScraperSlot()

    class Engine:
        scraper = Scraper()

    crawler.engine = Engine()
    slot = Scraper.slot
    for i in range(3):
        s.enqueue_request(Request(f"http://x.test/{i}", priority=i))
    slot.active.update(f"page{i}" for i in range(limit))
    assert s.next_request().url == "http://x.test/2"  # `limit` pages await scoring: still allowed
    slot.queue.append("one more")
    assert s.next_request() is None and s.has_pending_requests()  # over the limit: held back
    assert crawler.stats.get_value("focused/frontier/held_back") == 1
    slot.queue.clear()
    assert s.next_request().url == "http://x.test/1"  # a page got through: the next one goes
    s.close("finished")


def test_the_replay_profile_is_strict_best_first_and_the_live_web_default_is_not():
    from scrapy.settings import Settings

    from focused.settings.profiles import apply_profile

    settings = Settings({"FOCUSED_PROFILE": "replay"})
    apply_profile(settings)
    assert settings.getint("FOCUSED_MAX_UNSCORED_PAGES") == 0
    _, s = make_scheduler()
    assert s.max_unscored == 16
