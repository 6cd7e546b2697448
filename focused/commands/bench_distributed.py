"""``focused bench-distributed``: crawler workers sharing one Redis frontier, measured on the Wikipedia replay.

Pages/s with 1 and 2 workers (same total page budget) and Redis round trips
per page, re-scoring 100,000 waiting requests in Redis, a worker killed
with SIGKILL mid-crawl (URLs re-queued, re-fetched, lost), and the saturation
of one Redis: 1, 2, 4, 8 simulated workers driving only the frontier protocol.
Starts its own ``redis-server`` on a free loopback port. Writes ``bench.md``
and ``bench.json`` to ``--out`` (default: results/distributed), and the
saturation table to ``saturation.md`` and ``saturation.json`` there
(``--saturation-only`` runs just that).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from focused.cli import positive_int


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench-distributed",
        help="benchmark workers on one Redis frontier (1 vs 2 workers, re-scoring, kill -9)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, help="results folder (default: results/distributed)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 300 pages, 1 round, 20,000 URLs")
    parser.add_argument("--rounds", type=positive_int, help="throughput rounds (default: 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic frontier")
    parser.add_argument(
        "--saturation-only", action="store_true", help="only the saturation of one Redis (simulated workers)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from focused.bench.runner import PROJECT_ROOT
    from focused.bench.studies.distributed import DistributedBenchConfig, run_distributed_bench

    config = DistributedBenchConfig(out=args.out or PROJECT_ROOT / "results" / "distributed", seed=args.seed)
    if args.quick:
        config = config.quick()
    if args.rounds:
        config = replace(config, rounds=args.rounds)
    if args.saturation_only:
        from focused.bench.studies.distributed import run_saturation

        path = run_saturation(config)
        print(path.read_text())
        print(f"Results: {path}, {path.with_suffix('.json')}")
        return 0
    result = run_distributed_bench(config)
    print((config.out / "bench.md").read_text())
    print(f"Results: {config.out / 'bench.md'}, {config.out / 'bench.json'} ({result['seconds']:.0f} s)")
    return 0
