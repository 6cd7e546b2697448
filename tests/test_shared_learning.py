"""Shared learning on a real Redis: the trainer's lock, instances across workers, models published and picked up."""

from __future__ import annotations

import itertools
import logging
import os
import pickle
import time

import numpy as np
import pytest

from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.online import OnlineApprentice
from focused.learning.apprentice.payload import LinkPayload, encode_links
from focused.learning.apprentice.shared import SharedLearning, model_to_bytes

N_FEATURES = 2**10
_prefixes = itertools.count()


def worker(server, prefix, *, batch=4, lock_seconds=10.0, min_instances=8, n_features=N_FEATURES):
    online = OnlineApprentice(Apprentice(n_features=n_features, min_instances=min_instances), batch_size=batch)
    return SharedLearning(server.client(), online, prefix=prefix, lock_seconds=lock_seconds)


@pytest.fixture
def prefix():
    return f"shared{os.getpid()}-{next(_prefixes)}"


def payload(good: bool, i: int) -> LinkPayload:
    """A link whose features say whether its target is relevant (ids 0-9 good, 10-19 bad) plus a unique one."""
    base = 0 if good else 10
    return LinkPayload(np.array([base + i % 10, 100 + i], dtype=np.int32))


def instances(shared: SharedLearning) -> list[tuple[float, bytes]]:
    raw = shared.client.lrange(shared.k["instances"], 0, -1)
    return [(float(np.frombuffer(r[:8], "<f8")[0]), r[8:]) for r in raw]


# -- the trainer's lock -------------------------------------------------------------------------


def test_one_leader_at_a_time_and_a_takeover_after_the_ttl(redis_server, prefix):
    a = worker(redis_server, prefix, lock_seconds=0.3)
    b = worker(redis_server, prefix, lock_seconds=0.3)
    assert a.acquire() and not b.acquire() and a.acquire()
    time.sleep(0.15)
    a._renewed = 0.0
    assert a.acquire() and not b.acquire()  # renewed: still a's
    time.sleep(0.45)  # a died: it stopped renewing
    assert b.acquire() and b.leader
    a._renewed = 0.0
    assert not a.acquire()  # a is back, but b leads now
    assert a.train_batch().batch == -1  # and a's training is refused
    b.release()
    assert a.acquire()  # released: taken at once


def test_a_lost_lock_drops_the_result_but_not_the_learners_instances(redis_server, prefix):
    a = worker(redis_server, prefix, lock_seconds=0.2)
    a.observe_page(["http://x.test/v"], 0.9)
    a.observe_links(["http://x.test/v"] * 3, [payload(True, i) for i in range(3)])
    assert a.acquire()
    a.client.set(a.k["lock"], "someone else")  # the lock expired and another worker took it
    a._renewed = time.monotonic()
    result = a.train_batch()
    assert result.batch == -1 and result.model is None
    assert a.client.get(a.k["batches"]) is None and a.client.get(a.k["version"]) is None


# -- instances across workers ------------------------------------------------------------------------


def test_a_link_and_its_targets_verdict_meet_whichever_worker_sees_them(redis_server, prefix):
    a = worker(redis_server, prefix)
    b = worker(redis_server, prefix)
    # u fetched by a, its target v judged later by b
    a.observe_links(["http://x.test/v", "http://x.test/w#top"], [payload(True, 0), payload(False, 1)])
    assert instances(a) == []
    assert b.observe_page(["http://x.test/v/index.html"], 0.75) == 1
    assert instances(a) == [(0.75, encode_links([payload(True, 0)])[0])]  # tagged: the ids as 2-byte gaps
    # a page judged first (by a, under an alias), a link to it found later by b: an instance at once
    assert a.observe_page(["http://x.test/z", "http://X.test/w"], 0.125) == 2
    assert [r for r, _ in instances(a)] == [0.75, 0.125]
    assert b.observe_links(["http://x.test/z"], [payload(False, 2)]) == 1
    got = instances(b)
    assert got[-1] == (0.125, encode_links([payload(False, 2)])[0])
    assert len(got) == 3
    # the leader's learner gets every instance once
    assert b.acquire() and not a.acquire()
    b.client.set(b.k["pages"], 4)
    assert b.due()
    result = b.train_batch()
    assert result.batch == 1 and result.added == 3 and b.online.learner.n_instances == 3
    assert not b.due()
    assert a.online.learner.n_instances == 0  # a worker that does not train never feeds its learner


def feed(shared: SharedLearning, pages: range) -> None:
    for i in pages:
        good = i % 2 == 0
        target = f"http://x.test/{i}"
        shared.observe_links([target] * 3, [payload(good, 3 * i + j) for j in range(3)])
        shared.observe_page([target], 0.9 if good else 0.05)


# -- models published and picked up ---------------------------------------------------------------


