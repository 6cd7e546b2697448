"""One behaviour suite for every frontier store backend, plus what only a durable store does."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import subprocess
import sys
import time

import pytest

from focused.frontier.memory import MemoryStore
from focused.frontier.redis import RedisStore, connect
from focused.frontier.rescore import RESCORE_CACHE_KIB, run_job
from focused.frontier.sqlite import SQLiteStore
from focused.frontier.sqlitefile import FORMAT_VERSION, check_store
from focused.frontier.store import Framed, Push, PushResult, StoreError, frame, unframe
from tests.killed import run_killed

_prefixes = itertools.count()


def make_sqlite(path, **kw):
    return SQLiteStore(path, encode=json.dumps, decode=json.loads, **kw)


def make_redis(url, prefix=None, **kw):
    """A RedisStore under a new prefix (each test its own frontier), or under ``prefix`` (a shared one)."""
    prefix = prefix or f"test{os.getpid()}-{next(_prefixes)}"
    return RedisStore(connect(url), prefix=prefix, encode=json.dumps, decode=json.loads, **kw)


@pytest.fixture(params=["memory", "sqlite", "redis"])
def make(request, tmp_path):
    opened = []

    def factory(**kw):
        if request.param == "memory":
            store = MemoryStore(**kw)
        elif request.param == "sqlite":
            store = make_sqlite(tmp_path / "f.sqlite", **kw)
        else:
            store = make_redis(request.getfixturevalue("redis_server").url, **kw)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


def push(store, key, priority, payload=None):
    return store.push_many([Push(key, {"url": key}, priority, payload)])[0]


def drain(store):
    out = []
    while popped := store.pop_many(1):
        out.append(popped[0].key)
        store.ack_many([popped[0].key])
    return out


def test_best_first_with_fifo_ties(make):
    s = make()
    for key, prio in [("a", 1), ("b", 5), ("c", 5), ("d", 3)]:
        assert push(s, key, prio) is PushResult.NEW
    assert len(s) == 4
    assert drain(s) == ["b", "c", "d", "a"]
    assert len(s) == 0 and s.in_flight == 0


def test_random_ties_are_seeded(make):
    orders = []
    for seed in (1, 2):
        s = make(tiebreak="random", seed=seed)
        for i in range(30):
            push(s, f"{seed}-{i}", 7)
        orders.append([k.split("-")[1] for k in drain(s)])
        s.close()
    assert orders[0] != orders[1]
    assert sorted(orders[0], key=int) == [str(i) for i in range(30)]


@pytest.mark.parametrize(("aggregation", "expected"), [("first", 10), ("max", 90), ("mean", 50)])
def test_parent_merge(make, aggregation, expected):
    s = make(aggregation=aggregation)
    assert push(s, "x", 10, b"p1") is PushResult.NEW
    assert push(s, "x", 90, b"p2") is PushResult.MERGED
    assert push(s, "x", 50) is PushResult.MERGED
    push(s, "y", 49)
    assert len(s) == 2
    popped = s.pop_many(2)
    assert [p.key for p in popped] == (["x", "y"] if expected > 49 else ["y", "x"])
    assert {p.key: p.priority for p in popped}["x"] == expected


def test_seen_lease_ack_and_give_back(make):
    s = make()
    push(s, "a", 5)
    push(s, "b", 1)
    (a,) = s.pop_many(1)
    assert a.key == "a" and a.item == {"url": "a"} and s.in_flight == 1 and len(s) == 1
    assert s.seen("a") and s.seen("b") and not s.seen("c")
    assert push(s, "a", 9) is PushResult.SEEN  # in flight: not merged, not re-added
    s.give_back_many(["a"])
    assert s.in_flight == 0 and len(s) == 2
    assert [p.key for p in s.pop_many(5)] == ["a", "b"]
    s.ack_many(["a", "b"])
    assert s.in_flight == 0 and len(s) == 0
    assert push(s, "a", 9) is PushResult.SEEN  # done: the seen-set keeps it
    assert s.pop_many(1) == []


def rescore(store, rescorer):
    """The store's re-score job run at once (:func:`~focused.frontier.rescore.run_job`), as the scheduler runs
    it, with the payloads unframed for ``rescorer`` (a list of payloads per waiting entry)."""

    def lists(payloads):
        return rescorer([unframe(b) for b in payloads.blobs] if isinstance(payloads, Framed) else payloads)

    return run_job(store.rescore_start(), lists, between=store.maybe_commit)


def test_rescore_from_payloads(make):
    s = make()
    for i, key in enumerate("abcd"):
        push(s, key, i, payload=key.encode())
    push(s, "e", 2)  # no payload: kept as it is
    push(s, "a", 1, payload=b"z")  # a second parent
    seen = []

    def rescorer(payloads):
        seen.extend(payloads)
        return [{b"a": 100, b"b": None}.get(p[0], 0) if p else None for p in payloads]

    assert rescore(s, rescorer) == 3  # a: 1->100, c: 2->0, d: 3->0; b kept
    assert sorted(p for p in seen if p) == [[b"a", b"z"], [b"b"], [b"c"], [b"d"]]
    assert drain(s) == ["a", "e", "b", "c", "d"]


def test_rescore_leaves_entries_in_flight_and_counts_only_changed_priorities(make):
    s = make()
    for i, key in enumerate("abcd"):
        push(s, key, 10 * i, payload=key.encode())
    assert [p.key for p in s.pop_many(1)] == ["d"]  # in flight: a re-score leaves it as it is
    assert rescore(s, lambda payloads: [20] * len(payloads)) == 2  # a: 0->20, b: 10->20; c had 20 already
    s.give_back_many(["d"])
    assert [(p.key, p.priority) for p in s.pop_many(4)] == [("d", 30), ("a", 20), ("b", 20), ("c", 20)]


def test_rescore_rejects_a_wrong_number_of_priorities(make):
    s = make()
    push(s, "a", 1, b"x")
    with pytest.raises(ValueError, match="priorities"):
        rescore(s, lambda payloads: [])


def test_meta_round_trip(make):
    s = make()
    s.set_meta("unfiltered", 3)
    assert s.get_meta("unfiltered") == 3 and s.get_meta("nope", 7) == 7


def test_frames_round_trip_and_damage_is_detected():
    parts = [b"", b"abc", bytes(range(256))]
    assert unframe(frame(parts)) == parts
    assert unframe(None) == []
    with pytest.raises(ValueError):
        unframe(frame(parts)[:-1])


# -- the durable store ---------------------------------------------------------------------


def test_sqlite_store_survives_reopening_with_leases_returned(tmp_path):
    path = tmp_path / "f.sqlite"
    s = make_sqlite(path)
    for i in range(5):
        push(s, f"k{i}", i, payload=bytes([i]))
    s.set_meta("note", {"x": 1})
    done, leased = s.pop_many(2)
    s.ack_many([done.key])
    s.close()
    s = make_sqlite(path)
    assert s.requeued == 1 and len(s) == 4 and s.in_flight == 0
    assert s.get_meta("note") == {"x": 1}
    assert push(s, done.key, 99) is PushResult.SEEN
    first = s.pop_many(1)[0]
    assert (first.key, first.attempts) == (leased.key, 1)  # popped once before: a re-fetch
    assert push(s, "new", 0) is PushResult.NEW
    assert [p.attempts for p in s.pop_many(10)] == [0, 0, 0, 0]
    s.close()


def test_sqlite_store_commits_in_batches(tmp_path):
    path = tmp_path / "f.sqlite"
    s = make_sqlite(path, commit_ops=3, commit_seconds=3600)

    def committed():
        conn = sqlite3.connect(path)
        try:
            return conn.execute("SELECT COUNT(*) FROM urls").fetchone()[0]
        finally:
            conn.close()

    push(s, "a", 1)
    push(s, "b", 1)
    assert committed() == 0  # still in the open transaction
    push(s, "c", 1)
    assert committed() == 3
    push(s, "d", 1)
    s.commit()
    assert committed() == 4
    s.close()


KILLED_WRITER = """
import json, os, sys
from focused.frontier.sqlite import SQLiteStore
from focused.frontier.store import Push
s = SQLiteStore(sys.argv[1], encode=json.dumps, decode=json.loads, commit_ops=10, commit_seconds=3600)
for i in range(25):
    s.push_many([Push(f"k{i}", i, i)])
    if i == 21:
        s.pop_many(1)
        s.commit()
