"""The look-ahead oracle on a hand-built graph, and in a real crawl."""

from __future__ import annotations

from pathlib import Path

import pytest

from focused.bench.graph import link_graph, write_link_graph
from focused.bench.runner import run_crawl
from focused.crawldb import iter_pages
from focused.learning.critic.naive_bayes import Critic
from focused.learning.critic.topics import Verdict
from focused.replay.labels import label_lookup, write_labels
from focused.replay.store import ReplayStore, StoredResponse
from focused.strategies.base import FetchedPage
from focused.strategies.oracles import GraphFileError, LookAheadOracle, load_graph, save_graph
from tests.sites import graph_crawl, graph_web

#        s ──> a ──> b ──> T1
#        │
#        ├──> c ──> T2 ──> T3
#        ├──> T4
#        └──> d   (dead end)
EDGES = {"s": "a c T4 d", "a": "b", "b": "T1", "c": "T2", "T2": "T3"}
NODES = ["s", "a", "b", "c", "d", "T1", "T2", "T3", "T4"]


def url(name: str) -> str:
    return f"http://g.test/{name}"


def oracle() -> LookAheadOracle:
    index = {url(n): i for i, n in enumerate(NODES)}
    src = [index[url(s)] for s, ts in EDGES.items() for _ in ts.split()]
    dst = [index[url(t)] for ts in EDGES.values() for t in ts.split()]
    labels = {url(n): ("sport" if n.startswith("T") else "other") for n in NODES}
    topic = Critic.train(["a b", "c d"], ["sport", "other"], n_features=2**8).resolve_topic("sport")
    return LookAheadOracle(topic, labels.get, list(index), _arr(src), _arr(dst), index.get)


def _arr(values: list[int]):
    import numpy as np

    return np.array(values, dtype=np.int64)


def fetched(name: str) -> FetchedPage:
    return FetchedPage(url(name), 0, Verdict("other", 0.0, ()))


def test_lookahead_ranks_by_distance_to_the_nearest_undiscovered_target():
    o = oracle()
    links = [url(n) for n in ("a", "c", "T4", "d")] + ["http://g.test/missing"]
    scores = dict(zip(["a", "c", "T4", "d", "missing"], o.score(fetched("s"), links).scores, strict=True))
    # on topic first; then c (T2 one hop away) before a (T1 two hops away); the dead end and the dead link last
    assert scores["T4"] > scores["c"] > scores["a"] > scores["d"] == scores["missing"] == 0.0
    assert 0.5 <= scores["T4"] < 1.0 and 0.25 <= scores["c"] < 0.5 and 0.125 <= scores["a"] < 0.25


def test_lookahead_forgets_targets_once_discovered():
    o = oracle()
    o.score(fetched("s"), [url(n) for n in ("a", "c", "T4", "d")])
    before = o.score_node(NODES.index("a"))
    # b's page is fetched and its link to T1 is now waiting: T1 is discovered, a leads to nothing new
    o.score(fetched("b"), [url("T1")])
    assert o.score_node(NODES.index("a")) == 0.0 < before
    # an on-topic URL that links to another undiscovered target beats one that does not
    assert o.score_node(NODES.index("T2")) > o.score_node(NODES.index("T4"))


def test_graph_file_round_trip_and_errors(tmp_path: Path):
    path = tmp_path / "g.npz"
    save_graph(path, ["http://x/", "http://x/a"], [0], [1])
    urls, src, dst = load_graph(path)
    assert urls == ["http://x/", "http://x/a"] and src.tolist() == [0] and dst.tolist() == [1]
    (tmp_path / "bad.npz").write_bytes(b"not a graph")
    with pytest.raises(GraphFileError, match="cannot read link graph"):
        load_graph(tmp_path / "bad.npz")


def test_link_graph_of_a_store_follows_index_aliases_and_drops_dead_links():
    store = ReplayStore()
    headers = [("Content-Type", "text/html")]
    body = b'<a href="/d">dir</a> <a href="/x.html">x</a> <a href="/gone.html">gone</a>'
    store.add(StoredResponse("http://h.test/", 200, headers, body))
    store.add(StoredResponse("http://h.test/d/index.html", 200, headers, b'<a href="../">up</a>'))
    store.add(StoredResponse("http://h.test/x.html", 200, headers, b"<p>leaf</p>"))
    urls, src, dst = link_graph(store)
    edges = {(urls[s], urls[d]) for s, d in zip(src, dst, strict=True)}
    assert edges == {
        ("http://h.test/", "http://h.test/d/index.html"),
        ("http://h.test/", "http://h.test/x.html"),
        ("http://h.test/d/index.html", "http://h.test/"),
    }


def test_lookahead_crawl_beats_breadth_first_on_the_graph_site(tmp_path: Path):
    from tests.sites import graph_site

    store = graph_site(120)
    labels = tmp_path / "labels.tsv"
    write_labels(labels, ((u, store.labels[u], store.groups[u]) for u in sorted(store.labels)))
    graph = write_link_graph(store, tmp_path / "graph.npz")
    harvests = {}
    with graph_web(tmp_path, pages=120) as web:
        for strategy in ("bfs", "oracle-lookahead"):
            settings = {"FOCUSED_LABELS": str(labels), "FOCUSED_ORACLE_GRAPH": str(graph)}
            spec = graph_crawl(web, strategy, strategy=strategy, max_pages=30, **settings)
            result = run_crawl(spec, timeout=300)
            assert result.returncode == 0, result.log.read_text()[-2000:]
            label_of = label_lookup(store.labels)
            pages = list(iter_pages(spec.db))
            harvests[strategy] = sum(label_of(p.url) == "sport" for p in pages[:30]) / 30
    assert harvests["oracle-lookahead"] >= 0.9 > harvests["bfs"]
