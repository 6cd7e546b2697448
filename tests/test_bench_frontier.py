"""The frontier benchmark's audit of a crawl: lost URLs counted on tiny hand-made databases."""

import sqlite3

from focused.bench.studies.frontier_store import audit, request_key
from focused.frontier.sqlite import DONE, IN_FLIGHT, WAITING

SITE = "http://site.test"


def make_dbs(tmp_path, pages, links, states):
    crawl, frontier = tmp_path / "crawl.sqlite", tmp_path / "frontier.sqlite"
    with sqlite3.connect(crawl) as db:
        db.execute("CREATE TABLE pages (url TEXT PRIMARY KEY)")
        db.execute("CREATE TABLE links (src TEXT, dst TEXT, position INTEGER)")
        db.executemany("INSERT INTO pages VALUES (?)", [(u,) for u in pages])
        db.executemany("INSERT INTO links VALUES (?, ?, 0)", links)
    with sqlite3.connect(frontier) as db:
        db.execute("CREATE TABLE urls (key TEXT UNIQUE, state INTEGER)")
        db.executemany("INSERT INTO urls VALUES (?, ?)", [(request_key(u), s) for u, s in states.items()])
    return crawl, frontier


def test_a_link_target_neither_fetched_nor_in_the_store_is_lost(tmp_path):
    a, b, c, d, e = (f"{SITE}/{name}" for name in "abcde")
    crawl, frontier = make_dbs(
        tmp_path,
        pages=[a, d],
        links=[
            (a, b),  # waiting: not lost
            (a, c),  # nowhere: lost
            (a, d),  # fetched: not lost
            (a, d),  # the same link twice counts once
            (a, "http://elsewhere.test/x"),  # another host: not counted
            (d, e),  # nowhere, but d is still in flight: it will be fetched again
        ],
        states={a: DONE, b: WAITING, d: IN_FLIGHT},
    )
    result = audit(crawl, frontier, "site.test")
    assert (result["pages"], result["link_targets"], result["lost"]) == (2, 4, 2)
    assert result["lost_examples"] == [c, e]
    assert (result["waiting"], result["in_flight"], result["done"]) == (1, 1, 1)
    assert result["integrity"] == {"crawl_db": "ok", "frontier": "ok"}

    acked = audit(crawl, frontier, "site.test", only_acked=True)
    assert (acked["link_targets"], acked["lost"], acked["lost_examples"]) == (3, 1, [c])
    assert result["fetched_not_acknowledged"] == acked["fetched_not_acknowledged"] == 1  # d, to be fetched again


def test_nothing_lost_when_every_target_is_fetched_or_stored(tmp_path):
    a, b = f"{SITE}/a", f"{SITE}/b?x=1&y=2"
    # the store keys are request fingerprints, so a URL spelled with another query order still matches
    crawl, frontier = make_dbs(tmp_path, [a], [(a, f"{SITE}/b?y=2&x=1")], {a: DONE, b: WAITING})
    assert audit(crawl, frontier, "site.test")["lost"] == 0
