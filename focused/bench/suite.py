"""Run every strategy on every case of the benchmark tracks and report.

Crawls run as parallel subprocesses against one replay proxy per track; each
writes a crawl database under ``results/cache/crawls``, from which the
figures are computed. Results: ``results/bench.json``, ``results/bench.md``
and one PNG of cumulative loss per track.
"""

from __future__ import annotations

import json
import logging
import platform
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from focused.bench.metrics import crawl_curve, gap_closure
from focused.bench.runner import PROJECT_ROOT, CrawlResult, CrawlSpec, run_crawl, stats_path
from focused.bench.tracks import Case, Track
from focused.learning.critic import load_critic
from focused.replay import ReplayServer

logger = logging.getLogger(__name__)

CHECKPOINTS = (100, 250, 500, 1000)
GAP_CHECKPOINTS = (100, 250)
DEFAULT_STRATEGIES = ("bfs", "baseline", "apprentice", "apprentice:classes", "apprentice-offline", "oracle")
#: Added by ``--parent-study``: how a URL linked by several parents gets its priority.
PARENT_STUDY = ("baseline:first", "baseline:mean")
#: ``STRATEGY:VARIANT`` runs STRATEGY with a variant's settings (the parent-aggregation study).
VARIANTS: dict[str, dict[str, Any]] = {
    "first": {"FOCUSED_PARENT_AGGREGATION": "first"},
    "max": {"FOCUSED_PARENT_AGGREGATION": "max"},
    "mean": {"FOCUSED_PARENT_AGGREGATION": "mean"},
    "classes": {"FOCUSED_APPRENTICE_CLASS_FEATURES": True},
    # the default schedule: switch in after 200 instances, retrain every 200 pages
    "slow": {"FOCUSED_APPRENTICE_BATCH": 200, "FOCUSED_APPRENTICE_MIN_INSTANCES": 200},
    # switch in early and retrain often: better on WebKB, worse on the Wikipedia track
    "fast": {"FOCUSED_APPRENTICE_BATCH": 50, "FOCUSED_APPRENTICE_MIN_INSTANCES": 50},
    # start from an apprentice trained offline on other crawls, then keep learning online
    "warm": {"FOCUSED_APPRENTICE_BATCH": 50},
    # the paper's apprentice: <t,d> features only, the baseline's Pr(c*|u) until switch-in
    "paper": {"FOCUSED_APPRENTICE_ANCHOR_CRITIC": False},
    # never switch in: the critic's blended views of page and anchor alone (no learning)
    "prior": {"FOCUSED_APPRENTICE_MIN_INSTANCES": 10**9},
    # intelligent crawling with one interest-ratio factor (Aggarwal et al. 2001): intelligent:content ...
    **{factor: {"FOCUSED_INTELLIGENT_FACTORS": factor} for factor in ("content", "url", "link", "sibling")},
    "soft": {"FOCUSED_INTELLIGENT_SOFT": True},  # K counts Pr(c*|page), not a thresholded verdict
}


def needs_offline_model(strategy: str) -> bool:
    """Strategies that start from an apprentice trained on earlier baseline crawls."""
    base, _, variants = strategy.partition(":")
    return base == "apprentice-offline" or "warm" in variants.split("+")


def split_strategy(name: str) -> tuple[str, dict[str, Any]]:
    """``"baseline:first"`` -> ``("baseline", {"FOCUSED_PARENT_AGGREGATION": "first"})``.

    Several variants combine with ``+``: ``apprentice:warm+classes``.
    """
    strategy, _, variants = name.partition(":")
    settings: dict[str, Any] = {}
    for variant in filter(None, variants.split("+")):
        if variant not in VARIANTS:
            raise ValueError(f"unknown strategy variant {variant!r} in {name!r}; valid: {', '.join(VARIANTS)}")
        settings.update(VARIANTS[variant])
    return strategy, settings


