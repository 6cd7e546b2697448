"""The bench's ``examples`` track: critics from k example pages beside the taxonomy critic, crawled for real."""

from __future__ import annotations

import json
import random
from pathlib import Path

from focused.bench.crossfit import crossfit_track
from focused.bench.examples import examples_track
from focused.learning.critic.load import load_critic
from tests.sites import COOKING, NEUTRAL, SPORT, words
from tests.test_bench_crossfit import _bench, almanac
from tests.test_bench_tracks import _warc_with_labels


def background_folder(path: Path, n: int = 30, seed: int = 2) -> Path:
    """A small background of other pages (a third on the topic's words: the background is unlabelled)."""
    rng = random.Random(seed)
    path.mkdir()
    for i in range(n):
        vocab = (SPORT, COOKING, NEUTRAL)[i % 3]
        (path / f"{i}.html").write_text(f"<html><title>page {i}</title><p>{words(vocab, 60, rng)}</p></html>")
    return path


def test_examples_track_on_a_crossfit_case_trains_a_critic_per_fold(tmp_path: Path):
    warc, labels = almanac(tmp_path)
    base = crossfit_track("almanac", warc, tmp_path / "cache", labels=labels, topics=["Sport"])
    background = background_folder(tmp_path / "bg")
    track = examples_track(base, tmp_path / "ex", ks=(3,), samples=2, background=[str(background)])
    assert [(j.label, j.repeat) for j in track.extra] == [("taxonomy", 0), ("examples-k3", 0), ("examples-k3", 1)]
    (_, first, second) = track.extra
    critic = load_critic(first.case.model)
    assert critic.kind == "crossfit" and critic.k == 5  # one examples critic per fold of the taxonomy critic
    assert [fold.classes for fold in critic.folds] == [["Sport", "background"]] * 5
    assert first.case.model != second.case.model  # two seeded samples, two critics
    figures = track.figures["Sport/Sport"]
    assert figures["taxonomy"]["pages"] == figures["examples-k3"]["pages"] == 41  # every labelled page
    assert figures["examples-k3"]["samples"] == 2
    assert figures["examples-k3"]["average_precision"] > 0.9  # 3 examples are enough on this web


def test_bench_examples_track_through_the_command(tmp_path: Path):
    warc, labels = _warc_with_labels(tmp_path)  # two groups of sport and cooking pages
    background = background_folder(tmp_path / "bg")
    out = tmp_path / "out"
    proc = _bench("--tracks", "examples", "--archive", str(warc), "--labels", str(labels), "--hold-out", "held",
                  "--topics", "sport", "--examples-k", "2,4", "--examples-samples", "1", "--strategies",
                  "baseline,oracle", "--budget", "100", "--no-throughput", "--out", str(out),
                  "-s", f"FOCUSED_EXAMPLES_BACKGROUND={background}")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((out / "bench.json").read_text())
    summary = result["summary"]["examples-mine"]
    assert list(summary["strategies"]) == ["baseline", "oracle", "taxonomy", "examples-k2", "examples-k4"]
    assert set(summary["gap_closure_of_means"]) == {"taxonomy", "examples-k2", "examples-k4"}
    runs = [r for r in result["runs"] if r["strategy"].startswith("examples")]
    assert len(runs) == 2 and all(r["ok"] and r["group"] == "held" for r in runs)
    # the examples came from the training group: the crawl is confined to the held-out one
    for run in runs:
        model = load_critic(next((out / "cache" / "examples-mine").glob(f"*-{run['strategy'][-2:]}-s0.npz")))
        assert all(url.startswith("http://train.test/") for url in model.metadata["examples"])
    figures = result["tracks"]["examples-mine"]["critics"]["held/sport"]
    assert set(figures) == {"taxonomy", "examples-k2", "examples-k4"}
    pages = {f["pages"] for f in figures.values()}
    assert len(pages) == 1 and 0 < pages.pop() <= 12  # judged on the held-out group's pages only
    table = (out / "bench.md").read_text()
    rows = {line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ")}
    assert {"baseline", "oracle", "taxonomy", "examples-k2", "examples-k4", "held/sport"} <= rows, table
    assert "the critics on the held-out pages" in table


def test_bench_examples_track_bad_k_one_line_exit_1(tmp_path: Path):
    warc, labels = _warc_with_labels(tmp_path)
    proc = _bench("--tracks", "examples", "--archive", str(warc), "--labels", str(labels), "--hold-out", "held",
                  "--examples-k", "1", "--out", str(tmp_path / "o"))  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "--examples-k takes whole numbers >= 2" in proc.stderr.strip().splitlines()[-1]
