"""``focused bench-traps``: how much of a page budget crawler traps take, with and without the defences.

Real ``scrapy crawl`` runs (:mod:`focused.bench.runner`) of the trap probe
(:mod:`focused.bench.studies.trapweb`) served on loopback, for each strategy, with the
trap defences as configured (the defaults) and switched off. The figure is
the share of the budget spent in traps: calendar pages, the growing path, and
fetches of a site page already fetched (through a session-id URL).
Writes ``bench.md`` and ``bench.json``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from focused.bench.runner import CrawlSpec, run_crawl
from focused.bench.studies.trapweb import SEED, TOPIC, TrapWeb, classify, train_probe_critic
from focused.crawldb import iter_pages
from focused.replay.server import ReplayServer
from focused.settings import defaults

#: Settings that switch every trap defence off (the "before" rows).
DEFENCES_OFF: dict[str, object] = {
    "FOCUSED_SESSION_PARAMS": "",
    "FOCUSED_NEAR_DUPLICATES": False,
    "FOCUSED_MAX_DEPTH": 0,
    "FOCUSED_MAX_PATH_REPEATS": 0,
    "FOCUSED_MAX_PAGES_PER_HOST": 0,
    "FOCUSED_TRAP_PATTERN_DUPLICATES": 0,
}
TRAPS = ("session", "calendar", "growing_path")


@dataclass(frozen=True)
class TrapBenchConfig:
    out: Path
    pages: int = 400
    budget: int = 500
    strategies: tuple[str, ...] = ("apprentice", "baseline", "bfs")
    without_defences: bool = True
    seed: int = 0
    settings: dict[str, object] = field(default_factory=dict)

    def quick(self) -> TrapBenchConfig:
        return replace(self, pages=60, budget=100, strategies=("apprentice", "bfs"))


def run_case(
    work: Path,
    proxy: str,
    model: Path,
    strategy: str,
    budget: int,
    settings: dict[str, object],
    name: str | None = None,
) -> dict[str, Any]:
    """One crawl of the probe; its pages by kind and the share of the budget spent in traps."""
    defences = settings.get("FOCUSED_NEAR_DUPLICATES", defaults.FOCUSED_NEAR_DUPLICATES) is not False
    name = name or f"{strategy}-{'on' if defences else 'off'}"
    spec = CrawlSpec(
        name=name,
        topic=TOPIC,
        strategy=strategy,
        seeds=(SEED,),
        model=model,
        proxy=proxy,
        db=work / f"{name}.sqlite",
        max_pages=budget,
        settings={"FOCUSED_REPLAY_CONCURRENCY": 2, **settings},
    )
    result = run_crawl(spec)
    if result.returncode != 0:
        raise RuntimeError(f"crawl {name} failed (exit {result.returncode}); see {result.log}")
    urls = [p.url for p in iter_pages(spec.db)]  # in fetch order
    counts = classify(urls)
    in_traps = sum(counts[k] for k in TRAPS)
    stats = {k.removeprefix("focused/traps/"): v for k, v in result.stats.items() if k.startswith("focused/traps/")}
    return {
        "strategy": strategy,
        "defences": defences,
        "pages": len(urls),
        **counts,
        "in_traps": in_traps,
        "trap_share": in_traps / budget,
        "seconds": round(result.seconds, 1),
        "stats": stats,
    }


def run_trap_bench(config: TrapBenchConfig) -> dict[str, Any]:
    config.out.mkdir(parents=True, exist_ok=True)
    work = config.out / "cache"  # crawl databases and logs (git-ignored under results/)
    work.mkdir(exist_ok=True)
    start = time.perf_counter()
    model = train_probe_critic(work / "critic.model", seed=config.seed)
    cases = []
    with ReplayServer(TrapWeb(config.pages, seed=config.seed)) as server:
        for strategy in config.strategies:
            variants = [dict(config.settings)]
            if config.without_defences:
                variants.append({**config.settings, **DEFENCES_OFF})
            for settings in variants:
                cases.append(run_case(work, server.proxy_url, model, strategy, config.budget, settings))
    result = {
        "pages": config.pages,
        "budget": config.budget,
        "cases": cases,
        "seconds": round(time.perf_counter() - start, 1),
    }
    (config.out / "bench.json").write_text(json.dumps(result, indent=2) + "\n")
    (config.out / "bench.md").write_text(markdown(result))
    return result


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# Crawler traps: a {result['pages']}-page on-topic site next to a calendar, session-id URLs and a "
        f"growing path; budget {result['budget']} pages\n",
        "Share of the budget spent in traps (goal: under 5% with the default strategy, under 10% with bfs).\n",
        "| strategy | defences | pages | site pages | session-id repeats | calendar | growing path | "
        "in traps | share of budget |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in result["cases"]:
        lines.append(
            f"| {c['strategy']} | {'on' if c['defences'] else 'off'} | {c['pages']} | {c['site']} | {c['session']} | "
            f"{c['calendar']} | {c['growing_path']} | {c['in_traps']} | {100 * c['trap_share']:.1f}% |"
        )
    lines.append("\nStats of the defended crawls (`focused/traps/*`):\n")
    for c in result["cases"]:
        if c["defences"]:
            stats = ", ".join(f"{k} {v}" for k, v in sorted(c["stats"].items())) or "none"
            lines.append(f"- {c['strategy']}: {stats}")
    lines.append(f"\n{result['seconds']:.0f} s in all.\n")
    return "\n".join(lines)