@dataclass
class Run:
    """One crawl's figures."""

    track: str
    group: str
    topic: str
    strategy: str
    repeat: int
    pages: int
    seconds: float
    true_harvest: dict[int, float]
    critic_harvest: dict[int, float]
    loss: dict[int, float]
    recall: dict[int, float]
    responses: int
    not_found: int
    non_html: int
    cumulative_loss: list[int] = field(repr=False)
    ok: bool = True
    apprentice: dict[str, Any] = field(default_factory=dict)


@dataclass
class BenchConfig:
    out: Path
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    budget: int = 1000
    jobs: int = 2
    repeats: int = 1
    throughput: bool = True
    extra_settings: dict[str, Any] = field(default_factory=dict)
    reuse: bool = False


def _spec(config: BenchConfig, track: Track, case: Case, strategy: str, proxy: str, repeat: int) -> CrawlSpec:
    name = f"{track.name}-{case.group}-{case.topic}-{strategy}-r{repeat}".replace("/", "_").replace(":", "-")
    base_strategy, variant_settings = split_strategy(strategy)
    settings: dict[str, Any] = {"FOCUSED_LOG_EVERY": 250, **config.extra_settings, **variant_settings}
    if config.repeats > 1:
        settings.update({"FOCUSED_TIEBREAK": "random", "FOCUSED_SEED": repeat})
    return CrawlSpec(
        name=name,
        topic=case.topic,
        strategy=base_strategy,
        seeds=case.seeds,
        model=case.model,
        proxy=proxy,
        db=config.out / "cache" / "crawls" / f"{name}.sqlite",
        max_pages=config.budget,
        labels=track.labels,
        settings=settings,
    )


def reuse_crawl(spec: CrawlSpec) -> CrawlResult | None:
    """The result of an earlier identical crawl (same name and output), if it finished."""
    stats_file = stats_path(spec)
    if not (spec.db.exists() and stats_file.exists()):
        return None
    stats = json.loads(stats_file.read_text())
    if stats.get("finish_reason") not in ("finished", "focused_max_pages"):
        return None
    logger.info("reusing %s", spec.db.name)
    return CrawlResult(spec, 0, float(stats.get("elapsed_time_seconds", 0.0)), spec.db.with_suffix(".log"), stats)


def _figures(track: Track, case: Case, strategy: str, repeat: int, result: CrawlResult) -> Run:
    critic = load_critic(case.model)
    topic = critic.resolve_topic(case.topic)
    stats = result.stats
    curve = crawl_curve(str(result.spec.db), track.store.labels, topic) if result.spec.db.exists() else None
    pages = len(curve.urls) if curve else 0
    ks = [k for k in CHECKPOINTS if k <= result.spec.max_pages]
    return Run(
        track=track.name,
        group=case.group,
        topic=case.topic,
        strategy=strategy,
        repeat=repeat,
        pages=pages,
        seconds=round(result.seconds, 2),
        true_harvest={k: round(curve.true_harvest_at(k), 4) for k in ks} if curve else {},
        critic_harvest={k: round(curve.critic_harvest_at(k), 4) for k in ks} if curve else {},
        loss={k: round(curve.loss_at(k), 4) for k in ks} if curve else {},
        recall={k: round(curve.recall_at(k, set(case.targets), track.canonical), 4) for k in ks} if curve else {},
        responses=int(stats.get("downloader/response_count", 0)),
        not_found=int(stats.get("downloader/response_status_count/404", 0)),
        non_html=int(stats.get("focused/skipped/non_html", 0)),
        cumulative_loss=curve.cumulative_loss() if curve else [],
        ok=result.returncode == 0 and pages > 0,
        apprentice={k.rsplit("/", 1)[1]: v for k, v in stats.items() if k.startswith("focused/apprentice/")},
    )


def _offline_sources(track: Track, case: Case, config: BenchConfig) -> list[Path]:
    """Baseline crawls an offline apprentice for ``case`` trains on.

    The same topic crawled from the track's other groups (WebKB: the other
    universities), when the track has them; otherwise the case's own baseline
    crawl, which is the paper's protocol (§3.5: train on a baseline crawl,
    then crawl again from the same seeds).
    """
    others = [c for c in track.cases if c.topic == case.topic and c.group != case.group]
    sources = others or [case]
    paths = [_spec(config, track, c, "baseline", "", 0).db for c in sources]
    return [p for p in paths if p.exists()]


