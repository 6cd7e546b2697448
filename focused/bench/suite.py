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
import re
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from focused.bench.runner import PROJECT_ROOT, CrawlResult, CrawlSpec, run_crawl, spec_path, spec_record, stats_path
from focused.bench.runs import Run, crawl_figures, failed_run
from focused.bench.summary import ORACLES, summarize
from focused.bench.tracks import Case, ExtraJob, Track
from focused.learning.critic.load import load_critic
from focused.replay.server import ReplayServer
from focused.settings import defaults

logger = logging.getLogger(__name__)

DEFAULT_STRATEGIES = (
    "bfs",
    "baseline",
    "apprentice:prior",
    "apprentice",
    "apprentice:warm",
    "oracle",
    "oracle-lookahead",
)
#: Strategies whose ``:SUFFIX`` is always a bench variant (VARIANTS).
VARIANT_BASES = ("bfs", "baseline", "oracle", "oracle-lookahead", "apprentice", "apprentice-offline")
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
    "prior": {"FOCUSED_APPRENTICE_MIN_INSTANCES": 10**9, "FOCUSED_APPRENTICE_SIBLINGS": 0.0},
    # the default without sibling feedback (the default before it)
    "nosiblings": {"FOCUSED_APPRENTICE_SIBLINGS": 0.0},
    # intelligent crawling with one interest-ratio factor (Aggarwal et al. 2001): intelligent:content ...
    **{factor: {"FOCUSED_INTELLIGENT_FACTORS": factor} for factor in ("content", "url", "link", "sibling")},
    # intelligent:soft: K counts Pr(c*|page), not a thresholded verdict
    "soft": {"FOCUSED_INTELLIGENT_SOFT": True},
}


#: ``exploreN`` and ``halflifeN``: the exploration bonus β = N and its half-life H = N pages
#: (``apprentice:explore1``, ``apprentice:explore2+halflife250``); ``siblingsN`` and ``pseudoN``:
#: sibling feedback γ = N and its pseudo-count m = N; ``refreshN``: re-score every N pages.
EXPLORE_VARIANTS = {
    "explore": (re.compile(r"explore(\d+(?:\.\d+)?)"), "FOCUSED_APPRENTICE_EXPLORE"),
    "halflife": (re.compile(r"halflife(\d+(?:\.\d+)?)"), "FOCUSED_APPRENTICE_EXPLORE_HALF_LIFE"),
    "siblings": (re.compile(r"siblings(\d+(?:\.\d+)?)"), "FOCUSED_APPRENTICE_SIBLINGS"),
    "pseudo": (re.compile(r"pseudo(\d+(?:\.\d+)?)"), "FOCUSED_APPRENTICE_SIBLINGS_PSEUDO"),
    "spread": (re.compile(r"spread(\d+(?:\.\d+)?)"), "FOCUSED_APPRENTICE_SIBLINGS_SPREAD"),
    "refresh": (re.compile(r"refresh(\d+)"), "FOCUSED_APPRENTICE_REFRESH_PAGES"),
    "until": (re.compile(r"until(\d+)"), "FOCUSED_APPRENTICE_REFRESH_UNTIL"),
}


def variant_settings(variant: str) -> dict[str, Any] | None:
    """The settings of one bench variant (``VARIANTS``, ``exploreN``, ``siblingsN``...), else ``None``."""
    if variant in VARIANTS:
        return VARIANTS[variant]
    for pattern, setting in EXPLORE_VARIANTS.values():
        match = pattern.fullmatch(variant)
        if match:
            value = match.group(1)
            return {setting: int(value) if setting.endswith(("_PAGES", "_UNTIL")) else float(value)}
    return None


def needs_offline_model(strategy: str) -> bool:
    """Strategies that start from an apprentice trained on earlier baseline crawls."""
    base, _, variants = strategy.partition(":")
    return base == "apprentice-offline" or "warm" in variants.split("+")