"""


def test_sqlite_store_after_kill_9_has_every_committed_url(tmp_path):
    path = tmp_path / "f.sqlite"
    run_killed(KILLED_WRITER, path)
    s = make_sqlite(path)
    # 22 pushes committed with the pop; the last 3 were in the open transaction
    assert s.requeued == 1 and len(s) == 22
    assert s.seen("k21") and not s.seen("k22")
    assert s.pop_many(1)[0].key == "k21"
    s.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_a_second_process_cannot_open_the_same_store(tmp_path):
    path = tmp_path / "f.sqlite"
    s = make_sqlite(path)
    code = (
        "import json; from focused.frontier.sqlite import SQLiteStore; "
        f"SQLiteStore({str(path)!r}, encode=json.dumps, decode=json.loads)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode != 0 and "in use by another crawl" in proc.stderr
    s.close()


#: A store as format version 1 wrote it: the payloads a column of ``urls``, no ``id`` column.
_V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE urls (
    key TEXT NOT NULL UNIQUE, state INTEGER NOT NULL, priority INTEGER NOT NULL, tie REAL NOT NULL,
    p_first INTEGER NOT NULL, p_n INTEGER NOT NULL, p_sum INTEGER NOT NULL, p_max INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, item TEXT, payloads BLOB
);
CREATE INDEX urls_waiting ON urls(priority DESC, tie) WHERE state = 0;
CREATE INDEX urls_in_flight ON urls(state) WHERE state = 1;
INSERT INTO meta VALUES ('format', '"focused.frontier"'), ('format_version', '1'), ('counter', '4');
"""