def test_the_leader_publishes_every_worker_installs_the_same_model(redis_server, prefix):
    a = worker(redis_server, prefix)
    b = worker(redis_server, prefix)
    assert b.poll() is None  # nothing published yet
    feed(a, range(4))
    assert a.acquire() and a.due()
    first = a.train_batch()
    assert first.batch == 1 and first.added == 12 and first.model is not None and first.model.version == 1
    assert a.poll() is None  # the leader has it already
    got = b.poll()
    assert got is not None and got.version == 1 and got.n_instances == 12
    x = [payload(True, 50).ids, payload(False, 51).ids]
    np.testing.assert_allclose(got.predict(x), first.model.predict(x))
    assert got.predict(x)[0] > got.predict(x)[1]
    assert b.poll() is None  # no newer version
    feed(b, range(4, 8))
    second = a.train_batch()
    assert second.batch == 2 and second.added == 12 and second.model is not None and second.model.version == 2
    got = b.poll()
    assert got is not None and got.version == 2 and got.n_instances == 24


def test_a_new_leader_learns_every_instance_once(redis_server, prefix):
    a = worker(redis_server, prefix, lock_seconds=0.2)
    b = worker(redis_server, prefix, lock_seconds=0.2)
    feed(a, range(4))
    assert a.acquire() and a.train_batch().model is not None  # v1 by a; then a dies
    feed(b, range(4, 8))
    time.sleep(0.3)
    assert b.acquire() and b.due()
    result = b.train_batch()
    assert result.batch == 2 and result.added == 24 and b.online.learner.n_instances == 24
    assert result.model is not None and result.model.version == 2 and result.model.n_instances == 24


@pytest.mark.parametrize(
    "blob, message",
    [
        (b"not a model", "not a model file"),
        (b"", "is empty"),
        (pickle.dumps({"kind": "apprentice-model"}), "looks like a pickle"),
        ("foreign", "features"),
    ],
)
def test_a_malformed_or_foreign_model_is_refused_in_one_line_and_the_worker_keeps_its_own(
    redis_server, prefix, caplog, blob, message
):
    a = worker(redis_server, prefix)
    b = worker(redis_server, prefix)
    feed(a, range(4))
    assert a.acquire() and a.train_batch().model is not None
    mine = b.poll()
    assert mine is not None
    b.online.install(mine)
    if blob == "foreign":  # a valid apprentice model, of another crawl's features
        other = worker(redis_server, prefix + "-other", n_features=2 * N_FEATURES)
        feed(other, range(4))
        assert other.acquire()
        model = other.train_batch().model
        assert model is not None
        blob = model_to_bytes(model)
    b.client.set(b.k["model"], blob)
    b.client.incr(b.k["version"])
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="focused.learning.apprentice.shared"):
        assert b.poll() is None
        assert b.poll() is None  # refused once, not at every poll
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and caplog.records[0].levelname == "ERROR", lines
    assert "refused the model in Redis, keeping v1" in lines[0] and message in lines[0]
    assert f"{prefix}:apprentice:model (v2)" in lines[0] and "\n" not in lines[0]
    assert b.online.model is mine and b.installed_version == 1
    # a good model published later is installed
    feed(a, range(4, 8))
    a.client.set(a.k["version"], 2)
    assert a.train_batch().model is not None
    newer = b.poll()
    assert newer is not None and newer.version == 3


def test_clear_forgets_the_shared_learning(redis_server, prefix):
    a = worker(redis_server, prefix)
    a.observe_links(["http://x.test/never"], [payload(True, 0)])
    feed(a, range(4))
    assert a.acquire() and a.train_batch().model is not None
    assert a.clear() >= 6
    assert not list(a.client.scan_iter(match=f"{prefix}:apprentice:*"))


def test_shared_learning_only_with_a_redis_frontier_and_a_learning_apprentice(redis_server, tmp_path):
    from types import SimpleNamespace

    from scrapy.settings import Settings

    from focused.extensions.apprentice.shared import SharedFeedback, open_shared
    from focused.strategies.apprentice import ApprenticeStrategy

    def crawler(**settings):
        return SimpleNamespace(settings=Settings(settings), stats=None, spidercls=SimpleNamespace(name="focused"))

    def strategy(learn=True):
        return ApprenticeStrategy(OnlineApprentice(Apprentice(n_features=N_FEATURES), learn=learn))

    redis = {"REDIS_URL": redis_server.url, "FOCUSED_REDIS_PREFIX": "only-with-redis"}
    assert open_shared(crawler(), strategy()) is None  # memory store
    assert open_shared(crawler(JOBDIR=str(tmp_path)), strategy()) is None  # SQLite store
    assert open_shared(crawler(**redis, FOCUSED_APPRENTICE_SHARED=False), strategy()) is None
    assert open_shared(crawler(**redis), strategy(learn=False)) is None  # a frozen apprentice
    s = strategy()
    ext = open_shared(crawler(**redis, FOCUSED_APPRENTICE_LOCK_SECONDS=3), s)
    assert isinstance(ext, SharedFeedback) and ext.checkpoints is None
    assert ext.shared.prefix == "only-with-redis" and ext.shared.lock_ms == 3000
    assert s.observe_links == ext._observe_links  # links go to Redis, not to the local apprentice
    ext.shared.client.close()