def split_strategy(name: str) -> tuple[str, dict[str, Any]]:
    """``"baseline:first"`` -> ``("baseline", {"FOCUSED_PARENT_AGGREGATION": "first"})``.

    Several variants combine with ``+``: ``apprentice:warm+classes``,
    ``apprentice:explore2+halflife250``. A name whose part after ``:`` is no
    bench variant and whose base is not one of the bench's own strategies (e.g.
    another family's ``NAME:ARG``) goes to the crawl whole, which validates it.
    """
    strategy, _, variants = name.partition(":")
    parts = [v for v in variants.split("+") if v]
    found = [variant_settings(v) for v in parts]
    unknown = [v for v, s in zip(parts, found, strict=True) if s is None]
    if unknown:
        if strategy in VARIANT_BASES:
            valid = ", ".join([*VARIANTS, *(f"{name}N" for name in EXPLORE_VARIANTS)])
            raise ValueError(f"unknown strategy variant {unknown[0]!r} in {name!r}; valid: {valid}")
        return name, {}
    settings: dict[str, Any] = {}
    for s in found:
        settings.update(s or {})
    return strategy, settings


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


def _spec(
    config: BenchConfig, track: Track, case: Case, strategy: str, proxy: str, repeat: int, label: str = ""
) -> CrawlSpec:
    name = f"{track.name}-{case.group}-{case.topic}-{label or strategy}-r{repeat}".replace("/", "_").replace(":", "-")
    base_strategy, variant_settings = split_strategy(strategy)
    settings: dict[str, Any] = {"FOCUSED_LOG_EVERY": 250, **config.extra_settings, **variant_settings}
    if config.repeats > 1:
        settings.update({"FOCUSED_TIEBREAK": "random", "FOCUSED_SEED": repeat})
    if base_strategy == "oracle-lookahead" and case.graph is not None:
        settings["FOCUSED_ORACLE_GRAPH"] = str(case.graph)
    return CrawlSpec(
        name=name,
        topic=case.topic,
        strategy=base_strategy,
        seeds=case.seeds,
        model=case.model,
        proxy=proxy,
        db=config.out / "cache" / "crawls" / f"{name}.sqlite",
        max_pages=config.budget,
        labels=case.labels or track.labels,
        settings=settings,
    )


def reuse_crawl(spec: CrawlSpec) -> CrawlResult | None:
    """The result of an earlier identical crawl (same name and output, and what :func:`run_crawl` recorded
    it was asked the same: strategy, settings, seeds, critic), if it finished with pages."""
    stats_file = stats_path(spec)
    if not (spec.db.exists() and stats_file.exists()):
        return None
    recorded = spec_path(spec)
    if recorded.exists():
        try:
            earlier = json.loads(recorded.read_text())
        except ValueError:
            earlier = None
        if earlier != spec_record(spec):  # e.g. an examples crawl of the same label with another strategy
            logger.info("not reusing %s: it was made with other settings", spec.db.name)
            return None
    stats = json.loads(stats_file.read_text())
    if stats.get("finish_reason") not in ("finished", "focused_max_pages"):
        return None
    if not stats.get("focused/pages"):  # "finished" without a page: its replay was gone; crawl it again
        return None
    from focused.crawldb import read_meta

    meta = read_meta(spec.db)
    model = meta.get("critic_model")
    if model is not None and Path(model).name != Path(spec.model).name:  # made with another critic
        logger.info("not reusing %s: its critic was %s", spec.db.name, Path(model).name)
        return None
    if meta.get("strategy") not in (None, spec.strategy):  # a crawl from before the spec was recorded
        logger.info("not reusing %s: its strategy was %s", spec.db.name, meta["strategy"])
        return None
    logger.info("reusing %s", spec.db.name)
    return CrawlResult(spec, 0, float(stats.get("elapsed_time_seconds", 0.0)), spec.db.with_suffix(".log"), stats)


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
    from focused.learning.apprentice.data import train_apprentice
    from focused.learning.critic.snippet import make_snippet_critic

    _, variant = split_strategy(strategy)
    settings = {**config.extra_settings, **variant}
    class_features = bool(settings.get("FOCUSED_APPRENTICE_CLASS_FEATURES", defaults.FOCUSED_APPRENTICE_CLASS_FEATURES))
    snippet = None
    if settings.get("FOCUSED_APPRENTICE_ANCHOR_CRITIC", defaults.FOCUSED_APPRENTICE_ANCHOR_CRITIC):
        critic = load_critic(case.model)  # the critic the crawl will use reads the anchors
        snippet = make_snippet_critic(critic, critic.resolve_topic(case.topic))
    sources = _offline_sources(track, case, config)
    if not sources:
        logger.error("no baseline crawl to train the offline apprentice for %s/%s", case.group, case.topic)
        return None
    out = config.out / "cache" / "apprentices" / f"{track.name}-{case.group}-{case.topic}-{strategy}.npz"
    out.parent.mkdir(parents=True, exist_ok=True)
    d_max = int(settings.get("FOCUSED_APPRENTICE_DMAX", defaults.FOCUSED_APPRENTICE_DMAX))
    train_apprentice(sources, d_max=d_max, class_features=class_features, snippet_critic=snippet).save(out)
    return out


