"""Benchmark tracks: confinement to the held-out group, real crawls through the bench's replays."""

from __future__ import annotations

import random
from pathlib import Path

from focused.bench.suite import BenchConfig, run_track
from focused.bench.tracks import Case, Track
from focused.crawldb import iter_pages
from focused.replay import ReplayStore, StoredResponse, write_labels
from focused.replay.urlnorm import normalize_url
from tests.sites import COOKING, SPORT, page, train_critic, words

HELD = "http://held.test"
TRAIN = "http://train.test"


def two_group_store(n: int = 12, seed: int = 5) -> ReplayStore:
    """Two sites of sport and cooking pages that link to each other all over.

    Group ``held`` is the held-out site; ``train`` is what the critic trained on.
    Every page links to both sites, so an unconfined crawl reaches both.
    """
    rng = random.Random(seed)
    store = ReplayStore()
    headers = [("Content-Type", "text/html; charset=utf-8")]
    for host, group in ((HELD, "held"), (TRAIN, "train")):
        for i in range(n):
            label = "sport" if i % 2 == 0 else "cooking"
            vocab = SPORT if label == "sport" else COOKING
            links = [(f"{h}/p/{j}.html", words(SPORT, 2, rng)) for h in (HELD, TRAIN) for j in rng.sample(range(n), 4)]
            links.append((f"{host}/p/{(i + 1) % n}.html", "next"))
            # the index of each site is stored as dir/index.html, labelled as dir/ (an alias)
            path = "/p/index.html" if i == 0 else f"/p/{i}.html"
            store.add(StoredResponse(host + path, 200, headers, page(f"{group} {i}", words(vocab, 50, rng), links)))
            key = normalize_url(host + ("/p/" if i == 0 else path))
            store.labels[key], store.groups[key] = label, group
    return store


def test_confined_store_serves_only_its_groups():
    store = two_group_store()
    view = store.confined(["held"])
    assert f"{HELD}/p/3.html" in view and f"{HELD}/p/" in view  # the alias resolves to the stored index
    assert f"{TRAIN}/p/3.html" not in view and f"{TRAIN}/p/" not in view
    assert set(view.groups.values()) == {"held"}
    assert len(store) == 24  # the original is untouched


def test_confinement_serves_no_page_of_a_training_group(tmp_path: Path):
    store = two_group_store()
    model = train_critic(tmp_path / "critic.model")
    labels = tmp_path / "labels.tsv"
    write_labels(labels, ((u, store.labels[u], store.groups[u]) for u in sorted(store.labels)))
    case = Case("t", "held", "sport", (f"{HELD}/p/",), model, frozenset(), 12, frozenset({"held"}), labels)
    track = Track("t", store, labels, [case])
    config = BenchConfig(out=tmp_path / "out", strategies=("bfs", "oracle"), budget=40, jobs=2, throughput=False)
    runs = run_track(config, track)
    assert {r.strategy for r in runs} == {"bfs", "oracle"} and all(r.ok for r in runs)
    for run in runs:
        dbs = list((tmp_path / "out" / "cache" / "crawls").glob(f"*{run.strategy}*.sqlite"))
        assert len(dbs) == 1
        urls = [p.url for p in iter_pages(dbs[0])]
        assert len(urls) == 12  # all of the held-out site, and nothing else
        assert all(u.startswith(HELD) for u in urls), urls
        assert run.not_found > 0  # the links to the training site were asked for and refused
