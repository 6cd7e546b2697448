"""The benchmark's figures and report, on synthetic runs (no crawling)."""

from __future__ import annotations

import json

import pytest

from focused.bench.metrics import Curve, gap_closure
from focused.bench.report import markdown, plot
from focused.bench.runs import Run
from focused.bench.suite import split_strategy
from focused.bench.summary import summarize


def test_curve_figures():
    curve = Curve(
        ["http://a/1", "http://a/2", "http://a/3", "http://a/4"], [True, False, True, True], [0.9, 0.1, 0.5, 0.7]
    )
    assert curve.true_harvest_at(2) == 0.5
    assert curve.loss_at(4) == 0.25
    assert curve.critic_harvest_at(4) == pytest.approx(0.55)
    assert curve.true_harvest_at(100) == 0.75  # a crawl shorter than the checkpoint uses what it fetched
    assert curve.recall_at(2, {"http://a/1", "http://a/3"}, str) == 0.5
    assert curve.cumulative_loss() == [0, 1, 1, 1]


def test_gap_closure():
    assert gap_closure(0.5, 0.2, 0.8) == pytest.approx(0.5)
    assert gap_closure(0.1, 0.2, 0.8) < 0
    assert gap_closure(0.3, 0.5, 0.5) is None


def test_strategy_variants():
    assert split_strategy("baseline") == ("baseline", {})
    assert split_strategy("apprentice:fast+classes")[1]["FOCUSED_APPRENTICE_CLASS_FEATURES"] is True
    with pytest.raises(ValueError, match="unknown strategy variant"):
        split_strategy("apprentice:turbo")


def run(group, topic, strategy, h100, repeat=0):
    ks = (100, 250)
    return Run(
        "t",
        group,
        topic,
        strategy,
        repeat,
        250,
        1.0,
        {k: h100 for k in ks},
        {k: h100 for k in ks},
        {k: 1 - h100 for k in ks},
        {k: h100 for k in ks},
        300,
        10,
        0,
        [0, 1, 1],
        apprentice={"switched_in_at": 50, "high_rate": 0.4} if strategy == "apprentice" else {},
    )


def test_summary_gap_closure_loss_reduction_and_noise(tmp_path):
    runs = [
        run("g1", "x", "baseline", 0.2),
        run("g1", "x", "baseline", 0.4, repeat=1),
        run("g1", "x", "oracle", 0.8),
        run("g1", "x", "apprentice", 0.5),
        run("g1", "x", "apprentice", 0.5, repeat=1),
    ]
    summary = summarize(runs, ("baseline", "apprentice", "oracle"))["t"]
    assert summary["gap_closure"]["apprentice"][100] == pytest.approx(0.4)  # (0.5-0.3)/(0.8-0.3)
    assert summary["loss_reduction"]["apprentice"]["mean"][100] == pytest.approx(1 - 0.5 / 0.7, abs=1e-3)
    assert summary["noise"]["baseline"][100] == pytest.approx(0.1414, abs=1e-3)
    assert summary["noise"]["baseline"]["mean_of_track"][250] == pytest.approx(0.1414, abs=1e-3)
    assert "apprentice" not in summary["noise"] or summary["noise"]["apprentice"][100] == 0
    result = {
        "config": {"budget": 250, "strategies": ["baseline", "apprentice", "oracle"], "repeats": 2},
        "tracks": {"t": {"cases": [{"group": "g1", "topic": "x"}]}},
        "summary": {"t": summary},
        "runs": [r.__dict__ for r in runs],
    }
    text = markdown(result)
    assert "| apprentice | 50.0 |" in text
    assert "gap closure" in text and "+0.40" in text
    assert "loss reduction" in text and "switched in at page" in text
    assert "Settings of every crawl" not in text
    result["config"]["settings"] = {"FOCUSED_APPRENTICE_BATCH": 50}  # a run with --set says so
    assert "Settings of every crawl: `FOCUSED_APPRENTICE_BATCH=50`." in markdown(result).splitlines()[0]
    paths = plot(result, tmp_path)
    assert paths and paths[0].stat().st_size > 1000


