"""Stored requests and payloads are data: what a frontier store reads back never imports a module, and an entry
that does not decode is quarantined (counted, one log line, never handed out again) instead of jamming the crawl.

Each crafted form is written into a SQLite frontier and a Redis frontier: the stores alone, then real
``scrapy crawl`` runs of a small generated web through its replay proxy. A marker module on the import path
creates a file when it is imported: it never is.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import scrapy

from focused import signals as focused_signals
from focused.cli import main as focused_main
from focused.frontier.redis import RedisStore, connect, read_quarantine
from focused.frontier.requests import BadStoredRequest, decode_request, encode_request
from focused.frontier.sqlite import SQLiteStore
from focused.frontier.sqlitefile import read_quarantine as read_sqlite_quarantine
from focused.frontier.store import Push, frame
from focused.settings import defaults
from tests.killed import run_killed
from tests.sites import HOST, graph_crawl, graph_web
from tests.test_scheduler import make_scheduler

MARKER_MODULE = "focused_marker_probe"
PAGES = 30


class Spider(scrapy.Spider):
    name = "probe"

    def parse(self, response):
        pass

    def seed_failed(self, failure):
        pass


def good(address: str, **fields) -> str:
    """A request as focused stores it, with ``fields`` changed."""
    d = json.loads(encode_request(scrapy.Request(address, callback=Spider().parse), Spider()))
    d.update(fields)
    return json.dumps(d)


def crafted(n: int = 0) -> dict[str, str | bytes]:
    """Every hostile or damaged form of a stored request, by name (URLs that exist nowhere)."""
    url = f"{HOST}/planted/{n}/"
    return {
        "class": good(url + "class", _class=f"{MARKER_MODULE}.Thing"),
        "dotted-callback": good(url + "dotted", callback=f"{MARKER_MODULE}.hook"),
        "non-method-callback": good(url + "attr", callback="name"),
        "dunder-callback": good(url + "dunder", callback="__init__"),
        "errback": good(url + "errback", errback=f"{MARKER_MODULE}.hook"),
        "bad-json": '{"url": "' + url + 'json", ',
        "json-list": json.dumps([f"{MARKER_MODULE}.Thing", url]),
        "pickle-bytes": b"\x80\x04\x95" + pickle.dumps({"url": url})[3:],
        "pickle-text": f"c{MARKER_MODULE}\nThing\n(tR.",
    }


@pytest.fixture
def marker(tmp_path, monkeypatch):
    """A module whose import creates ``marker`` (the returned path), on this process's and the crawls' path."""
    folder = tmp_path / "importable"
    folder.mkdir()
    path = tmp_path / "imported.marker"
    (folder / f"{MARKER_MODULE}.py").write_text(
        f"import pathlib\npathlib.Path({str(path)!r}).write_text('imported')\nclass Thing: pass\ndef hook(*a): pass\n"
    )
    env = dict(os.environ, PYTHONPATH=str(folder))
    subprocess.run([sys.executable, "-c", f"import {MARKER_MODULE}"], env=env, check=True)
    assert path.exists()  # the probe works: importing it leaves the file
    path.unlink()
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")])))
    yield path
    assert MARKER_MODULE not in sys.modules


def no_tracebacks(caplog):
    return [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]


# -- the decoder ----------------------------------------------------------------------------------------


def test_a_request_round_trips_with_its_class_callbacks_and_fields():
    from focused.frontier.linkrequest import LinkRequest

    spider = Spider()
    request = LinkRequest(
        f"{HOST}/a?b=1", callback=spider.parse, errback=spider.seed_failed, method="POST", body=b"\xff\x00",
        headers={"X-A": "b"}, cookies={"c": "d"}, meta={"depth": 2}, priority=7, flags=["f"], cb_kwargs={"k": 1},
        dont_filter=True,
    )  # fmt: skip
    back = decode_request(encode_request(request, spider), spider)
    assert type(back) is LinkRequest and back.callback == spider.parse and back.errback == spider.seed_failed
    assert back.to_dict(spider=spider) == request.to_dict(spider=spider)


@pytest.mark.parametrize("form", sorted(crafted()))
def test_each_crafted_form_is_refused_without_importing(form, marker):
    with pytest.raises(BadStoredRequest) as refused:
        decode_request(crafted()[form], Spider())
    assert "\n" not in str(refused.value)
    assert not marker.exists() and MARKER_MODULE not in sys.modules


@pytest.mark.parametrize(
    ("field", "value"),
    [("url", 5), ("priority", 1.5), ("priority", True), ("headers", {"a": "b"}), ("meta", []), ("flags", [1]),
     ("method", "GET /x"), ("encoding", "not-a-codec"), ("encoding", "rot13"), ("body", None), ("cookies", [1]),
     ("url", "no-scheme"), ("unknown", 1), ("callback", "parse.__globals__"), ("errback", "start")],
)  # fmt: skip
def test_each_field_has_the_type_focused_writes(field, value):
    with pytest.raises(BadStoredRequest):
        decode_request(good(f"{HOST}/x", **{field: value}), Spider())


def test_a_stored_proxy_is_dropped_so_the_crawls_own_proxy_settings_apply():
    """A proxy in the meta turns off the internal-address checks by IP: a planted one must not be kept."""
    meta = {"proxy": "http://169.254.169.254:80", "_auth_proxy": "http://169.254.169.254:80", "depth": 1}
    request = decode_request(good(f"{HOST}/x", meta=meta), Spider())
    assert request.meta == {"depth": 1}


# -- the stores -----------------------------------------------------------------------------------------


def sqlite_store(path):
    spider = Spider()
    return SQLiteStore(path, encode=lambda item: item, decode=lambda text: decode_request(text, spider))


def redis_store(server, prefix):
    spider = Spider()
    return RedisStore(
        connect(server.url), prefix=prefix, encode=lambda item: item, decode=lambda text: decode_request(text, spider)
    )


@pytest.fixture(params=["sqlite", "redis"])
def open_store(request, tmp_path):
    opened = []

    def factory():
        if request.param == "sqlite":
            store = sqlite_store(tmp_path / "frontier.sqlite")
        else:
            store = redis_store(request.getfixturevalue("redis_server"), f"stored{os.getpid()}-{tmp_path.name}")
        opened.append(store)
        return store

    factory.kind = request.param
    yield factory
    for store in opened:
        store.close()


def test_bad_entries_are_quarantined_and_the_good_ones_popped_in_the_same_call(open_store, marker, caplog):
    store = open_store()
    forms = crafted()
    pushes = [Push(f"bad-{name}", item, 100) for name, item in forms.items()]
    pushes += [Push(f"good-{i}", good(f"{HOST}/good/{i}"), 10 - i) for i in range(3)]
    store.push_many(pushes)
    with caplog.at_level(logging.INFO):
        # one pop of one entry: every bad entry ahead of the good one is set aside in the same call (a pop
        # that came back empty left the worker waiting for Scrapy's next heartbeat, ~5 s per entry)
        (first,) = store.pop_many(1)
        rest = store.pop_many(5)
    assert first.key == "good-0" and [p.key for p in rest] == ["good-1", "good-2"]
    assert first.item.url == f"{HOST}/good/0" and first.item.callback.__name__ == "parse"
    assert store.quarantined == len(forms) and len(store) == 0 and store.in_flight == 3
    lines = [r.getMessage() for r in caplog.records if "quarantined" in r.getMessage()]
    assert len(lines) == len(forms) and all("\n" not in line for line in lines)
    assert not no_tracebacks(caplog)
    assert not marker.exists()
    store.commit()  # SQLite: the quarantine is committed with the pops' batch
    listed = (
        {e["key"]: e for e in read_sqlite_quarantine(store.path)}
        if open_store.kind == "sqlite"
        else read_quarantine(store.client, store.prefix)
    )
    assert set(listed) == {p.key for p in pushes[: len(forms)]}
    assert "focused writes" in listed["bad-class"]["reason"] and listed["bad-class"]["at"] > 0
    assert all(store.seen(f"bad-{name}") for name in forms)  # done: a link to it is not taken again


def test_a_quarantined_entry_does_not_come_back_after_a_kill_9_and_resume(tmp_path, marker):
    """The pop, the quarantine and the next pops commit together: a kill -9 after the commit leaves the bad
    entry done and recorded, never back in flight or waiting."""
    path = tmp_path / "frontier.sqlite"
    store = sqlite_store(path)
    store.push_many([Push("bad", crafted()["class"], 9), Push("good", good(f"{HOST}/g"), 1)])
    store.commit()
    store.close()
    run_killed("import sys; from tests.test_stored_data import sqlite_store\n"
               "s = sqlite_store(sys.argv[1]); s.pop_many(1); s.commit()", path)  # fmt: skip
    again = sqlite_store(path)
    try:
        assert again.requeued == 1 and len(again) == 1  # "good" was in flight: back; "bad" is not
        assert [p.key for p in again.pop_many(5)] == ["good"] and again.quarantined == 0
        assert [e["key"] for e in read_sqlite_quarantine(path)] == ["bad"]
    finally:
        again.close()
    assert not marker.exists()


def test_a_store_written_before_the_quarantine_gains_its_table(tmp_path):
    path = tmp_path / "frontier.sqlite"
    sqlite_store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE quarantine")  # as focused wrote the store before this change
    rowid = conn.execute("INSERT INTO urls (key, state, priority, tie, p_first, p_n, p_sum, p_max) VALUES "
                         "('old', 0, 1, 0, 1, 1, 1, 1)").lastrowid  # fmt: skip
    conn.execute("INSERT INTO requests (url, item) VALUES (?, '[1]')", (rowid,))
    conn.commit()
    conn.close()
    assert read_sqlite_quarantine(path) == []
    store = sqlite_store(path)
    try:
        assert store.pop_many(1) == [] and store.quarantined == 1
    finally:
        store.close()
    assert [e["key"] for e in read_sqlite_quarantine(path)] == ["old"]


# -- re-scoring ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_a_rescore_skips_damaged_payloads_counts_them_and_rescores_the_rest(kind, tmp_path, request, caplog):
    if kind == "sqlite":
        crawler, scheduler = make_scheduler(tmp_path)
    else:
        server = request.getfixturevalue("redis_server")
        crawler, scheduler = make_scheduler(REDIS_URL=server.url, FOCUSED_REDIS_PREFIX=f"rescore{os.getpid()}")
    try:
        for i in range(5):
            scheduler.enqueue_request(scrapy.Request(f"{HOST}/r/{i}", priority=1, meta={"focused_payload": i}))
        assert len(scheduler) == 5  # in the store (a shared store's scheduler pushes them at its next call)
        store = scheduler.store
        keys = {scheduler._fingerprint(scrapy.Request(f"{HOST}/r/{i}")).hex(): i for i in range(5)}
        by_i = {i: k for k, i in keys.items()}
        truncated = b"\x09\x00\x00\x00J1"  # a frame that says 9 bytes and holds 2
        unknown = frame([b"Xnot a payload kind"])  # a whole frame of a payload nothing wrote
        if kind == "sqlite":
            damage = "UPDATE payloads SET data = ? WHERE url = (SELECT id FROM urls WHERE key = ?)"
            store.conn.execute(damage, (truncated, by_i[1]))
            store.conn.execute(damage, (unknown, by_i[2]))
        else:
            store.client.hset(store.k["payloads"], mapping={by_i[1]: truncated, by_i[2]: unknown})
        seen = []

        def scorer(entries):
            seen.extend(p for entry in entries for p in entry)
            return [100 + p for entry in entries for p in entry]

        with caplog.at_level(logging.INFO):
            changed = crawler.signals.send_catch_log(signal=focused_signals.rescore_frontier, scorer=scorer)
        assert [result for _, result in changed] == [3]
        assert sorted(seen) == [0, 3, 4]
        assert crawler.stats.get_value("focused/rescore/bad_payloads") == 2
        assert not no_tracebacks(caplog)
        assert [r.getMessage() for r in caplog.records if "damaged payloads" in r.getMessage()] == [
            "Re-score skipped 2 waiting requests with damaged payloads (their priority is kept)"
        ]
        order = []
        while (r := scheduler.next_request()) is not None:
            order.append((r.url, r.priority))
        assert order[:3] == [(f"{HOST}/r/4", 104), (f"{HOST}/r/3", 103), (f"{HOST}/r/0", 100)]
        assert sorted(order[3:]) == [(f"{HOST}/r/1", 1), (f"{HOST}/r/2", 1)]
    finally:
        scheduler.close("finished")


# -- real crawls ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with graph_web(tmp_path_factory.mktemp("graph"), PAGES) as web:
        yield web


def fetched(db):
    conn = sqlite3.connect(db)
    try:
        return [u for (u,) in conn.execute("SELECT url FROM pages")]
    finally:
        conn.close()


def crawl(spec, resume=False):
    from focused.bench.runner import run_crawl

    result = run_crawl(spec, timeout=180, resume=resume)
    log = result.log.read_text(errors="replace")
    assert result.returncode == 0, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
    return result, log


def plant_sqlite(jobdir: Path, forms):
    """Crafted rows in a stopped crawl's frontier, ahead of every waiting URL: waiting, and one in flight."""
    conn = sqlite3.connect(jobdir / "frontier.sqlite")
    with conn:
        for i, (name, item) in enumerate(forms.items()):
            rowid = conn.execute(
                "INSERT INTO urls (key, state, priority, tie, p_first, p_n, p_sum, p_max) "
                "VALUES (?, ?, 900000, ?, 900000, 1, 900000, 900000)",
                (f"planted-{name}", 1 if i == 0 else 0, -1 - i),
            ).lastrowid
            conn.execute("INSERT INTO requests (url, item) VALUES (?, ?)", (rowid, item))
    conn.close()


