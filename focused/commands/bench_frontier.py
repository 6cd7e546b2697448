"""``focused bench-frontier``: the frontier stores measured in real crawls of the Wikipedia replay.

Throughput with the memory and the SQLite store (same run, alternating),
re-scoring 100,000 waiting URLs on each, and a crawl killed with SIGKILL at
random points and resumed, against an uninterrupted one. Writes
``bench.md`` and ``bench.json`` to ``--out`` (default: results/frontier).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from focused.cli import positive_int


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench-frontier",
        help="benchmark the frontier stores (throughput, re-scoring, kill -9 and resume)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, help="results folder (default: results/frontier)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 300-page crawls, 2 rounds, 20,000 URLs")
    parser.add_argument("--rounds", type=positive_int, help="throughput rounds per store (default: 3)")
    parser.add_argument("--kills", type=positive_int, help="SIGKILLs of the killed crawl (default: 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill points and the synthetic frontier")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from focused.bench.runner import PROJECT_ROOT
    from focused.bench.studies.frontier_store import FrontierBenchConfig, run_frontier_bench

    config = FrontierBenchConfig(out=args.out or PROJECT_ROOT / "results" / "frontier", seed=args.seed)
    if args.quick:
        config = config.quick()
    if args.rounds:
        config = replace(config, rounds=args.rounds)
    if args.kills:
        config = replace(config, kills=args.kills)
    result = run_frontier_bench(config)
    print((config.out / "bench.md").read_text())
    print(f"Results: {config.out / 'bench.md'}, {config.out / 'bench.json'} ({result['seconds']:.0f} s)")
    return 0