def _train_offline(track: Track, case: Case, strategy: str, config: BenchConfig) -> Path | None:
    from focused.apprentice_data import train_apprentice
    from focused.learning.online import make_snippet_critic

    _, variant = split_strategy(strategy)
    settings = {**config.extra_settings, **variant}
    class_features = bool(settings.get("FOCUSED_APPRENTICE_CLASS_FEATURES"))
    snippet = None
    if settings.get("FOCUSED_APPRENTICE_ANCHOR_CRITIC", True):
        critic = load_critic(case.model)  # the critic the crawl will use reads the anchors
        snippet = make_snippet_critic(critic, critic.resolve_topic(case.topic))
    sources = _offline_sources(track, case, config)
    if not sources:
        logger.error("no baseline crawl to train the offline apprentice for %s/%s", case.group, case.topic)
        return None
    out = config.out / "cache" / "apprentices" / f"{track.name}-{case.group}-{case.topic}-{strategy}.npz"
    out.parent.mkdir(parents=True, exist_ok=True)
    d_max = int(settings.get("FOCUSED_APPRENTICE_DMAX", 5))
    train_apprentice(sources, d_max=d_max, class_features=class_features, snippet_critic=snippet).save(out)
    return out


def run_track(config: BenchConfig, track: Track) -> list[Run]:
    runs: list[Run] = []
    jobs = [
        (case, strategy, repeat)
        for case in track.cases
        for strategy in config.strategies
        for repeat in range(config.repeats if strategy != "oracle" else 1)
    ]
    # offline apprentices train on baseline crawls, so they run in a second phase
    offline = [j for j in jobs if needs_offline_model(j[1])]
    online = [j for j in jobs if j not in offline]
    if offline and "baseline" not in config.strategies:
        online += [(case, "baseline", 0) for case in track.cases]
    with ReplayServer(track.store) as server:
        logger.info("%s: %d crawls through %s (%d at a time)", track.name, len(jobs), server.proxy_url, config.jobs)

        def one(job: tuple[Case, str, int]) -> Run:
            case, strategy, repeat = job
            spec = _spec(config, track, case, strategy, server.proxy_url, repeat)
            result = reuse_crawl(spec) if config.reuse else None
            if result is None:
                if needs_offline_model(strategy):  # trained only when the crawl really runs
                    model = _train_offline(track, case, strategy, config)
                    if model is None:
                        return _failed_run(track, case, strategy, repeat)
                    spec = replace(spec, settings={**spec.settings, "FOCUSED_APPRENTICE_MODEL": str(model)})
                result = run_crawl(spec)
            run = _figures(track, case, strategy, repeat, result)
            logger.info(
                "%s %s %s %s: %d pages in %.0fs, harvest@100=%.2f",
                track.name,
                case.group,
                case.topic,
                strategy,
                run.pages,
                run.seconds,
                run.true_harvest.get(100, 0),
            )
            return run

        with ThreadPoolExecutor(max_workers=config.jobs) as pool:
            runs.extend(pool.map(one, online))
            runs.extend(pool.map(one, offline))
    return [r for r in runs if r.strategy in config.strategies]


def _failed_run(track: Track, case: Case, strategy: str, repeat: int) -> Run:
    return Run(track.name, case.group, case.topic, strategy, repeat, 0, 0.0, {}, {}, {}, {}, 0, 0, 0, [], ok=False)


