"""What only the shared Redis frontier does: leases that expire, workers that race, Redis going away.

The behaviour every store shares runs on Redis too, in tests/test_frontier_store.py.
Every test talks to a real ``redis-server`` on a free loopback port.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest

from focused.frontier.redis import RedisStore
from focused.frontier.redis_lua import SHIFT
from focused.frontier.store import Push, PushResult, StoreError
from tests.redis_server import RedisServer
from tests.test_frontier_store import make_redis, push


def wait_for(condition, seconds=60.0):
    """Poll ``condition`` until it holds; the deadline only catches a hang."""
    deadline = time.monotonic() + seconds
    while not (result := condition()):
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)
    return result


def test_an_expired_lease_goes_back_to_waiting_and_counts_the_attempt(redis_server):
    a = make_redis(redis_server.url, lease_seconds=0.2)
    b = make_redis(redis_server.url, prefix=a.prefix, lease_seconds=0.2)
    for i in range(3):
        push(a, f"k{i}", 10 - i)
    (first,) = a.pop_many(1)  # worker a "dies" holding k0: it never acknowledges nor renews
    assert (first.key, first.attempts) == ("k0", 0)
    assert b.in_flight == 1 and len(b) == 2
    wait_for(lambda: b.reap())
    assert b.requeued == 1 and b.in_flight == 0 and len(b) == 3
    again = b.pop_many(3)
    assert [(p.key, p.priority, p.attempts) for p in again] == [("k0", 10, 1), ("k1", 9, 0), ("k2", 8, 0)]
    b.ack_many(p.key for p in again)
    assert push(b, "k0", 1) is PushResult.SEEN
    a.close()
    b.close()


def test_a_live_worker_renews_its_leases_and_gives_them_back_on_close(redis_server):
    a = make_redis(redis_server.url, lease_seconds=1.0)
    push(a, "x", 1)
    push(a, "y", 1)
    a.pop_many(1)
    expiry = a.client.zscore(a.k["leases"], "x")
    time.sleep(0.4)  # a third of the lease: due for renewal
    a.maybe_commit()
    assert a.client.zscore(a.k["leases"], "x") > expiry
    b = make_redis(redis_server.url, prefix=a.prefix)
    a.close()  # x was never acknowledged: another worker gets it at once, not after the lease
    assert b.in_flight == 0 and [p.key for p in b.pop_many(2)] == ["x", "y"]
    b.close()


def test_two_workers_never_push_or_pop_the_same_entry(redis_server):
    prefix = make_redis(redis_server.url).prefix
    n = 2000
    popped: dict[str, list[str]] = {"a": [], "b": []}
    new: dict[str, int] = {"a": 0, "b": 0}
    errors = []

    def worker(name):
        store = make_redis(redis_server.url, prefix=prefix)
        try:
            # both offer every URL: each is new for exactly one of them
            for start in range(0, n, 50):
                results = store.push_many([Push(f"u{i}", {"i": i}, i % 7) for i in range(start, start + 50)])
                new[name] += sum(r is PushResult.NEW for r in results)
            while len(popped["a"]) + len(popped["b"]) < n:
                batch = store.pop_many(1 + len(popped[name]) % 5)
                popped[name].extend(p.key for p in batch)
                store.ack_many(p.key for p in batch)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=worker, args=(name,)) for name in popped]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a worker thread is still running"
    assert not errors
    assert new["a"] + new["b"] == n
    assert popped["a"] and popped["b"]
    both = popped["a"] + popped["b"]
    assert len(both) == len(set(both)) == n  # no entry twice, none missing


def test_scores_keep_exact_order_at_the_extremes(redis_server):
    s = make_redis(redis_server.url)
    s.client.set(s.k["counter"], SHIFT - 10)  # FIFO ranks near their limit
    for key, prio in [("top", 1_000_001), ("top2", 1_000_001), ("mid", 500_000), ("neg", -3), ("high", 1_000_000)]:
        push(s, key, prio)
    assert [(p.key, p.priority) for p in s.pop_many(5)] == [
        ("top", 1_000_001), ("top2", 1_000_001), ("high", 1_000_000), ("mid", 500_000), ("neg", -3)
    ]  # fmt: skip
    s.close()


def test_a_malformed_entry_is_quarantined_with_one_log_line(redis_server, caplog):
    s = make_redis(redis_server.url)
    push(s, "bad", 9)
    push(s, "good", 1)
    s.client.hset(s.k["items"], "bad", b"{not json")
    with caplog.at_level(logging.ERROR, logger="focused.frontier.redis"):
        popped = s.pop_many(1)  # the bad entry does not cost this pop its result (tests/test_stored_data.py)
    assert [p.key for p in popped] == ["good"]
    assert len(caplog.records) == 1 and "entry bad quarantined" in caplog.records[0].getMessage()
    assert s.in_flight == 1 and s.seen("bad") and s.quarantined == 1  # done: never handed out again
    assert list(s.quarantine()) == ["bad"]
    s.close()


def test_workers_with_other_options_are_refused(redis_server):
    s = make_redis(redis_server.url, aggregation="max")
    with pytest.raises(StoreError, match="aggregation"):
        make_redis(redis_server.url, prefix=s.prefix, aggregation="first")
    s.close()


def test_redis_restarted_between_operations_loses_nothing(tmp_path, caplog):
    with RedisServer(tmp_path / "redis", persistent=True) as server:
        s = make_redis(server.url, retry_seconds=30)
        for i in range(50):
            push(s, f"k{i}", i, payload=bytes([i]))
        held = s.pop_many(5)
        s.ack_many([held[0].key])
        server.stop()
        restart = threading.Timer(0.5, server.start)
        restart.start()
        with caplog.at_level(logging.INFO, logger="focused.frontier.redis"):
            assert push(s, "new", 100) is PushResult.NEW  # retried until Redis was back
            assert s.pop_many(1)[0].key == "new"
            assert len(s) == 45 and s.in_flight == 5
        restart.join(120)
        assert not restart.is_alive()
        messages = [(r.levelname, r.getMessage()) for r in caplog.records]
        assert [level for level, _ in messages] == ["WARNING", "INFO"]  # one warning for the outage
        assert "unreachable" in messages[0][1] and "back after" in messages[1][1]
        s.give_back_many(p.key for p in held[1:])
        assert [p.key for p in s.pop_many(100)][:5] == ["k48", "k47", "k46", "k45", "k44"]
        assert s.seen(held[0].key) and s.in_flight == 50
        s.close()


def test_a_pop_whose_reply_was_lost_returns_the_same_entries_when_retried(redis_server):
    """Redis ran the pop, then the connection broke before the reply: the retry must not pop others and
    leave the first ones leased to nobody (they would wait for their lease to expire)."""
    import redis as redis_lib

    s = make_redis(redis_server.url, retry_seconds=10)
    for i in range(10):
        push(s, f"k{i}", i)
    script = s._scripts["pop"]
    calls = []

    def lose_the_first_reply(keys, args):
        reply = script(keys, args)
        calls.append(keys[-1])
        if len(calls) == 1:
            raise redis_lib.ConnectionError("connection closed by server")
        return reply

    s._scripts["pop"] = lose_the_first_reply
    popped = s.pop_many(3)
    assert len(calls) == 2 and calls[0] == calls[1]  # the retry, with the same record
    assert [p.key for p in popped] == ["k9", "k8", "k7"] and all(p.attempts == 0 for p in popped)
    assert s.in_flight == 3 and len(s) == 7  # nothing leased to nobody
    s._scripts["pop"] = script
    assert [p.key for p in s.pop_many(2)] == ["k6", "k5"]  # a new call pops anew
    s.ack_many(p.key for p in popped)
    assert s.in_flight == 2
    s.close()


def test_redis_gone_for_longer_than_the_retry_setting_is_a_clear_store_error(tmp_path, monkeypatch):
    server = RedisServer(tmp_path / "redis").start()
    s = RedisStore(server.client(), prefix="gone", encode=str, decode=str, retry_seconds=0.3)
    push(s, "a", 1)
    server.stop()
    with pytest.raises(StoreError) as info:
        len(s)
    message = str(info.value)
    assert "Redis unreachable" in message and "start Redis" in message and "\n" not in message
    sleeps = []
    monkeypatch.setattr("focused.frontier.redis.time.sleep", sleeps.append)
    with pytest.raises(StoreError):
        s.pop_many(1)  # given up: one try, no second wait
    assert sleeps == []
    s.close()
