"""``focused bench-traps``: the share of a page budget crawler traps take, per strategy, with and without
the trap defences, in real crawls of a generated probe (a 400-page on-topic site next to a calendar trap,
session-id URLs and a growing path) served on loopback. Writes ``bench.md`` and ``bench.json`` to ``--out``
(default: results/traps).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from focused.cli import positive_int


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench-traps",
        help="benchmark the crawler-trap defences (share of the budget spent in traps)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, help="results folder (default: results/traps)")
    parser.add_argument("--quick", action="store_true", help="smoke run: a 60-page site, budget 100")
    parser.add_argument("--pages", type=positive_int, help="pages of the on-topic site (default: 400)")
    parser.add_argument("--budget", type=positive_int, help="page budget of each crawl (default: 500)")
    parser.add_argument("--only-defended", action="store_true", help="skip the crawls with the defences switched off")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from focused.bench.runner import PROJECT_ROOT
    from focused.bench.studies.traps import TrapBenchConfig, run_trap_bench

    config = TrapBenchConfig(out=args.out or PROJECT_ROOT / "results" / "traps")
    if args.quick:
        config = config.quick()
    if args.pages:
        config = replace(config, pages=args.pages)
    if args.budget:
        config = replace(config, budget=args.budget)
    if args.only_defended:
        config = replace(config, without_defences=False)
    result = run_trap_bench(config)
    print((config.out / "bench.md").read_text())
    print(f"Results: {config.out / 'bench.md'}, {config.out / 'bench.json'} ({result['seconds']:.0f} s)")
    return 0