def throughput(config: BenchConfig, track: Track, pages: int = 1000, concurrency: int = 8) -> dict[str, Any]:
    """Responses per second of the full focused pipeline vs plain Scrapy link following.

    Both crawls stop after the same number of responses (``CLOSESPIDER_PAGECOUNT``),
    from the same seeds, through the same replay, at the same concurrency.
    """
    case = track.cases[0]
    out: dict[str, Any] = {"case": f"{case.group}/{case.topic}", "concurrency": concurrency, "budget": pages}
    with ReplayServer(track.store) as server:
        for spider in ("plain", "focused"):
            spec = CrawlSpec(
                name=f"throughput-{track.name}-{spider}",
                topic=case.topic,
                strategy="baseline",
                seeds=case.seeds,
                model=case.model,
                proxy=server.proxy_url,
                db=config.out / "cache" / "crawls" / f"throughput-{track.name}-{spider}.sqlite",
                max_pages=0,
                spider=spider,
                settings={
                    "FOCUSED_REPLAY_CONCURRENCY": concurrency,
                    "FOCUSED_LOG_EVERY": 0,
                    "CLOSESPIDER_PAGECOUNT": pages,
                },
            )
            result = run_crawl(spec)
            responses = int(result.stats.get("downloader/response_count", 0))
            ok = int(result.stats.get("downloader/response_status_count/200", 0))
            elapsed = float(result.stats.get("elapsed_time_seconds", 0) or 0)
            out[spider] = {
                "responses": responses,
                "ok_responses": ok,
                "elapsed_s": round(elapsed, 2),
                "pages_per_s": round(responses / elapsed, 1) if elapsed else None,
            }
    return out


def summarize(runs: list[Run], strategies: tuple[str, ...]) -> dict[str, Any]:
    """Means per track × strategy × checkpoint, per-target means, and gap closure."""
    summary: dict[str, Any] = {}
    for track in sorted({r.track for r in runs}):
        truns = [r for r in runs if r.track == track and r.ok]
        tsum: dict[str, Any] = {"strategies": {}, "per_topic": {}, "gap_closure": {}}
        for strategy in strategies:
            sruns = [r for r in truns if r.strategy == strategy]
            if not sruns:
                continue
            tsum["strategies"][strategy] = _means(sruns)
            for topic in sorted({r.topic for r in sruns}):
                tsum["per_topic"].setdefault(topic, {})[strategy] = _means([r for r in sruns if r.topic == topic])
        # gap closure per case (group, topic), then averaged
        if "baseline" in tsum["strategies"] and "oracle" in tsum["strategies"]:
            for strategy in strategies:
                if strategy in ("baseline", "oracle"):
                    continue
                per_k: dict[int, Any] = {}
                for k in GAP_CHECKPOINTS:
                    values = []
                    for group, topic in sorted({(r.group, r.topic) for r in truns}):
                        h = _mean_at(truns, group, topic, strategy, k)
                        hb = _mean_at(truns, group, topic, "baseline", k)
                        ho = _mean_at(truns, group, topic, "oracle", k)
                        if None in (h, hb, ho):
                            continue
                        g = gap_closure(h, hb, ho)  # type: ignore[arg-type]
                        if g is not None:
                            values.append(g)
                    per_k[k] = round(sum(values) / len(values), 3) if values else None
                tsum["gap_closure"][strategy] = per_k
        tsum["loss_reduction"] = _loss_reduction(truns, strategies)
        tsum["noise"] = _noise(truns, strategies)
        summary[track] = tsum
    return summary


def _loss_reduction(runs: list[Run], strategies: tuple[str, ...]) -> dict[str, Any]:
    """1 − loss/loss_baseline at each checkpoint, per topic (mean over groups) and overall."""
    out: dict[str, Any] = {}
    cases = sorted({(r.group, r.topic) for r in runs})
    for strategy in strategies:
        if strategy == "baseline":
            continue
        per_topic: dict[str, dict[int, list[float]]] = {}
        for group, topic in cases:
            for k in CHECKPOINTS:
                ls = [
                    r.loss[k]
                    for r in runs
                    if (r.group, r.topic, r.strategy) == (group, topic, strategy) and k in r.loss
                ]
                lb = [
                    r.loss[k]
                    for r in runs
                    if (r.group, r.topic, r.strategy) == (group, topic, "baseline") and k in r.loss
                ]
                if ls and lb and sum(lb) > 0:
                    value = 1.0 - (sum(ls) / len(ls)) / (sum(lb) / len(lb))
                    per_topic.setdefault(topic, {}).setdefault(k, []).append(value)
        topics = {t: {k: round(sum(v) / len(v), 3) for k, v in ks.items()} for t, ks in per_topic.items()}
        overall: dict[int, float] = {}
        for k in CHECKPOINTS:
            values = [v for ks in per_topic.values() for v in ks.get(k, [])]
            if values:
                overall[k] = round(sum(values) / len(values), 3)
        out[strategy] = {"mean": overall, "per_topic": topics}
    return out


