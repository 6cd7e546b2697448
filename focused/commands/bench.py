"""``focused bench``: real Scrapy crawls of replayed webs, strategies side by side.

Tracks: ``webkb`` (leave-one-university-out page-type targets on the WebKB
dev archive) and ``wiki`` (topics of the Wikispeedia category tree on a
rendered encyclopedia site). Results go to ``results/`` (JSON, Markdown, PNG).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from focused.cli import CommandError

logger = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="run the benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--tracks", default="webkb,wiki", help="comma-separated tracks (default: webkb,wiki)")
    parser.add_argument(
        "--strategies",
        default="bfs,baseline,apprentice,apprentice:classes,apprentice-offline,oracle",
        help="strategies to compare; STRATEGY:first|max|mean sets how parents combine, "
        "apprentice:classes adds the critic-class features (default: %(default)s)",
    )
    parser.add_argument(
        "--parent-study", action="store_true", help="also run baseline:first and baseline:mean (parent aggregation)"
    )
    parser.add_argument("--budget", type=int, default=1000, help="pages per crawl (default: 1000)")
    parser.add_argument("--jobs", type=int, default=2, help="crawls run in parallel (default: 2)")
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="runs per best-first case with random tie-breaks (seeds 0..N-1) to measure noise",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: one university/topic per track, 250 pages, no throughput test",
    )
    parser.add_argument("--no-throughput", action="store_true", help="skip the throughput comparison")
    parser.add_argument(
        "--reuse", action="store_true", help="reuse finished crawls of an earlier run in the same --out folder"
    )
    parser.add_argument("--archive", help="WebKB archive (default: ../shared/corpora/webkb-dev.tar.gz)")
    parser.add_argument("--out", help="results folder (default: results/)")
    parser.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra Scrapy/FOCUSED_* setting for every crawl (repeatable)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from focused.bench.suite import PARENT_STUDY, BenchConfig, default_out, run_bench
    from focused.bench.tracks import WEBKB_TARGETS, WEBKB_UNIVERSITIES, webkb_track, wiki_track
    from focused.corpora.webkb import default_archive

    out = Path(args.out) if args.out else default_out()
    extra = {}
    for item in args.set:
        if "=" not in item:
            raise CommandError(f"--set takes NAME=VALUE, not {item!r}")
        key, value = item.split("=", 1)
        extra[key] = value
    config = BenchConfig(
        out=out,
        strategies=tuple(s for s in args.strategies.split(",") if s) + (PARENT_STUDY if args.parent_study else ()),
        budget=250 if args.quick and args.budget == 1000 else args.budget,
        jobs=max(1, args.jobs),
        repeats=max(1, args.repeats),
        throughput=not (args.quick or args.no_throughput),
        extra_settings=extra,
        reuse=args.reuse,
    )
    cache = out / "cache"
    tracks = []
    for name in [t for t in args.tracks.split(",") if t]:
        if name == "webkb":
            archive = Path(args.archive) if args.archive else default_archive()
            if not archive.exists():
                raise CommandError(f"WebKB archive not found: {archive} (set FOCUSED_CORPORA or --archive)")
            unis = WEBKB_UNIVERSITIES[:1] if args.quick else WEBKB_UNIVERSITIES
            targets = WEBKB_TARGETS[:2] if args.quick else WEBKB_TARGETS
            tracks.append(webkb_track(archive, cache / "webkb", universities=unis, targets=targets))
        elif name == "wiki":
            try:
                track = wiki_track(cache)
            except ModuleNotFoundError as exc:
                raise CommandError(f"the wiki track is not available in this build: {exc}") from exc
            if args.quick:
                track.cases = track.cases[:2]
            tracks.append(track)
        else:
            raise CommandError(f"unknown track {name!r}; valid: webkb, wiki")
    result = run_bench(config, tracks)
    print(f"Results: {out / 'bench.md'}, {out / 'bench.json'}, plots: {', '.join(result.get('plots', []))}")
    return 0
