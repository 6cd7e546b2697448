"""``focused bench``: real Scrapy crawls of replayed webs, strategies side by side.

Tracks: ``webkb`` (leave-one-university-out page-type targets on the WebKB
dev archive, each crawl confined to its held-out university) and ``wiki``
(topics of the Wikispeedia category tree on a rendered encyclopedia site,
cross-fitted critic). ``--archive`` (a WARC, a folder of WARCs or a
WebKB-layout archive) with ``--labels``, ``--hold-out`` and ``--topics`` runs
the held-out-group track on your own labelled crawl; ``--tracks wiki --archive
X --labels L`` (labels url<TAB>categories[<TAB>group]) runs the wiki track's
protocol on it (cross-fitted critic, topics from the category paths, the
topic's most in-linked pages as seeds), as does the held-out-group track when
the labels have no group column. ``--tracks examples`` (``examples:webkb``,
``examples:wiki``) crawls each held-out case with critics trained from k example
pages (``--examples-k``, ``--examples-samples``) beside its taxonomy critic.
Results go to ``results/`` (JSON, Markdown, PNG).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from focused.cli import add_set_option, setting_items

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
        default="bfs,baseline,apprentice:prior,apprentice,apprentice:warm,oracle,oracle-lookahead",
        help="strategies to compare: any registered strategy; STRATEGY:first|max|mean sets how parents combine, "
        "apprentice:prior never switches the learner in, apprentice:warm starts from an apprentice trained on "
        "other crawls (default: %(default)s)",
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
        "--critic-urls",
        choices=("on", "off"),
        default="on",
        help="whether the tracks' critics read each page's URL words beside its text (default: on)",
    )
    parser.add_argument(
        "--critic-head",
        choices=("on", "off"),
        default="on",
        help="whether the tracks' critics judge pages with a discriminative verdict head (default: on)",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="reuse finished crawls of an earlier run in the same --out folder asked the same "
        "(strategy, settings, seeds, critic)",
    )
    parser.add_argument(
        "--archive",
        help="the web of the held-out-group track (and of the wiki track's protocol with --tracks wiki): a WARC "
        "file, a folder of WARCs or a WebKB-layout archive (default: ../shared/corpora/webkb-dev.tar.gz for "
        "webkb, the rendered Wikispeedia for wiki); the track is named after the file",
    )
    parser.add_argument(
        "--labels",
        help="labels TSV url<TAB>label[<TAB>group] for --archive (replaces the archive's own labels); for the "
        "wiki protocol the labels are category paths (Science.Physics) joined by '|'",
    )
    parser.add_argument(
        "--hold-out",
        help="comma-separated groups of --archive to hold out, one at a time (default: cornell,texas,washington)",
    )
    parser.add_argument(
        "--topics",
        help="comma-separated topics of the critic for every selected track "
        "(default: course,student,faculty,project on WebKB, the 8 bench topics on wiki)",
    )
    parser.add_argument(
        "--examples-k",
        default="5,20,100",
        help="the examples track: examples per critic, comma-separated (default: %(default)s)",
    )
    parser.add_argument(
        "--examples-samples", type=int, default=3, help="the examples track: seeded samples of each k (default: 3)"
    )
    parser.add_argument("--out", help="results folder (default: results/)")
    add_set_option(parser, "extra Scrapy/FOCUSED_* setting for every crawl (repeatable)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from focused.bench.tracks import TrackError

    try:
        return _run(args)
    except (TrackError, ValueError) as exc:  # bad input: one line, exit 1
        print(f"focused bench: error: {exc}", file=sys.stderr)
        return 1


def _csv(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    if not items:
        raise ValueError(f"empty list {value!r}")
    return items


def check_strategies(names: tuple[str, ...]) -> None:
    """Every name must be a registered strategy, or one with known ``:variant``s (``ValueError`` otherwise)."""
    from focused.bench.suite import EXPLORE_VARIANTS, VARIANTS, split_strategy
    from focused.strategies import STRATEGIES

    if not names:
        raise ValueError("no strategy given (--strategies)")
    variants = ", ".join([*VARIANTS, *(f"{name}N" for name in EXPLORE_VARIANTS)])
    for name in names:
        split_strategy(name)  # an unknown variant of a bench strategy raises
        if name not in STRATEGIES and name.partition(":")[0] not in STRATEGIES:
            raise ValueError(
                f"unknown strategy {name!r}; valid: {', '.join(STRATEGIES)}, each optionally with "
                f":VARIANT[+VARIANT] ({variants})"
            )


def _run(args: argparse.Namespace) -> int:
    from focused.bench.crossfit import crossfit_track, labelled_track
    from focused.bench.suite import PARENT_STUDY, BenchConfig, default_out, run_bench
    from focused.bench.tracks import WEBKB_TARGETS, WEBKB_UNIVERSITIES, wiki_track
    from focused.corpora.webkb import default_archive

    out = Path(args.out) if args.out else default_out()
    extra = setting_items(args.set)
    strategies = tuple(s for s in args.strategies.split(",") if s) + (PARENT_STUDY if args.parent_study else ())
    check_strategies(strategies)
    for flag, value in (("--budget", args.budget), ("--jobs", args.jobs), ("--repeats", args.repeats)):
        if value < 1:
            raise ValueError(f"{flag} must be a whole number >= 1, not {value}")
    config = BenchConfig(
        out=out,
        strategies=strategies,
        budget=250 if args.quick and args.budget == 1000 else args.budget,
        jobs=args.jobs,
        repeats=args.repeats,
        throughput=not (args.quick or args.no_throughput),
        extra_settings=extra,
        reuse=args.reuse,
    )
    hold_out, topics = _csv(args.hold_out), _csv(args.topics)
    labels = Path(args.labels) if args.labels else None
    if labels is not None and not labels.is_file():
        raise ValueError(f"labels file not found: {labels}")
    cache = out / "cache"
    tracks = []
    names = _csv(args.tracks) or ()
    if args.hold_out and not {"webkb", "examples", "examples:webkb"} & set(names):
        raise ValueError("--hold-out names groups of the held-out-group track: add --tracks webkb")
    if labels is not None and not args.archive and not {"webkb", "examples", "examples:webkb"} & set(names):
        raise ValueError("--labels relabels --archive: give --archive X.warc.gz for the wiki track's protocol")
    for name in names:
        if name == "webkb":
            archive = Path(args.archive) if args.archive else default_archive()
            if not archive.exists():
                raise ValueError(f"archive not found: {archive} (set FOCUSED_CORPORA or --archive)")
            groups, targets = hold_out, topics
            if args.quick and args.archive:  # your archive: its groups and topics, or its own defaults
                groups, targets = groups and groups[:1], targets and targets[:2]
            elif args.quick:
                groups, targets = (groups or WEBKB_UNIVERSITIES)[:1], (targets or WEBKB_TARGETS)[:2]
            track_name = archive.name.split(".")[0] if args.archive else "webkb"
            track_cache = cache / track_name
            tracks.append(
                labelled_track(
                    track_name,
                    archive,
                    track_cache,
                    labels=labels,
                    hold_out=groups,
                    topics=targets,
                    critic_urls=args.critic_urls == "on",
                    critic_head=args.critic_head == "on",
                )
            )
        elif name == "wiki" and args.archive:
            archive = Path(args.archive)
            if not archive.exists():
                raise ValueError(f"archive not found: {archive}")
            track_name = archive.name.split(".")[0] + ("-crossfit" if "webkb" in names else "")
            track = crossfit_track(
                track_name,
                archive,
                cache / track_name,
                labels=labels,
                topics=topics,
                critic_urls=args.critic_urls == "on",
                critic_head=args.critic_head == "on",
            )
            if args.quick:
                track.cases = track.cases[:2]
            tracks.append(track)
        elif name == "wiki":
            try:
                track = wiki_track(
                    cache, topics=topics, critic_urls=args.critic_urls == "on", critic_head=args.critic_head == "on"
                )
            except ModuleNotFoundError as exc:
                raise ValueError(f"the wiki track is not available in this build: {exc}") from exc
            if args.quick:
                track.cases = track.cases[:2]
            tracks.append(track)
        elif name in ("examples", "examples:webkb", "examples:wiki"):
            tracks.extend(_examples_tracks(args, name, cache, labels, hold_out, topics, strategies))
        else:
            raise ValueError(f"unknown track {name!r}; valid: webkb, wiki, examples, examples:webkb, examples:wiki")
    result = run_bench(config, tracks)
    print(f"Results: {out / 'bench.md'}, {out / 'bench.json'}, plots: {', '.join(result.get('plots', []))}")
    return 0


def _examples_tracks(
    args: argparse.Namespace,
    name: str,
    cache: Path,
    labels: Path | None,
    hold_out: tuple[str, ...] | None,
    topics: tuple[str, ...] | None,
    strategies: tuple[str, ...],
) -> list:
    """The examples track over the held-out-group track of ``--archive`` (or WebKB) and/or the wiki track."""
    from focused.bench.crossfit import labelled_track
    from focused.bench.examples import examples_track
    from focused.bench.summary import ORACLES
    from focused.bench.tracks import wiki_track
    from focused.corpora.webkb import default_archive
    from focused.settings import defaults

    try:
        ks = tuple(int(k) for k in _csv(args.examples_k) or ())
    except ValueError:
        ks = ()
    if not ks or min(ks) < 2 or args.examples_samples < 1:
        raise ValueError("--examples-k takes whole numbers >= 2, --examples-samples one >= 1")
    critic = {"critic_urls": args.critic_urls == "on", "critic_head": args.critic_head == "on"}
    # the background of the examples critics, as the crawl's -a examples= reads it (-s FOCUSED_EXAMPLES_...)
    extra = setting_items(args.set)
    sources = str(extra.get("FOCUSED_EXAMPLES_BACKGROUND", defaults.FOCUSED_EXAMPLES_BACKGROUND))
    background = [s.strip() for s in sources.split(",") if s.strip()]
    bases = []
    if name in ("examples", "examples:webkb"):
        archive = Path(args.archive) if args.archive else default_archive()
        if not archive.exists():
            raise ValueError(f"archive not found: {archive} (set FOCUSED_CORPORA or --archive)")
        base_name = archive.name.split(".")[0] if args.archive else "webkb"
        bases.append(
            labelled_track(
                base_name, archive, cache / base_name, labels=labels, hold_out=hold_out, topics=topics, **critic
            )
        )
    if name == "examples:wiki" or (name == "examples" and not args.archive):
        bases.append(wiki_track(cache, topics=topics, **critic))
    learners = [s for s in strategies if s not in ("bfs", "baseline", *ORACLES)]
    strategy = defaults.FOCUSED_STRATEGY if defaults.FOCUSED_STRATEGY in strategies or not learners else learners[0]
    oracles = tuple(s for s in strategies if s in ORACLES) or ORACLES
    out = []
    for base in bases:
        if args.quick:
            base.cases = base.cases[:1]
        track = examples_track(
            base,
            cache / f"examples-{base.name}",
            strategy=strategy,
            ks=ks,
            samples=args.examples_samples,
            background=background,
            max_background=int(extra.get("FOCUSED_EXAMPLES_MAX_BACKGROUND", defaults.FOCUSED_EXAMPLES_MAX_BACKGROUND)),
        )
        track.strategies = ("baseline", *oracles)
        out.append(track)
    return out
