"""What a fetched page costs in Redis calls, and the size cap of the Redis frontier.

A page's links go to Redis in one script call, a pop carries the acknowledgements,
the frontier-size stats come with the replies, and a push over
``FOCUSED_FRONTIER_MAX_SIZE`` drops the lowest-priority waiting URLs. Every test
talks to a real ``redis-server`` on a free loopback port and counts the calls a
client sends (each is one round trip: none of these paths uses a pipeline).
"""

from __future__ import annotations

import collections
import itertools
import os
import time

from scrapy import Request, signals

from focused.core.sharedcount import SharedCount
from focused.frontier.store import Push, PushResult
from tests.test_frontier_store import make_redis, push
from tests.test_scheduler import make_scheduler

_prefixes = itertools.count()


class Calls:
    """The commands a ``redis.Redis`` client sends, by name; a script call by the store's name for it."""

    def __init__(self, client, scripts=None):
        self.counts: collections.Counter[str] = collections.Counter()
        for script in (scripts or {}).values():  # loaded: a first call is one call, not a miss and a load
            client.script_load(script.script)
        names = {script.sha: name for name, script in (scripts or {}).items()}
        send = client.execute_command

        def counted(*args, **kwargs):
            name = str(args[0]).upper()
            if name == "EVALSHA":
                name = names.get(args[1], name)
            self.counts[name] += 1
            return send(*args, **kwargs)

        client.execute_command = counted

    def total(self):
        return sum(self.counts.values())

    def take(self):
        counts, self.counts = dict(self.counts), collections.Counter()
        return counts


def redis_scheduler(server, **settings):
    prefix = f"trips{os.getpid()}-{next(_prefixes)}"
    crawler, s = make_scheduler(REDIS_URL=server.url, FOCUSED_REDIS_PREFIX=prefix, **settings)
    s.store.last_len  # noqa: B018  (a Redis store: the attribute exists)
    return crawler, s, Calls(s.store.client, s.store._scripts)


def test_a_pages_links_go_to_redis_in_one_script_call_with_their_priorities_merged(redis_server):
    crawler, s, calls = redis_scheduler(redis_server)
    dropped = []
    crawler.signals.connect(lambda request: dropped.append(request.url), signal=signals.request_dropped, weak=False)
    s.enqueue_request(Request("http://x.test/old", priority=3))
    assert len(s) == 1
    calls.take()
    # one page's links: a new URL twice (priorities 2 then 8), the waiting one again (priority 7), 30 others
    links = [("http://x.test/a", 2), ("http://x.test/a", 8), ("http://x.test/old", 7)]
    links += [(f"http://x.test/n{i}", i) for i in range(30)]
    for url, priority in links:
        assert s.enqueue_request(Request(url, priority=priority))
    assert calls.total() == 0  # nothing sent yet
    first = s.next_request()
    assert calls.take() == {"push": 1, "pop": 1}  # the page's links in one call, then the pop
    assert (first.url, first.priority) == ("http://x.test/n29", 29)
    waiting = {}
    while (request := s.next_request()) is not None:
        waiting[request.url] = request.priority
    assert waiting["http://x.test/a"] == 8 and waiting["http://x.test/old"] == 7  # merged by max
    assert len(waiting) == 31 and dropped == ["http://x.test/a", "http://x.test/old"]
    assert crawler.stats.get_value("focused/frontier/merged") == 2
    assert crawler.stats.get_value("scheduler/enqueued") == 1 + 31
    s.close("finished")


def test_a_fetched_page_costs_at_most_four_round_trips(redis_server):
    crawler, s, calls = redis_scheduler(redis_server)
    for i in range(5):
        s.enqueue_request(Request(f"http://x.test/seed{i}", priority=1000))
    pages = 0
    calls.take()
    while pages < 40 and s.next_request() is not None:
        pages += 1
        for j in range(50):  # half of them seen already: merged or dropped
            s.enqueue_request(Request(f"http://x.test/p{(pages * 25 + j) % 2000}", priority=j))
    assert pages == 40
    counts = calls.take()
    assert sum(counts.values()) <= 4 * pages, counts
    assert counts.get("ZCARD", 0) == 0  # the size stats come with the replies
    waiting = len(s)  # pushes the last page's links
    assert crawler.stats.get_value("focused/frontier/size") == waiting
    s.close("finished")


def test_an_acknowledgement_goes_with_the_next_pop(redis_server):
    a = make_redis(redis_server.url)
    calls = Calls(a.client, a._scripts)
    for i in range(3):
        push(a, f"k{i}", 10 - i)
    (first,) = a.pop_many(1)
    calls.take()
    a.ack_many([first.key])
    assert calls.total() == 0
    assert [p.key for p in a.pop_many(1)] == ["k1"]
    assert calls.take() == {"pop": 1}
    assert a.in_flight == 1 and a.seen("k0") and push(a, "k0", 99) is PushResult.SEEN  # done
    a.close()


def test_an_acknowledgement_not_sent_when_the_worker_dies_leaves_the_page_to_another(redis_server):
    a = make_redis(redis_server.url, lease_seconds=0.2)
    b = make_redis(redis_server.url, prefix=a.prefix, lease_seconds=0.2)
    push(a, "page", 5)
    (popped,) = a.pop_many(1)
    a.ack_many([popped.key])  # then killed: nothing more sent
    deadline = time.monotonic() + 60
    while not b.reap():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert [(p.key, p.attempts) for p in b.pop_many(1)] == [("page", 1)]  # fetched again, as before
    b.close()


def test_a_push_over_the_cap_drops_the_lowest_priority_waiting_urls(redis_server):
    s = make_redis(redis_server.url, max_size=100)
    s.push_many([Push(f"k{i}", {"i": i}, i) for i in range(101)])  # 101: within 1% of the cap, kept
    assert len(s) == 101 and s.dropped == 0 and s.last_len == 101
    results = s.push_many([Push("k101", {"i": 101}, 101), Push("low", {"i": -1}, -5)])
    assert results == [PushResult.NEW, PushResult.NEW]
    assert s.dropped == 3 and len(s) == 100 and s.last_len == 100
    kept = sorted(p.priority for p in s.pop_many(200))
    assert kept == list(range(2, 102))  # -5, 0 and 1 dropped
    assert s.seen("low") and push(s, "k0", 50) is PushResult.SEEN  # dropped URLs are not added again
    assert s.client.hget(s.k["items"], "low") is None  # nothing of them left but the seen-set member
    assert s.drop_lowest(0) == 0
    s.close()


def test_the_scheduler_on_redis_obeys_the_frontier_size_cap_and_counts_what_it_drops(redis_server):
    crawler, s, _ = redis_scheduler(redis_server, FOCUSED_FRONTIER_MAX_SIZE=50)
    for i in range(80):
        s.enqueue_request(Request(f"http://x.test/{i}", priority=i))
    assert len(s) <= 50
    assert crawler.stats.get_value("focused/frontier/dropped") == 30
    assert crawler.stats.get_value("focused/frontier/size") == 50
    assert [s.next_request().priority for _ in range(3)] == [79, 78, 77]
    s.close("finished")


def test_the_shared_count_is_looked_at_without_a_call_far_from_the_budget(redis_server):
    count = SharedCount(redis_server.client(), f"look{os.getpid()}")
    calls = Calls(count.client, {"count": count._script})
    assert count.add(1) == 1
    calls.take()
    assert count.look(below=100) == 1 and calls.total() == 0  # just counted, far below: no call
    assert count.look(below=1) == 1 and calls.take() == {"count": 1}  # near the budget: asked
    count.close()