def track_strategies(config: BenchConfig, track: Track) -> tuple[str, ...]:
    """What a track's runs are reported as: its strategies (or ``--strategies``), then its extra jobs' labels."""
    return tuple(dict.fromkeys([*(track.strategies or config.strategies), *(job.label for job in track.extra)]))


def run_track(config: BenchConfig, track: Track) -> list[Run]:
    runs: list[Run] = []
    strategies = track.strategies or config.strategies
    jobs = [
        (case, strategy, repeat)
        for case in track.cases
        for strategy in strategies
        for repeat in range(config.repeats if strategy not in ORACLES else 1)
    ]
    # offline apprentices train on baseline crawls, so they run in a second phase
    offline = [j for j in jobs if needs_offline_model(j[1])]
    online = [j for j in jobs if j not in offline]
    if offline and "baseline" not in strategies:
        online += [(case, "baseline", 0) for case in track.cases]
    with ExitStack() as stack:
        # one replay per confinement: a confined case's proxy 404s every page outside its groups
        proxies: dict[frozenset[str] | None, str] = {}
        for confine in dict.fromkeys(case.confine for case in track.cases):
            store = track.store if confine is None else track.store.confined(confine)
            proxies[confine] = stack.enter_context(ReplayServer(store)).proxy_url
        logger.info(
            "%s: %d crawls through %d replay(s) (%d at a time)", track.name, len(jobs), len(proxies), config.jobs
        )

        def one(job: tuple[Case, str, int]) -> Run:
            case, strategy, repeat = job
            spec = _spec(config, track, case, strategy, proxies[case.confine], repeat)
            result = reuse_crawl(spec) if config.reuse else None
            if result is None:
                if needs_offline_model(strategy):  # trained only when the crawl really runs
                    model = _train_offline(track, case, strategy, config)
                    if model is None:
                        return failed_run(track, case, strategy, repeat)
                    spec = replace(spec, settings={**spec.settings, "FOCUSED_APPRENTICE_MODEL": str(model)})
                result = run_crawl(spec)
            run = crawl_figures(track, case, strategy, repeat, result)
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

        def extra(job: ExtraJob) -> Run:
            spec = _spec(config, track, job.case, job.strategy, proxies[job.case.confine], job.repeat, job.label)
            result = reuse_crawl(spec) if config.reuse else None
            run = crawl_figures(track, job.case, job.label, job.repeat, result or run_crawl(spec))
            logger.info("%s %s %s %s: harvest@100=%.2f", track.name, job.case.group, job.label, job.repeat,
                        run.true_harvest.get(100, 0))  # fmt: skip
            return run

        with ThreadPoolExecutor(max_workers=config.jobs) as pool:
            runs.extend(pool.map(one, online))
            runs.extend(pool.map(one, offline))
            runs.extend(pool.map(extra, track.extra))
    return [r for r in runs if r.strategy in track_strategies(config, track)]


def throughput(config: BenchConfig, track: Track, pages: int = 1000, concurrency: int = 8) -> dict[str, Any]:
    """Responses per second of the full focused pipeline vs plain Scrapy link following.

    Both crawls stop after the same number of responses (``CLOSESPIDER_PAGECOUNT``),
    from the same seeds, through the same replay, at the same concurrency.
    """
    case = track.cases[0]
    out: dict[str, Any] = {"case": f"{case.group}/{case.topic}", "concurrency": concurrency, "budget": pages}
    store = track.store if case.confine is None else track.store.confined(case.confine)
    with ReplayServer(store) as server:
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


def run_bench(config: BenchConfig, tracks: list[Track]) -> dict[str, Any]:
    from focused.bench.report import write_reports

    config.out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    runs: list[Run] = []
    for track in tracks:
        runs.extend(run_track(config, track))
    strategies = tuple(dict.fromkeys(s for track in tracks for s in track_strategies(config, track)))
    result: dict[str, Any] = {
        "config": {
            "strategies": list(strategies or config.strategies),
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
                ],
                **({"critics": t.figures} if t.figures else {}),
            }
            for t in tracks
        },
        "summary": summarize(runs, strategies or config.strategies),
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
