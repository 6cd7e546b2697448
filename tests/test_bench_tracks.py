"""Benchmark tracks: confinement to the held-out group, real crawls through the bench's replays."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from focused.bench.runner import PROJECT_ROOT
from focused.bench.suite import BenchConfig, run_track
from focused.bench.tracks import Case, Track, holdout_track, topic_seeds
from focused.crawldb import iter_pages
from focused.learning.critic.load import load_critic
from focused.replay.labels import write_labels
from focused.replay.store import ReplayStore, StoredResponse
from focused.replay.urlnorm import normalize_url
from focused.replay.warc import write_warc
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
            links += [(f"{host}/p/{(i + 1) % n}.html", "next"), (f"{host}/p/", "home")]
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


def _warc_with_labels(tmp_path: Path) -> tuple[Path, Path]:
    store = two_group_store()
    warc = tmp_path / "mine.warc.gz"
    write_warc(warc, store.responses())
    labels = tmp_path / "mine.labels.tsv"
    write_labels(labels, ((u, store.labels[u], store.groups[u]) for u in sorted(store.labels)))
    return warc, labels


def test_holdout_track_takes_any_group_and_topic_of_a_warc(tmp_path: Path):
    warc, labels = _warc_with_labels(tmp_path)
    track = holdout_track("mine", warc, tmp_path / "cache", labels=labels, hold_out=["held"], topics=["cooking"])
    (case,) = track.cases
    assert (case.group, case.topic, case.confine) == ("held", "cooking", frozenset({"held"}))
    # no page labelled department: the seed is the group's most linked-to page, here its index
    assert case.seeds == (f"{HELD}/p/index.html",)
    assert case.reachable == 12 and len(case.targets) == 6
    assert all(u.startswith(HELD) for u in case.targets)
    critic = load_critic(case.model)
    assert critic.metadata["groups"] == ["train"]  # trained without the held-out group
    assert getattr(critic, "head", None) is None  # the function's default: no verdict head


def test_holdout_track_critics_with_a_verdict_head(tmp_path: Path):
    warc, labels = _warc_with_labels(tmp_path)
    track = holdout_track(
        "mine", warc, tmp_path / "cache", labels=labels, hold_out=["held"], topics=["cooking"], critic_head=True
    )
    models = {case.model for case in track.cases}
    assert [m.name for m in models] == ["critic-mine-without-held-urls-head.npz"]  # not a cached head-less one
    critic = load_critic(models.pop())
    assert getattr(critic, "head", None) is not None
    verdict = critic.judge("whisk the eggs", critic.resolve_topic("cooking"))
    assert verdict.link_relevance is not None  # links keep the naive Bayes view


def test_topic_seeds_rule():
    graph = {"a": ["b", "c"], "b": ["c"], "c": ["b"], "d": ["c", "a"]}
    assert topic_seeds({"a", "b", "c", "d"}, graph, n=2) == ("c", "b")
    assert topic_seeds({"a", "d"}, graph, n=3) == ("a", "d")  # ties by URL


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "focused", "bench", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=PROJECT_ROOT,
        timeout=600,
        check=False,
    )


def test_bench_command_runs_on_a_labelled_warc(tmp_path: Path):
    warc, labels = _warc_with_labels(tmp_path)
    out = tmp_path / "out"
    common = ["--tracks", "webkb", "--archive", str(warc), "--labels", str(labels), "--out", str(out)]
    proc = _bench(*common, "--hold-out", "held", "--topics", "sport", "--strategies", "bfs,oracle-lookahead",
                  "--budget", "20", "--no-throughput")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((out / "bench.json").read_text())
    assert set(result["summary"]["mine"]["strategies"]) == {"bfs", "oracle-lookahead"}
    assert [m.name for m in (out / "cache" / "mine").glob("critic-*.npz")] == ["critic-mine-without-held-urls-head.npz"]
    assert {(c["group"], c["topic"]) for c in result["tracks"]["mine"]["cases"]} == {("held", "sport")}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--hold-out", "nowhere"], "unknown group(s) nowhere in mine.warc.gz; valid: held, train"),
        (["--hold-out", "held", "--topics", "knitting"], "unknown topic 'knitting'; valid: cooking, sport"),
        (["--hold-out", "held", "--strategies", "bfs,telepathy"], "unknown strategy 'telepathy'"),
        (["--hold-out", "held", "--strategies", "apprentice:turbo"], "unknown strategy variant 'turbo'"),
        ([], "give the groups to hold out (--hold-out); groups in mine.warc.gz: held, train"),
    ],
)
def test_bench_command_bad_values_one_line_exit_1(tmp_path: Path, args: list[str], message: str):
    warc, labels = _warc_with_labels(tmp_path)
    proc = _bench("--tracks", "webkb", "--archive", str(warc), "--labels", str(labels), "--out", str(tmp_path), *args)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()  # INFO progress lines may come first; the error is one line
    errors = [line for line in lines if "error" in line.lower()]
    assert errors == [lines[-1]] and message in lines[-1] and "Traceback" not in proc.stderr, proc.stderr