#: A store as format version 2 wrote it: each URL's request in its ``urls`` row, the payloads in their table.
_V2_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE urls (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,
    state INTEGER NOT NULL, priority INTEGER NOT NULL, tie REAL NOT NULL,
    p_first INTEGER NOT NULL, p_n INTEGER NOT NULL, p_sum INTEGER NOT NULL, p_max INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, item TEXT
);
CREATE INDEX urls_waiting ON urls(priority DESC, tie) WHERE state = 0;
CREATE INDEX urls_in_flight ON urls(state) WHERE state = 1;
CREATE TABLE payloads (url INTEGER PRIMARY KEY, data BLOB NOT NULL);
INSERT INTO meta VALUES ('format', '"focused.frontier"'), ('format_version', '2'), ('counter', '4');
"""


def _old_store(path, version):
    """A store of format ``version`` with four URLs: waiting with two payloads, done, in flight, waiting
    without payloads."""
    rows = [  # key, state, priority, tie, payloads (framed)
        ("a", 0, 5, 0.0, frame([b"a1", b"a2"])),
        ("b", 2, 9, 1.0, None),  # done: seen, never again
        ("c", 1, 7, 2.0, frame([b"c1"])),  # in flight when the crawl stopped: waiting again
        ("d", 0, 1, 3.0, None),  # no payload
    ]
    conn = sqlite3.connect(path)
    conn.executescript(_V1_SCHEMA if version == 1 else _V2_SCHEMA)
    columns = "key, state, priority, tie, p_first, p_n, p_sum, p_max, item"
    for key, state, priority, tie, payloads in rows:
        item = None if state == 2 else json.dumps({"url": key})
        if version == 1:
            conn.execute(
                f"INSERT INTO urls ({columns}, payloads) VALUES (?, ?, ?, ?, 0, 1, 0, 0, ?, ?)",
                (key, state, priority, tie, item, payloads),
            )
            continue
        values = (key, state, priority, tie, item)
        rowid = conn.execute(f"INSERT INTO urls ({columns}) VALUES (?, ?, ?, ?, 0, 1, 0, 0, ?)", values).lastrowid
        if payloads is not None:
            conn.execute("INSERT INTO payloads (url, data) VALUES (?, ?)", (rowid, payloads))
    conn.commit()
    conn.close()


@pytest.mark.parametrize("version", [1, 2])
def test_a_store_of_an_older_format_version_is_converted_when_opened(tmp_path, version):
    path = tmp_path / "f.sqlite"
    _old_store(path, version)
    before = path.read_bytes()
    check_store(path)  # a check reads only
    assert path.read_bytes() == before
    s = make_sqlite(path)
    assert s.get_meta("format_version") == FORMAT_VERSION and (len(s), s.requeued) == (3, 1)
    assert push(s, "b", 1) is PushResult.SEEN and push(s, "a", 4, payload=b"a3") is PushResult.MERGED
    seen = []

    def rescorer(payloads):
        seen.extend(payloads)
        return [len(p) for p in payloads]

    assert rescore(s, rescorer) == 2  # a: 5 -> 3 payloads, c: 7 -> 1; d has none
    assert sorted(seen) == [[b"a1", b"a2", b"a3"], [b"c1"]]
    popped = s.pop_many(3)
    assert [(p.key, p.item) for p in popped] == [(k, {"url": k}) for k in "acd"]  # by priority (3, 1, 1), then tie
    s.ack_many(["a", "c", "d"])
    s.close()
    again = make_sqlite(path)  # converted once, read again as it is
    assert again.get_meta("format_version") == FORMAT_VERSION and len(again) == 0
    assert [push(again, k, 1) for k in "abcd"] == [PushResult.SEEN] * 4
    again.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM requests").fetchone() == (0,)  # a done URL keeps only its key
    conn.close()


@pytest.mark.parametrize("version", [1, 2])
def test_a_conversion_that_fails_leaves_the_older_store_as_it_was(tmp_path, version):
    path = tmp_path / "f.sqlite"
    _old_store(path, version)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE requests (x)")  # something else's table of that name: the conversion fails
    conn.commit()
    conn.close()
    before = {name: sorted(rows) for name, rows in _tables(path).items()}
    with pytest.raises(StoreError) as info:
        make_sqlite(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    assert {name: sorted(rows) for name, rows in _tables(path).items()} == before  # every table, every row
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone() == (str(version),)
    conn.close()


def _tables(path):
    """Every table of the SQLite file ``path`` with its rows."""
    conn = sqlite3.connect(path)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: conn.execute(f"SELECT * FROM {name}").fetchall() for name in names}
    finally:
        conn.close()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other_sqlite", "future_version"])
def test_a_bad_store_file_is_refused_with_one_clear_message(tmp_path, damage):
    path = tmp_path / "f.sqlite"
    if damage == "garbage":
        path.write_bytes(os.urandom(5000))
    elif damage == "other_sqlite":
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        conn.close()
    else:
        s = make_sqlite(path)
        for i in range(2000):
            push(s, f"key-{i}", i, payload=os.urandom(64))
        if damage == "future_version":
            s.set_meta("format_version", 99)
        s.close()
        if damage == "truncated":
            data = path.read_bytes()
            path.write_bytes(data[: len(data) // 2])
    before = path.read_bytes()
    with pytest.raises(StoreError) as info:
        make_sqlite(path)
    message = str(info.value)
    assert str(path) in message and "\n" not in message
    assert ("version 99" in message) if damage == "future_version" else ("afresh" in message)
    assert path.read_bytes() == before  # nothing overwritten


def test_rescore_of_many_entries_is_chunked(tmp_path, monkeypatch):
    monkeypatch.setattr("focused.frontier.rescore.RESCORE_CHUNK", 7)
    s = make_sqlite(tmp_path / "f.sqlite")
    for i in range(50):
        push(s, f"k{i:02d}", 0, payload=bytes([i]))
    calls = []

    def rescorer(payloads):
        calls.append(len(payloads))
        return [p[0][0] for p in payloads]

    cache = s.conn.execute("PRAGMA cache_size").fetchone()[0]
    sizes = []
    job = s.rescore_start()
    real_apply = job.apply

    def apply(ids, priorities):  # the job's page cache while it writes
        changed = real_apply(ids, priorities)
        sizes.append(s.conn.execute("PRAGMA cache_size").fetchone()[0])
        return changed

    job.apply = apply
    assert run_job(job, lambda payloads: rescorer([unframe(b) for b in payloads.blobs]), s.maybe_commit) == 49
    assert sum(calls) == 50 and max(calls) == 7
    assert set(sizes) == {-RESCORE_CACHE_KIB} and s.conn.execute("PRAGMA cache_size").fetchone()[0] == cache
    assert [p.key for p in s.pop_many(3)] == ["k49", "k48", "k47"]
    s.close()


def test_checkpointer_runs_off_the_callers_thread(tmp_path):
    s = make_sqlite(tmp_path / "f.sqlite", checkpoint_seconds=0.05)
    for i in range(200):
        push(s, f"k{i}", i, payload=os.urandom(200))
    s.commit()
    time.sleep(0.3)
    s.close()
    assert not os.path.exists(f"{tmp_path / 'f.sqlite'}-wal") or os.path.getsize(f"{tmp_path / 'f.sqlite'}-wal") == 0
