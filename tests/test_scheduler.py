import pytest
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from focused import signals
from focused.scheduler import PAYLOAD_META_KEY, FocusedScheduler


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


def test_rescore_signal_reorders_waiting_requests_using_payloads():
    crawler, s = make_scheduler()
    for i in range(5):
        s.enqueue_request(Request(f"http://x.test/{i}", priority=i, meta={PAYLOAD_META_KEY: {"good": i % 2 == 0}}))
    # the payload is kept by the frontier, not carried in the request
    assert all(PAYLOAD_META_KEY not in e.item.meta for e in s.frontier)

    def scorer(requests, payloads):
        assert len(requests) == len(payloads) == 5
        return [100 if p[0]["good"] else 0 for p in payloads]

    results = crawler.signals.send_catch_log(signals.rescore_frontier, scorer=scorer)
    assert [r for _, r in results] == [5]  # 0,2,4 went up; 1,3 went down
    assert drain(s) == [f"http://x.test/{i}" for i in (0, 2, 4, 1, 3)]


def test_jobdir_round_trip(tmp_path):
    _, s = make_scheduler(tmp_path)
    s.enqueue_request(Request("http://x.test/a", priority=3, meta={PAYLOAD_META_KEY: [1, 2]}))
    s.enqueue_request(Request("http://x.test/b", priority=8))
    assert s.next_request().url == "http://x.test/b"
    s.close("shutdown")
    _, s2 = make_scheduler(tmp_path)
    assert len(s2) == 1
    entry = next(iter(s2.frontier))
    assert entry.payloads == [[1, 2]] and entry.priority == 3
    # the fetched URL stays filtered after the resume (the dupefilter's own JOBDIR state)
    assert s2.enqueue_request(Request("http://x.test/b")) is False
    assert drain(s2) == ["http://x.test/a"]
    s2.close("finished")
