"""The ceiling study: best-first crawls simulated on a case's web, judged by the case's own critic."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from focused.bench.runner import PROJECT_ROOT
from focused.bench.studies.ceiling import STRATEGIES, CaseWeb, case_runs, case_web, edge_scores
from focused.bench.studies.simcrawl import reachable, simulate
from focused.bench.tracks import Case, TrackError, holdout_track
from tests.sites import train_critic
from tests.test_bench_tracks import HELD, _warc_with_labels


def test_simulate_is_best_first_over_the_best_fetched_parent():
    #      0 -> 1 (.5), 0 -> 2 (.4), 1 -> 3 (.1), 1 -> 4 (.3), 2 -> 3 (.45)
    src = np.array([0, 0, 1, 1, 2])
    dst = np.array([1, 2, 3, 4, 3])
    score = np.array([0.5, 0.4, 0.1, 0.3, 0.45])
    # 3 would wait behind 4 on its first parent's .1; its second parent's .45 brings it forward
    assert simulate(5, src, dst, score, [0], 10) == [0, 1, 2, 3, 4]
    assert simulate(5, src, dst, score, [0], 3) == [0, 1, 2]
    # every seed comes first, once, in the order given; pages not linked from a fetched page never come
    assert simulate(6, src, dst, score, [2, 0, 2], 10) == [2, 0, 1, 3, 4]


def test_reachable_is_what_any_crawl_from_the_seeds_can_fetch():
    src = np.array([0, 0, 1, 1, 2, 5])
    dst = np.array([1, 2, 3, 4, 3, 0])
    assert reachable(6, src, dst, [0]).tolist() == [True, True, True, True, True, False]  # 5 links in, not out
    assert reachable(6, src, dst, [2]).tolist() == [False, False, True, True, False, False]
    assert reachable(6, src, dst, [5]).all()


def _web() -> CaseWeb:
    return CaseWeb(
        urls=["s", "a", "b"],
        page_view=np.array([0.9, 0.2, 0.7]),
        truth=np.array([False, True, False]),
        src=np.array([0, 0]),
        dst=np.array([1, 2]),
        anchor_view=np.array([0.6, 0.5]),
        seeds=[0],
    )


def test_edge_scores_of_each_strategy():
    web = _web()
    assert edge_scores(web, "sim:baseline").tolist() == [0.9, 0.9]
    prior = edge_scores(web, "sim:prior")
    assert prior[0] > prior[1] and np.all((prior > 0) & (prior < 1))
    assert edge_scores(web, "sim:critic").argmax() == 1  # the target's own verdict: b (0.7) before a (0.2)
    assert edge_scores(web, "sim:oracle").argmax() == 0  # the true label: a
    with pytest.raises(ValueError, match="valid: sim:baseline"):
        edge_scores(web, "sim:telepathy")


def test_lookahead_goes_through_the_hub_that_leads_to_a_relevant_page():
    #  seed 0 -> 1 (a hub: off-topic, its anchor rated low) -> 3 (relevant); 0 -> 2 (rated high, a dead end)
    web = CaseWeb(
        urls=["s", "hub", "lure", "target"],
        page_view=np.array([0.1, 0.1, 0.2, 0.9]),
        truth=np.array([False, False, False, True]),
        src=np.array([0, 0, 1]),
        dst=np.array([1, 2, 3]),
        anchor_view=np.array([0.1, 0.9, 0.5]),
        seeds=[0],
    )
    for strategy, order in (
        ("sim:prior", [0, 2, 1, 3]),
        ("sim:critic", [0, 2, 1, 3]),  # the target's verdict is of no use before the hub is fetched
        ("sim:critic-lookahead", [0, 1, 3, 2]),
        ("sim:oracle-lookahead", [0, 1, 3, 2]),
    ):
        assert simulate(4, web.src, web.dst, edge_scores(web, strategy), web.seeds, 10) == order, strategy


def test_case_runs_stay_in_the_confined_web_and_count_true_labels(tmp_path: Path):
    warc, labels = _warc_with_labels(tmp_path)
    track = holdout_track("mine", warc, tmp_path / "cache", labels=labels, hold_out=["held"], topics=["cooking"])
    (case,) = track.cases
    web = case_web(track, case)
    assert len(web.urls) == 12 and all(u.startswith(HELD) for u in web.urls)  # no page of the training group
    assert int(web.truth.sum()) == len(case.targets) == 6
    assert len(web.anchor_view) == len(web.src) > 0
    assert web.page_view[web.truth].mean() > web.page_view[~web.truth].mean() + 0.3  # the critic tells them apart
    runs = case_runs(track, case, budget=40)
    assert [r["strategy"] for r in runs] == list(STRATEGIES)
    for run in runs:
        assert run["pages"] == 12  # the whole held-out site, nothing else
        assert run["cumulative_loss"][-1] == 6  # its six sport pages are the off-topic ones
        assert 0.5 < run["page_view_ap"] <= 1.0  # the critic ranks the cooking pages first, or nearly
        assert run["reachable_targets"] == 6  # every cooking page of the held-out site
    oracle = runs[STRATEGIES.index("sim:oracle")]["cumulative_loss"]
    assert oracle[6] <= min(r["cumulative_loss"][6] for r in runs)
    # the discriminative page view: trained on the training group's pages, it tells the held-out ones apart too
    lr = case_web(track, case, page_view="discriminative")
    assert lr.page_view.shape == web.page_view.shape and np.all((lr.page_view >= 0) & (lr.page_view <= 1))
    assert lr.page_view[lr.truth].mean() > lr.page_view[~lr.truth].mean() + 0.3
    with pytest.raises(ValueError, match="valid: critic, discriminative"):
        case_web(track, case, page_view="psychic")
    # a critic that does not name its training groups cannot give one
    other = Case("mine", "held", "cooking", case.seeds, train_critic(tmp_path / "c.npz"), case.targets, 12,
                 case.confine, case.labels, case.graph)  # fmt: skip
    with pytest.raises(TrackError, match="needs a held-out track's critic"):
        case_web(track, other, page_view="discriminative")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tracks", "webkb,nope"], "unknown track 'nope'; valid: webkb, wiki"),
        (["--budget", "0"], "argument --budget: 0 must be at least 1"),
        (["--reference", "/nonexistent/bench.json"], "no such bench.json: /nonexistent/bench.json"),
        (["--page-view", "psychic"], "argument --page-view: invalid choice: 'psychic'"),
    ],
)
def test_ceiling_command_bad_values_one_line_exit_1(tmp_path: Path, args: list[str], message: str):
    proc = subprocess.run(
        [sys.executable, "-m", "focused.bench.studies.ceiling", "--out", str(tmp_path), *args],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("python3 -m focused.bench.studies.ceiling: error: ") and message in line, proc.stderr