def test_malformed_instances_are_skipped_in_one_line(redis_server, prefix, caplog):
    a = worker(redis_server, prefix)
    feed(a, range(4))
    with_side = LinkPayload(np.array([1, 2], dtype=np.int32), np.array([0.5, 0.5], dtype=np.float32))
    a.client.rpush(
        a.k["instances"], b"short", b"\x00" * 8 + b"garbage", np.float64(0.5).tobytes() + with_side.to_bytes()
    )
    assert a.acquire()
    with caplog.at_level(logging.ERROR, logger="focused.learning.apprentice.shared"):
        result = a.train_batch()
    assert result.batch == 1 and result.added == 12 and result.model is not None
    assert [r.getMessage() for r in caplog.records] == [
        f"Shared apprentice {prefix}: skipped 3 malformed instances or instances of other apprentice settings "
        "(give every worker the same FOCUSED_APPRENTICE_* settings)"
    ]


def test_links_take_half_their_int32_bytes_in_redis_and_an_earlier_focuseds_instances_are_still_learnt(
    redis_server, prefix
):
    a = worker(redis_server, prefix, n_features=2**20)
    rng = np.random.default_rng(0)
    links = [LinkPayload(np.unique(rng.integers(0, 2**20, 180)).astype(np.int32)) for _ in range(20)]
    a.observe_links([f"http://x.test/t{i}" for i in range(20)], links)
    members = a.client.zrange(a.k["pending"], 0, -1)
    assert sum(map(len, members)) < 0.6 * sum(len(p.to_bytes()) + 40 for p in links)
    for i in range(20):
        a.observe_page([f"http://x.test/t{i}"], 0.9 if i % 2 else 0.1)
    # instances an earlier focused pushed, as LinkPayload.to_bytes (one id count of each parity: 3 and 2 ids)
    old = [LinkPayload(np.array([7, 9, 11], dtype=np.int32)), LinkPayload(np.array([5, 900_000], dtype=np.int32))]
    a.client.rpush(a.k["instances"], *[np.float64(0.5).tobytes() + p.to_bytes() for p in old])
    assert a.acquire()
    a.client.set(a.k["pages"], 4)
    result = a.train_batch()
    assert result.added == 22 and a.online.learner.n_instances == 22


def test_an_instance_reads_the_same_from_its_tagged_bytes_and_from_an_earlier_focuseds():
    from focused.learning.apprentice.shared import instance_payload

    rng = np.random.default_rng(1)
    for n in [0, 1, 2, 67, 68, 76, 300]:  # 68 and 76 start an earlier payload with b"D" and b"L"
        for k in (0, 2, 3):
            ids = np.sort(rng.integers(0, 2**20, n)).astype(np.int32)
            side = rng.normal(size=k).astype(np.float32) if k else None
            payload = LinkPayload(ids, side)
            for blob in (payload.to_bytes(), encode_links([payload])[0]):
                got = instance_payload(blob)
                assert np.array_equal(got.ids, ids) and (k == 0 or np.array_equal(got.side, side))
    with pytest.raises(ValueError):
        instance_payload(b"garbage")


def test_the_instances_a_bounded_leader_drops_leave_redis_too(redis_server, prefix):
    a = worker(redis_server, prefix, lock_seconds=0.2)
    a.online.learner.limit(10)
    feed(a, range(4))  # 12 instances, numbered 0-11
    assert a.acquire() and a.train_batch().model is not None
    assert (a.online.learner.n_instances, a.online.learner.dropped) == (9, 3)  # down to nine tenths of 10
    assert int(a.client.get(a.k["trimmed"])) == 3
    assert [r for r, _ in instances(a)] == a.online.learner.to_bundle()["stats"]["relevances"].tolist()
    feed(a, range(4, 8))  # 12 more, numbered 12-23; then a dies
    time.sleep(0.3)
    b = worker(redis_server, prefix, lock_seconds=0.2)  # a new leader rebuilds its learner from Redis
    b.online.learner.limit(10)
    assert b.acquire() and b.due()
    result = b.train_batch()
    assert result.added == 9 + 12 and b.learned == 24
    assert b.online.learner.n_instances == 9 and int(b.client.get(b.k["trimmed"])) == 15
    assert [r for r, _ in instances(b)] == b.online.learner.to_bundle()["stats"]["relevances"].tolist()
