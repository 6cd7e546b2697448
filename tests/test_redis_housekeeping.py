"""What a crawl leaves in Redis, and leases that neither linger nor lapse.

Every key a crawl writes is listed in docs/distributed.md ("The keys in Redis"), and their number does not grow
with the crawl; a pop leaves no record behind; a live worker's leases are renewed (a slow download is fetched
once) while a killed worker's come back; the shared page budget counts only pages some worker stored.
Every test talks to a real ``redis-server`` on a free loopback port; the crawls are real ``scrapy crawl``
processes.
"""

from __future__ import annotations

import dataclasses
import re
import sqlite3
import time
from pathlib import Path

import numpy as np
import pytest

from focused.bench.runner import PROJECT_ROOT
from focused.core.sharedcount import SharedCount
from focused.crawldb import CrawlDB
from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.online import OnlineApprentice
from focused.learning.apprentice.payload import LinkPayload
from focused.learning.apprentice.shared import SharedLearning
from focused.settings import defaults
from tests.local_server import HTML, LocalServer, direct_crawl
from tests.sites import graph_web
from tests.test_distributed import PAGES, redis_settings
from tests.test_distributed_workers import Worker, worker
from tests.test_frontier_redis import wait_for
from tests.test_frontier_store import make_redis, push, rescore


def documented_keys() -> list[re.Pattern[str]]:
    """The keys of docs/distributed.md's table, as patterns over the keys of one prefix."""
    text = (PROJECT_ROOT / "docs" / "distributed.md").read_text()
    table = text.split("## The keys in Redis", 1)[1].split("\n## ", 1)[0]
    names = re.findall(r"^\| `PREFIX:([^`]+)` \|", table, flags=re.MULTILINE)
    assert len(names) > 20, names
    return [re.compile(re.sub(r"<[a-z]+>", "[^:]+", re.escape(n))) for n in names]


def keys_of(server, prefix: str) -> list[str]:
    return sorted(k.decode()[len(prefix) + 1 :] for k in server.client().scan_iter(match=f"{prefix}:*", count=1000))


def rows(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0])
    finally:
        conn.close()


# -- the frontier store -----------------------------------------------------------------------


def test_the_default_lease_is_tens_of_seconds():
    assert 10 <= defaults.FOCUSED_REDIS_LEASE_SECONDS <= 60


def test_pops_leave_one_record_per_worker_and_none_once_it_closes(redis_server):
    a = make_redis(redis_server.url)
    b = make_redis(redis_server.url, prefix=a.prefix)
    for i in range(200):
        push(a, f"k{i}", i)
    for _ in range(50):
        for store in (a, b):
            store.ack_many(p.key for p in store.pop_many(2))
    pops = [k for k in keys_of(redis_server, a.prefix) if k.startswith("frontier:pop:")]
    assert sorted(pops) == sorted(f"frontier:pop:{s.worker}" for s in (a, b))  # 200 pops, two records
    a.close()
    b.close()
    assert not [k for k in keys_of(redis_server, a.prefix) if "pop" in k]


def test_a_long_rescoring_renews_the_leases_of_its_worker(redis_server, monkeypatch):
    monkeypatch.setattr("focused.frontier.rescore.RESCORE_CHUNK", 1)
    a = make_redis(redis_server.url, lease_seconds=0.3)
    b = make_redis(redis_server.url, prefix=a.prefix, lease_seconds=0.3)
    for i in range(200):  # more than a small sorted set, which ZSCAN returns whole
        push(a, f"k{i}", i, payload=bytes([i % 256]))
    (held,) = a.pop_many(1)
    calls = []

    def slow(payloads):  # chunks slower than a third of the lease, 1.5 s in all: far longer than the lease
        calls.append(len(payloads))
        if len(calls) <= 10:
            time.sleep(0.15)
        return [5 for _ in payloads]

    rescore(a, slow)
    assert len(calls) >= 10
    assert b.reap() == 0 and a.in_flight == 1  # still a's
    assert held.key not in [p.key for p in b.pop_many(300)]
    a.close()
    b.close()


# -- shared learning ------------------------------------------------------------------------------


def test_links_to_pages_not_judged_wait_in_one_key(redis_server):
    prefix = f"pending-{time.monotonic_ns()}"
    online = OnlineApprentice(Apprentice(n_features=2**10, min_instances=8), batch_size=4)
    a = SharedLearning(redis_server.client(), online, prefix=prefix)
    targets = [f"http://x.test/{i}" for i in range(300)]
    same = LinkPayload(np.array([1, 2], dtype=np.int32))
    a.observe_links([*targets, targets[0]], [same] * (len(targets) + 1))  # the same link twice: two instances
    assert keys_of(redis_server, prefix) == ["apprentice:pending"]
    assert a.client.zcard(a.k["pending"]) == len(targets) + 1
    a.observe_page([targets[0], targets[0] + "/index.html"], 0.5)
    a.observe_page([targets[1]], 0.25)
    assert a.client.llen(a.k["instances"]) == 3
    assert a.client.zcard(a.k["pending"]) == len(targets) - 2
    for url in targets[2:]:
        a.observe_page([url], 0.0)
    assert "apprentice:pending" not in keys_of(redis_server, prefix)  # empty: gone
    assert a.client.llen(a.k["instances"]) == len(targets) + 1


# -- the shared page count ------------------------------------------------------------------------


def add_page(db: CrawlDB, url: str, order: int) -> None:
    db.add_page(
        url=url, fetch_order=order, parent=None, depth=0, status=200, content_type="text/html", title="",
        relevance=0.5, predicted_class="x",
    )  # fmt: skip