def test_gap_closure_against_the_better_oracle_and_on_mean_harvests():
    runs = [
        run("g1", "x", "baseline", 0.2),
        run("g1", "x", "oracle", 0.3),  # a greedy oracle barely above the baseline
        run("g1", "x", "oracle-lookahead", 0.6),
        run("g1", "x", "apprentice", 0.4),
        run("g2", "x", "baseline", 0.1),
        run("g2", "x", "oracle", 0.9),
        run("g2", "x", "oracle-lookahead", 0.5),
        run("g2", "x", "apprentice", 0.5),
    ]
    summary = summarize(runs, ("baseline", "apprentice", "oracle", "oracle-lookahead"))["t"]
    # per case: (0.4-0.2)/(0.6-0.2) = 0.5 and (0.5-0.1)/(0.9-0.1) = 0.5
    assert summary["gap_closure"]["apprentice"][100] == pytest.approx(0.5)
    # on the means: (0.45-0.15)/(0.75-0.15)
    assert summary["gap_closure_of_means"]["apprentice"][100] == pytest.approx(0.5)
    assert "oracle" not in summary["gap_closure"] and "oracle-lookahead" not in summary["gap_closure"]
    runs[3] = run("g1", "x", "apprentice", 0.21)
    summary = summarize(runs, ("baseline", "apprentice", "oracle", "oracle-lookahead"))["t"]
    assert summary["gap_closure"]["apprentice"][100] == pytest.approx((0.025 + 0.5) / 2, abs=1e-3)
    assert summary["gap_closure_of_means"]["apprentice"][100] == pytest.approx((0.355 - 0.15) / 0.6, abs=1e-3)


@pytest.mark.parametrize(
    ("stats", "reused"),
    [
        ({"finish_reason": "focused_max_pages", "focused/pages": 250}, True),
        ({"finish_reason": "finished", "focused/pages": 0}, False),  # its replay was gone: crawl again
        ({"finish_reason": "shutdown", "focused/pages": 120}, False),
    ],
)
def test_only_a_crawl_that_finished_with_pages_is_reused(tmp_path, stats, reused):
    from focused.bench.runner import CrawlSpec, stats_path
    from focused.bench.suite import reuse_crawl
    from focused.crawldb import CrawlDB

    spec = CrawlSpec("c", "course", "baseline", ("http://a.test/",), tmp_path / "m.npz", "", tmp_path / "c.sqlite", 250)
    db = CrawlDB(spec.db)
    db.set_meta(critic_model=str(tmp_path / "m.npz"))
    db.close()
    stats_path(spec).write_text(json.dumps(stats))
    assert (reuse_crawl(spec) is not None) is reused


def test_a_crawl_made_with_another_critic_is_not_reused(tmp_path):
    from dataclasses import replace

    from focused.bench.runner import CrawlSpec, stats_path
    from focused.bench.suite import reuse_crawl
    from focused.crawldb import CrawlDB

    spec = CrawlSpec("c", "course", "baseline", ("http://a.test/",), tmp_path / "m.npz", "", tmp_path / "c.sqlite", 250)
    db = CrawlDB(spec.db)
    db.set_meta(critic_model=str(tmp_path / "critic-without-x.npz"))  # a text-only critic, say
    db.close()
    stats_path(spec).write_text(json.dumps({"finish_reason": "focused_max_pages", "focused/pages": 250}))
    assert reuse_crawl(spec) is None
    assert reuse_crawl(replace(spec, model=tmp_path / "critic-without-x.npz")) is not None


def test_a_crawl_asked_for_other_settings_is_not_reused(tmp_path, monkeypatch):
    """An examples crawl's name is its critic's label, not its strategy: ``--strategies apprentice:fast``
    must not reuse the ``apprentice`` crawl of the same label (the spec ``run_crawl`` recorded tells)."""
    import subprocess
    from dataclasses import replace

    from focused.bench import runner
    from focused.bench.runner import CrawlSpec, run_crawl, spec_path, stats_path
    from focused.bench.suite import reuse_crawl
    from focused.crawldb import CrawlDB

    spec = CrawlSpec(
        "c", "course", "apprentice", ("http://a.test/",), tmp_path / "m.npz", "http://127.0.0.1:1",
        tmp_path / "c.sqlite", 250, settings={"FOCUSED_LOG_EVERY": 250},
    )  # fmt: skip

    def crawled(cmd, **kwargs):  # what the crawl leaves: its database and its stats
        db = CrawlDB(spec.db)
        db.set_meta(critic_model=str(spec.model), strategy=spec.strategy)
        db.close()
        stats_path(spec).write_text(json.dumps({"finish_reason": "focused_max_pages", "focused/pages": 250}))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(runner.subprocess, "run", crawled)
    run_crawl(spec)
    assert spec_path(spec).exists()
    assert reuse_crawl(spec) is not None
    assert reuse_crawl(replace(spec, proxy="http://127.0.0.1:2")) is not None  # another run's replay port
    fast = {"FOCUSED_LOG_EVERY": 250, "FOCUSED_APPRENTICE_BATCH": 50, "FOCUSED_APPRENTICE_MIN_INSTANCES": 50}
    assert reuse_crawl(replace(spec, settings=fast)) is None
    assert reuse_crawl(replace(spec, seeds=("http://b.test/",))) is None
    spec_path(spec).unlink()  # a crawl from before the spec was recorded: its strategy still tells
    assert reuse_crawl(spec) is not None
    assert reuse_crawl(replace(spec, strategy="baseline")) is None
