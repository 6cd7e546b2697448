"""``focused bench-markines``: the Markines strategies on the benchmark tracks.

For each case of a track (WebKB: a page type crawled from a held-out university;
Wikipedia: a topic of the category tree) this runs, through the loopback replay and
the real crawler:

1. a ``baseline`` crawl (and whatever else is asked for that needs no model);
2. the Markines models, trained with :func:`focused.learning.markines.data.markines_data`
   on baseline crawls as in the paper: on WebKB the same topic's baseline crawls of the
   *other* universities (the crawled one is never seen), on Wikipedia the case's own
   baseline crawl (one case per topic: the paper's protocol, optimistic);
3. one crawl per Markines strategy with its model (and, with ``online``, one learning
   online from nothing).

Figures are true harvest rates (hand labels) at 100 and 250 pages, from the crawl
databases, as :mod:`focused.bench.suite` computes them. Writes ``markines.json`` and
``markines.md`` to the output folder.
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from focused.bench.metrics import crawl_curve
from focused.bench.runner import CrawlSpec, run_crawl
from focused.bench.suite import reuse_crawl
from focused.bench.tracks import Case, Track

logger = logging.getLogger(__name__)

CHECKPOINTS = (100, 250)
ONLINE = "/online"


@dataclass
class MarkinesBench:
    out: Path
    tracks: tuple[str, ...] = ("webkb", "wiki")
    strategies: tuple[str, ...] = ("baseline", "apprentice")
    online: bool = False
    budget: int = 250
    jobs: int = 2
    selection: str = "df"
    reuse: bool = False


def _needs_model(strategy: str) -> bool:
    return strategy.startswith("markines:") and not strategy.endswith(ONLINE)


def _spec(config: MarkinesBench, track: Track, case: Case, strategy: str, proxy: str, model: Path | None) -> CrawlSpec:
    name = f"{track.name}-{case.group}-{case.topic}-{strategy}".replace("/", "_").replace(":", "-")
    if strategy.startswith("markines:") and config.selection != "df":
        name += f"-{config.selection}"
    settings: dict[str, Any] = {"FOCUSED_LOG_EVERY": 250, "FOCUSED_ALLOW_INTERNAL": "127.0.0.0/8,::1"}
    if model is not None:
        settings["FOCUSED_MARKINES_MODEL"] = str(model)
    if strategy.endswith(ONLINE):
        settings["FOCUSED_MARKINES_SELECTION"] = config.selection
    return CrawlSpec(
        name=name,
        topic=case.topic,
        strategy=strategy.removesuffix(ONLINE),
        seeds=case.seeds,
        model=case.model,
        proxy=proxy,
        db=config.out / "cache" / "crawls" / f"{name}.sqlite",
        max_pages=config.budget,
        labels=track.labels,
        settings=settings,
    )


def _train(config: MarkinesBench, track: Track, case: Case) -> Path | None:
    from focused.learning.markines.classifiers import MarkinesModel, fit_part
    from focused.learning.markines.data import markines_data

    others = [c for c in track.cases if c.topic == case.topic and c.group != case.group] or [case]
    sources = [_spec(config, track, c, "baseline", "", None).db for c in others]
    sources = [p for p in sources if p.exists()]
    out = config.out / "cache" / "markines" / f"{track.name}-{case.group}-{case.topic}-{config.selection}.npz"
    if config.reuse and out.exists():
        return out
    if not sources:
        return None
    data = markines_data(sources)
    parts = {}
    for mode, docs, labels in (("link", data.link_docs, data.link_labels), ("page", data.page_docs, data.page_labels)):
        try:
            parts[mode] = fit_part(docs, labels, selection=config.selection)
        except ValueError as exc:
            logger.error("%s/%s: no %s model: %s", case.group, case.topic, mode, exc)
            return None
    meta = {"sources": [p.name for p in sources], "case": f"{case.group}/{case.topic}"}
    return MarkinesModel(parts, metadata=meta).save(out)


def _figures(track: Track, case: Case, spec: CrawlSpec) -> dict[str, Any]:
    from focused.learning.critic.load import load_critic

    topic = load_critic(case.model).resolve_topic(case.topic)
    curve = crawl_curve(str(spec.db), track.store.labels, topic) if spec.db.exists() else None
    pages = len(curve.urls) if curve else 0
    return {
        "pages": pages,
        "harvest": {k: round(curve.true_harvest_at(k), 4) for k in CHECKPOINTS if k <= spec.max_pages} if curve else {},
    }


def run_track(config: MarkinesBench, track: Track, strategies: tuple[str, ...]) -> list[dict[str, Any]]:
    from focused.replay.server import ReplayServer

    plain = [s for s in strategies if not _needs_model(s)]
    if "baseline" not in plain:
        plain = ["baseline", *plain]
    modelled = [s for s in strategies if _needs_model(s)]
    rows: list[dict[str, Any]] = []
    with ReplayServer(track.store) as server:

        def one(job: tuple[Case, str]) -> dict[str, Any]:
            case, strategy = job
            model = models.get((case.group, case.topic)) if _needs_model(strategy) else None
            spec = _spec(config, track, case, strategy, server.proxy_url, model)
            if _needs_model(strategy) and model is None:
                return {"case": f"{case.group}/{case.topic}", "strategy": strategy, "pages": 0, "harvest": {}}
            result = reuse_crawl(spec) if config.reuse else None
            if result is None:
                result = run_crawl(spec)
            row = {"case": f"{case.group}/{case.topic}", "strategy": strategy, **_figures(track, case, spec)}
            logger.info("%s %s %s: %s", track.name, row["case"], strategy, row["harvest"])
            return row

        models: dict[tuple[str, str], Path | None] = {}
        with ThreadPoolExecutor(max_workers=config.jobs) as pool:
            rows.extend(pool.map(one, [(c, s) for c in track.cases for s in plain]))
            for case in track.cases:
                models[(case.group, case.topic)] = _train(config, track, case) if modelled else None
            rows.extend(pool.map(one, [(c, s) for c in track.cases for s in modelled]))
    return [r for r in rows if r["strategy"] in strategies]


def _tracks(config: MarkinesBench) -> list[Track]:
    from focused.bench.tracks import webkb_track, wiki_track
    from focused.corpora.webkb import default_archive

    tracks = []
    for name in config.tracks:
        if name == "webkb":
            archive = default_archive()
            if not archive.exists():
                raise ValueError(f"WebKB archive not found: {archive} (set FOCUSED_CORPORA)")
            tracks.append(webkb_track(archive, config.out / "cache" / "webkb"))
        else:
            tracks.append(wiki_track(config.out / "cache"))
    return tracks


def run_markines_bench(config: MarkinesBench) -> str:
    """Run every track; return the Markdown table (also written to ``markines.md``)."""
    from focused.strategies.markines import parse_name

    strategies = list(config.strategies)
    for s in config.strategies:
        if s.startswith("markines:"):
            parse_name(s)  # ValueError naming the valid ones
            if config.online:
                strategies.append(s + ONLINE)
    results: dict[str, list[dict[str, Any]]] = {}
    for track in _tracks(config):
        results[track.name] = run_track(config, track, tuple(strategies))
    config.out.mkdir(parents=True, exist_ok=True)
    (config.out / "markines.json").write_text(json.dumps({"budget": config.budget, "runs": results}, indent=1))
    table = report(results, strategies)
    (config.out / "markines.md").write_text(table + "\n")
    return table


def report(results: dict[str, list[dict[str, Any]]], strategies: list[str]) -> str:
    """Mean true harvest (%) per strategy and checkpoint, and cases beating the baseline."""
    lines = []
    for track, rows in results.items():
        base = {r["case"]: r["harvest"] for r in rows if r["strategy"] == "baseline"}
        lines += [f"**{track}** ({len(base)} cases), true harvest %", ""]
        lines += ["| strategy | h@100 | h@250 | cases > baseline @100 | @250 |", "|---|---|---|---|---|"]
        for strategy in strategies:
            srows = [r for r in rows if r["strategy"] == strategy and r["harvest"]]
            if not srows:
                continue
            cells = []
            for k in CHECKPOINTS:
                values = [r["harvest"][k] for r in srows if k in r["harvest"]]
                cells.append(f"{100 * sum(values) / len(values):.1f}" if values else "")
            wins = []
            for k in CHECKPOINTS:
                better = sum(
                    1
                    for r in srows
                    if r["case"] in base
                    and k in r["harvest"]
                    and k in base[r["case"]]
                    and r["harvest"][k] > base[r["case"]][k]
                )
                wins.append(f"{better}/{len(srows)}")
            lines.append(f"| {strategy} | {cells[0]} | {cells[1]} | {wins[0]} | {wins[1]} |")
        lines.append("")
    return "\n".join(lines)