def test_a_page_counts_once_committed_and_a_dead_workers_claims_expire(redis_server, tmp_path):
    prefix = f"count-{time.monotonic_ns()}"
    a = SharedCount(redis_server.client(), prefix, claim_seconds=0.5)
    b = SharedCount(redis_server.client(), prefix, claim_seconds=60)
    db = CrawlDB(tmp_path / "a.sqlite", commit_every=1000, commit_seconds=1000)
    a.attach(db)
    assert [a.add(1) for _ in range(3)] == [1, 2, 3]  # claimed, not stored
    assert b.add(1) == 4  # b has no crawl database: its page counts at once
    client = redis_server.client()
    assert int(client.get(a.k["pages"])) == 1
    for i in range(2):
        add_page(db, f"http://x.test/{i}", i + 1)
    db.set_meta(x=1)  # makes the writer commit now
    wait_for(lambda: int(client.get(a.k["pages"])) == 3)
    assert b.add(0) == 4  # a's third claim still counts while a lives
    time.sleep(0.6)  # a killed: it stops calling, its claim expires
    assert b.add(0) == 3
    add_page(db, "http://x.test/0", 9)  # the same page again (a re-fetch): its row is replaced
    db.close()
    assert int(client.get(a.k["pages"])) == 3 == rows(tmp_path / "a.sqlite") + 1
    b.close()
    assert keys_of(redis_server, prefix) == ["crawl:pages"]


# -- real crawls -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with graph_web(tmp_path_factory.mktemp("housekeeping"), PAGES) as served:
        yield served


def test_a_crawl_leaves_only_the_documented_keys_and_no_pop_records(web, redis_server):
    settings = redis_settings(redis_server, FOCUSED_APPRENTICE_MIN_INSTANCES=30, FOCUSED_APPRENTICE_BATCH=20)
    prefix = settings["FOCUSED_REDIS_PREFIX"]
    spec = dataclasses.replace(worker(web, "keys", **settings), strategy="apprentice", max_pages=200)
    w = Worker(spec)
    stats = w.finish()
    assert stats["finish_reason"] == "focused_max_pages"
    left = keys_of(redis_server, prefix)
    patterns = documented_keys()
    assert [k for k in left if not any(p.fullmatch(k) for p in patterns)] == []
    assert not [k for k in left if ":pop:" in k]
    assert len(left) <= len(patterns)  # 200 pages, and no more keys than the table has lines
    assert {"frontier:seen", "crawl:pages", "apprentice:instances", "apprentice:pending"} <= set(left)
    assert int(redis_server.client().get(f"{prefix}:crawl:pages")) == rows(spec.db) == len(w.pages())


def test_a_download_slower_than_the_lease_is_fetched_once(tmp_path, redis_server):
    slow = "/slow.html"
    links = "".join(f'<a href="/p{i}.html">sport match {i}</a>' for i in range(8))

    def answer(path: str):
        if path == "/":
            return 200, HTML, f'<html><body><a href="{slow}">slow</a>{links}</body></html>'.encode()
        if path == slow:
            time.sleep(4)  # four leases
        if path == slow or re.fullmatch(r"/p\d\.html", path):
            return 200, HTML, f"<html><body><p>sport game {path}</p></body></html>".encode()
        return None

    settings = redis_settings(redis_server, FOCUSED_REDIS_LEASE_SECONDS=1, FOCUSED_REDIS_POLL_SECONDS=0.1)
    with LocalServer(answer) as site:
        workers = [Worker(direct_crawl(site, tmp_path, f"lease{i}", **settings)) for i in (1, 2)]
        stats = [w.finish() for w in workers]
    assert site.hits.count(slow) == 1, site.hits
    stored = [url for w in workers for url in w.pages()]
    assert len(stored) == len(set(stored)) == 10 and site.url + slow in stored
    assert sum(st.get("focused/frontier/requeued", 0) for st in stats) == 0


def test_after_a_kill_the_shared_budget_counts_the_pages_stored_and_is_filled(web, redis_server):
    budget = 60
    settings = redis_settings(
        redis_server, FOCUSED_MAX_PAGES=budget, FOCUSED_REDIS_LEASE_SECONDS=10, FOCUSED_DB_COMMIT_EVERY=25,
        FOCUSED_DB_COMMIT_SECONDS=1000,
    )  # fmt: skip
    prefix = settings["FOCUSED_REDIS_PREFIX"]
    client = redis_server.client()
    victim = Worker(worker(web, "budget-victim", **settings))
    victim.wait_for("Crawled (200)", 40)
    victim.proc.kill()  # kill -9: the pages it had not committed are lost, and must not count
    victim.proc.wait(timeout=30)
    lost = victim.text().count("Crawled (200)") - rows(victim.spec.db)
    assert lost > 0  # it had fetched pages it never stored, and claimed places for them
    # the survivor soon has the budget full of stored pages and the victim's claims: it holds back, and
    # goes on once those expire with the victim's leases, instead of stopping short
    survivor = Worker(worker(web, "budget-survivor", **settings))
    stats = survivor.finish()
    assert stats["finish_reason"] == "focused_max_pages"
    assert stats["focused/frontier/requeued"] >= 1  # the victim's leases came back
    stored = rows(victim.spec.db) + rows(survivor.spec.db)
    assert int(client.get(f"{prefix}:crawl:pages")) == stored == budget
    assert client.exists(f"{prefix}:crawl:claims", f"{prefix}:crawl:workers") == 0