def plant_redis(server, prefix, forms):
    store = RedisStore(
        connect(server.url), prefix=prefix, encode=lambda item: item, decode=str,
        aggregation=defaults.FOCUSED_PARENT_AGGREGATION, tiebreak=defaults.FOCUSED_TIEBREAK,
    )  # fmt: skip
    store.push_many([Push(f"planted-{name}", item, 900000) for name, item in forms.items()])
    store.close()


def run_quarantine_command(capsys, *args):
    code = focused_main(["quarantine", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_a_crawl_quarantines_planted_entries_fetches_the_rest_and_the_command_lists_and_purges(
    kind, site, marker, tmp_path, request, capsys
):
    forms = crafted()
    if kind == "sqlite":
        where = {"JOBDIR": str(tmp_path / "job")}
        command = ["--jobdir", where["JOBDIR"]]
    else:
        server = request.getfixturevalue("redis_server")
        prefix = f"crawl{os.getpid()}-{time.time_ns()}"
        where = {"REDIS_URL": server.url, "FOCUSED_REDIS_PREFIX": prefix}
        command = ["--redis-url", server.url, "--prefix", prefix]
    # a crawl stopped by its budget leaves URLs waiting; crafted entries are planted ahead of them
    first = graph_crawl(site, kind, strategy="baseline", max_pages=5, **where)
    crawl(first)
    assert len(fetched(first.db)) == 5
    if kind == "sqlite":
        plant_sqlite(Path(where["JOBDIR"]), forms)
    else:
        plant_redis(server, where["FOCUSED_REDIS_PREFIX"], forms)

    second = graph_crawl(site, kind if kind == "sqlite" else f"{kind}-second", strategy="baseline", **where)
    result, log = crawl(second, resume=True)
    assert not marker.exists()
    assert result.stats["focused/frontier/quarantined"] == len(forms)
    assert log.count("quarantined: ") == len(forms)
    pages = set(fetched(first.db)) | set(fetched(second.db))
    assert len(pages) == PAGES and not [u for u in pages if "/planted/" in u]  # the good ones all fetched

    code, out, err = run_quarantine_command(capsys, "list", *command)
    assert code == 0 and not err
    lines = out.splitlines()
    assert len(lines) == len(forms) + 1 and lines[-1].startswith(f"{len(forms)} quarantined entries")
    assert any("planted-class" in line and "is not one focused writes" in line for line in lines)
    assert run_quarantine_command(capsys, "purge", *command)[:2] == (0, f"purged {len(forms)} quarantined entries "
                                                                        f"from {_where(kind, command)}\n")  # fmt: skip
    assert run_quarantine_command(capsys, "list", *command)[1].startswith("0 quarantined entries")

    # resumed (or a new worker) again: the bad entries do not come back
    third = graph_crawl(site, kind if kind == "sqlite" else f"{kind}-third", strategy="baseline", **where)
    result, log = crawl(third, resume=True)
    assert "quarantined" not in log and "focused/frontier/quarantined" not in result.stats
    assert not marker.exists()


def _where(kind, command):
    return (
        (Path(command[1]) / "frontier.sqlite") if kind == "sqlite" else f"Redis frontier {command[3]} at {command[1]}"
    )


def test_the_command_refuses_bad_input_in_one_line(tmp_path, capsys):
    not_a_store = tmp_path / "x.sqlite"
    not_a_store.write_text("hello")
    for args in (["list", "--frontier", str(not_a_store)], ["purge", "--jobdir", str(tmp_path / "none")],
                 ["list", "--redis-url", "http://127.0.0.1:1/"]):  # fmt: skip
        code, out, err = run_quarantine_command(capsys, *args)
        assert code == 1 and not out and len(err.strip().splitlines()) == 1 and err.startswith("focused: error:")
