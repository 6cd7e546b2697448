"""Mean true harvest of each strategy every 50 pages, merged from several ``bench.json`` files.

``python3 -m focused.bench.curves RUN.json[,RUN2.json...] [--steps 50,100,...] [--reference REF.json]``

A strategy is taken from the first file that has it, so later files fill in what earlier runs
did not crawl (e.g. ``apprentice:prior`` from an earlier run of the same cases). Harvest@k is
``1 − cumulative_loss[k−1]/k`` of each run, averaged over a track's cases; "vs prior" subtracts
``apprentice:prior``'s. With ``--reference`` (a run holding ``baseline``, ``oracle`` and
``oracle-lookahead`` of the same cases), G on the mean harvests at 100 and 250 pages is printed too,
against the better oracle of each case.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["gap_closure", "harvest_at", "mean_harvests"]

BOUNDS = ("baseline", "oracle", "oracle-lookahead", "bfs")


def harvest_at(run: dict[str, Any], k: int) -> float | None:
    """True harvest (%) of one run's first ``k`` pages, ``None`` if it fetched fewer."""
    loss = run["cumulative_loss"]
    loss = json.loads(loss) if isinstance(loss, str) else loss
    return 100.0 * (1.0 - loss[k - 1] / k) if len(loss) >= k else None


def mean_harvests(files: Sequence[Path], steps: Sequence[int]) -> dict[tuple[str, str], dict[int, list[float]]]:
    """(track, strategy) -> step -> the harvests of its cases, each strategy from the first file that has it."""
    out: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    taken: set[tuple[str, str]] = set()
    for path in files:
        runs = json.loads(Path(path).read_text())["runs"]
        new = {(r["track"], r["strategy"]) for r in runs} - taken
        for run in runs:
            key = (run["track"], run["strategy"])
            if key in new:
                for k in steps:
                    h = harvest_at(run, k)
                    if h is not None:
                        out[key][k].append(h)
        taken |= new
    return out


def gap_closure(reference: Path, track: str, k: int) -> tuple[float, float]:
    """The mean baseline harvest and mean best-oracle harvest at ``k`` pages of a track's cases."""
    cases: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    for run in json.loads(Path(reference).read_text())["runs"]:
        if run["track"] == track and run["strategy"] in BOUNDS:
            cases[(run["group"], run["topic"])][run["strategy"]] = run
    base, best = [], []
    for case in cases.values():
        if {"baseline", "oracle", "oracle-lookahead"} <= set(case):
            base.append(harvest_at(case["baseline"], k) or 0.0)
            best.append(max(harvest_at(case["oracle"], k) or 0.0, harvest_at(case["oracle-lookahead"], k) or 0.0))
    if not base:
        raise ValueError(f"{reference} has no baseline and oracles for the {track} track")
    return sum(base) / len(base), sum(best) / len(best)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def report(files: Sequence[Path], steps: Sequence[int], reference: Path | None) -> str:
    table = mean_harvests(files, steps)
    lines: list[str] = []
    for track in sorted({t for t, _ in table}):
        prior = table.get((track, "apprentice:prior"), {})
        lines.append(f"{track}: mean true harvest % at " + "/".join(map(str, steps)))
        for (t, strategy), by_step in sorted(table.items()):
            if t != track or strategy in BOUNDS:
                continue
            row = " ".join(f"{_mean(by_step[k]):5.1f}" if by_step.get(k) else "    -" for k in steps)
            diff = " ".join(
                f"{_mean(by_step[k]) - _mean(prior[k]):+5.1f}" if by_step.get(k) and prior.get(k) else "    -"
                for k in steps
            )
            n = max((len(v) for v in by_step.values()), default=0)
            lines.append(f"  {strategy:40s} {row}   vs prior: {diff}   (n={n})")
        if reference is not None:
            bounds = {k: gap_closure(reference, track, k) for k in (100, 250)}
            lines.append(f"  G on the mean harvests (baseline / best oracle from {reference}):")
            for (t, strategy), by_step in sorted(table.items()):
                if t != track or strategy in BOUNDS or not all(by_step.get(k) for k in bounds):
                    continue
                g = [(_mean(by_step[k]) - b) / (o - b) for k, (b, o) in bounds.items()]
                lines.append(f"  {strategy:40s} G@100 {g[0]:+.2f}  G@250 {g[1]:+.2f}")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m focused.bench.curves", description=__doc__.splitlines()[0])
    parser.add_argument("files", help="bench.json files, comma-separated; earlier files win")
    parser.add_argument("--steps", default="50,100,150,200,250", help="page counts, comma-separated")
    parser.add_argument("--reference", type=Path, help="a bench.json with baseline and both oracles of the cases")
    args = parser.parse_args(argv)
    files = [Path(f) for f in args.files.split(",") if f]
    try:
        steps = [int(s) for s in args.steps.split(",")]
        if any(k < 1 for k in steps):
            raise ValueError
    except ValueError:
        parser.exit(1, f"error: --steps must be positive page counts, got {args.steps!r}\n")
    missing = [f for f in [*files, *([args.reference] if args.reference else [])] if not f.is_file()]
    if missing:
        parser.exit(1, f"error: no such bench.json: {missing[0]}\n")
    try:
        print(report(files, steps, args.reference))
    except (ValueError, KeyError, json.JSONDecodeError) as exc:
        parser.exit(1, f"error: not a bench.json of this project ({exc})\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