def _noise(runs: list[Run], strategies: tuple[str, ...]) -> dict[str, Any]:
    """Run-to-run spread (random tie-break seeds): mean over cases of the std of true harvest."""
    out: dict[str, Any] = {}
    for strategy in strategies:
        per_k: dict[int, float] = {}
        for k in (100, 250):
            stds = []
            for group, topic in sorted({(r.group, r.topic) for r in runs}):
                values = [
                    r.true_harvest[k]
                    for r in runs
                    if (r.group, r.topic, r.strategy) == (group, topic, strategy) and k in r.true_harvest
                ]
                if len(values) > 1:
                    mean = sum(values) / len(values)
                    stds.append((sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5)
            if stds:
                per_k[k] = round(sum(stds) / len(stds), 4)
        if per_k:
            out[strategy] = per_k
    return out


def _mean_at(runs: list[Run], group: str, topic: str, strategy: str, k: int) -> float | None:
    values = [
        r.true_harvest[k]
        for r in runs
        if (r.group, r.topic, r.strategy) == (group, topic, strategy) and k in r.true_harvest
    ]
    return sum(values) / len(values) if values else None


def _means(runs: list[Run]) -> dict[str, Any]:
    def mean(values: list[float]) -> float:
        return round(sum(values) / len(values), 4) if values else float("nan")

    ks = sorted({k for r in runs for k in r.true_harvest})
    return {
        "runs": len(runs),
        "true_harvest": {k: mean([r.true_harvest[k] for r in runs if k in r.true_harvest]) for k in ks},
        "critic_harvest": {k: mean([r.critic_harvest[k] for r in runs if k in r.critic_harvest]) for k in ks},
        "loss": {k: mean([r.loss[k] for r in runs if k in r.loss]) for k in ks},
        "recall": {k: mean([r.recall[k] for r in runs if k in r.recall]) for k in ks},
        "not_found": mean([float(r.not_found) for r in runs]),
        "non_html": mean([float(r.non_html) for r in runs]),
        "responses": mean([float(r.responses) for r in runs]),
    }


def run_bench(config: BenchConfig, tracks: list[Track]) -> dict[str, Any]:
    from focused.bench.report import write_reports

    config.out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    runs: list[Run] = []
    for track in tracks:
        runs.extend(run_track(config, track))
    result: dict[str, Any] = {
        "config": {
            "strategies": list(config.strategies),
            "budget": config.budget,
            "repeats": config.repeats,
            "jobs": config.jobs,
            "python": platform.python_version(),
            "settings": config.extra_settings,
        },
        "tracks": {
            t.name: {
                "cases": [
                    {
                        "group": c.group,
                        "topic": c.topic,
                        "seeds": list(c.seeds),
                        "reachable": c.reachable,
                        "reachable_targets": len(c.targets),
                    }
                    for c in t.cases
                ]
            }
            for t in tracks
        },
        "summary": summarize(runs, config.strategies),
        "runs": [r.__dict__ for r in runs],
    }
    if config.throughput and tracks:
        from focused.bench.speed import speed_study

        result["throughput"] = throughput(config, tracks[0], pages=min(config.budget, 1000))
        webkb = [t for t in tracks if t.name == "webkb"]
        if webkb:
            result["speed"] = speed_study(webkb[0].store, webkb[0].cases[0].model)
    result["seconds"] = round(time.time() - started, 1)
    write_reports(result, config.out)
    return result


def default_out() -> Path:
    return PROJECT_ROOT / "results"


def dump_json(result: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(result, indent=1, default=str))
