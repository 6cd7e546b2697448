"""``focused bench-speed``: the focused crawler against plain Scrapy on the rendered Wikipedia replay.

Throughput of ``plain``, ``baseline``, the default pipeline and the default without its
page-analysis worker (alternating crawls, medians, ratios to plain), the CPU of each pipeline stage per page,
bytes per waiting URL and peak RSS with 100,000 waiting URLs, and a crawl of a
200,000-link page. Writes ``bench.md`` and ``bench.json`` to ``--out``
(default: results/speed). Figures are reported, never asserted.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from focused.cli import positive_int


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench-speed",
        help="benchmark pages/s and CPU per page against plain Scrapy, per-stage costs, memory",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, help="results folder (default: results/speed)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 500-response crawls, 2 rounds")
    parser.add_argument("--rounds", type=positive_int, help="alternating rounds of the four crawlers (default: 3)")
    parser.add_argument("--responses", type=positive_int, help="responses per crawl (default: 3000)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from focused.bench.runner import PROJECT_ROOT
    from focused.bench.studies.throughput import SpeedBenchConfig, run_speed_bench

    config = SpeedBenchConfig(out=args.out or PROJECT_ROOT / "results" / "speed")
    if args.quick:
        config = config.quick()
    if args.rounds:
        config = replace(config, rounds=args.rounds)
    if args.responses:
        config = replace(config, responses=args.responses)
    result = run_speed_bench(config)
    print((config.out / "bench.md").read_text())
    print(f"Results: {config.out / 'bench.md'}, {config.out / 'bench.json'} ({result['seconds']:.0f} s)")
    return 0
