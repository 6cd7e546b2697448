"""``focused demo``: the learning crawler beside the baseline, offline, on a university its critic never saw.

It replays the WebKB web confined to one university (cornell unless
``--university``) exactly as the benchmark's held-out-university track does:
the critic is trained on the other universities (built at the first run and
cached in ``results/cache/webkb/``, shared with ``focused bench``) and the
replay answers 404 for every page outside the held-out university. It then
crawls it with ``--strategy`` (the default crawler) and with each ``--compare``
strategy (the baseline and breadth-first), one after the other, and ends with
one table: pages, on-topic pages by the archive's hand labels, true harvest and
the critic's harvest, plus each crawl database and the ``focused report``
command for the first.

It never overwrites an earlier crawl without saying so: by default each run
writes new ``crawls/demo-TOPIC-STRATEGY[-N].sqlite`` files (the first N free for
every crawl of the run); a ``--db`` that exists is refused unless ``--force``.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from focused.cli import CommandError, add_set_option, positive_int, setting_items

#: The demo's case: of the bench's 12 WebKB cases (page type x held-out university), the one whose gain of the
#: default over the baseline is nearest the median gain (docs/results.md, "The demo's case").
DEMO_UNIVERSITY = "cornell"
DEMO_TOPIC = "student"
DEMO_PAGES = 250
DEMO_STRATEGY = "apprentice"
DEMO_COMPARE = ("baseline", "bfs")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="offline demo: the default crawler beside the baseline on a held-out WebKB university",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--archive", help="WebKB archive (default: the dev archive in ../shared/corpora)")
    parser.add_argument(
        "--university",
        default=DEMO_UNIVERSITY,
        help=f"the held-out university the demo crawls (default: {DEMO_UNIVERSITY}; texas, washington)",
    )
    parser.add_argument("--topic", default=DEMO_TOPIC, help=f"topic (default: {DEMO_TOPIC})")
    parser.add_argument(
        "--strategy",
        default=DEMO_STRATEGY,
        help=f"the strategy the demo shows, crawled first (default: {DEMO_STRATEGY}, the default crawler)",
    )
    parser.add_argument(
        "--compare",
        default=",".join(DEMO_COMPARE),
        help="comma-separated strategies crawled after it, for comparison (--strategy itself is left out), "
        "or 'none' for the single crawl (default: %(default)s)",
    )
    parser.add_argument(
        "--seeds", help="seed URLs, comma-separated (default: the university's department page, as in the bench)"
    )
    parser.add_argument(
        "--pages", type=positive_int, default=DEMO_PAGES, help=f"pages per crawl (default: {DEMO_PAGES})"
    )
    parser.add_argument(
        "--model",
        help="critic model (default: one trained without the university, built at the first run and cached)",
    )
    parser.add_argument(
        "--db",
        help="crawl database of the first crawl; each comparison writes FILE's name + -STRATEGY beside it "
        "(default: crawls/demo-TOPIC-STRATEGY.sqlite, or -2, -3... when one exists)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite crawl databases that exist (default: never)")
    add_set_option(
        parser, "a Scrapy/FOCUSED_* setting for every crawl (repeatable), e.g. -s FOCUSED_APPRENTICE_SIBLINGS=0"
    )
    parser.set_defaults(func=run)


def demo_strategies(strategy: str, compare: str) -> list[str]:
    """The strategies the demo crawls, in order: ``strategy``, then each of ``compare`` (``"none"``: no other)
    that is not ``strategy`` itself. An unknown name is a one-line :class:`CommandError`."""
    from focused.strategies import STRATEGIES

    names = [strategy]
    if compare.strip() != "none":
        others = [name.strip() for name in compare.split(",") if name.strip()]
        if not others:
            raise CommandError(f"--compare {compare!r}: give strategies, comma-separated, or 'none'")
        names += [name for name in dict.fromkeys(others) if name != strategy]
    for flag, name in [("--strategy", strategy), *(("--compare", n) for n in names[1:])]:
        if name not in STRATEGIES:
            extra = ", or 'none'" if flag == "--compare" else ""
            raise CommandError(f"{flag} {name}: unknown strategy; valid: {', '.join(STRATEGIES)}{extra}")
    return names


def demo_settings(items: list[str], spider_args: dict[str, str]) -> dict[str, str]:
    """The ``--set NAME=VALUE`` items, checked as the crawl will check them with its ``-a`` arguments
    ``spider_args`` (one-line :class:`CommandError`)."""
    from scrapy.settings import Settings

    from focused.errors import ConfigError
    from focused.settings.validation import validate

    extra = setting_items(items)
    if not extra:
        return extra
    settings = Settings()
    settings.setmodule("focused.settings", priority="project")
    settings.update(extra, priority="cmdline")
    try:
        validate(settings, spider_args)
    except ConfigError as exc:
        raise CommandError(f"--set {exc}") from None
    return extra


def choose_dbs(
    given: str | None, folder: Path, topic: str, strategies: Sequence[str], *, force: bool
) -> tuple[list[Path], str]:
    """The crawl databases this demo writes, one per strategy, and what to say about them (empty: nothing to say).

    An earlier crawl is never overwritten silently. ``given`` (``--db FILE``) names the first crawl's database,
    and each comparison's is ``FILE``'s name + ``-STRATEGY`` beside it; one of them that exists is refused
    (:class:`CommandError`) unless ``force``. Without ``given`` they are ``folder/demo-TOPIC-STRATEGY.sqlite``;
    when one is taken, every name moves on to the first ``-N`` (2, 3...) free for all of them.
    """
    if given:
        first = Path(given)
        paths = [first] + [first.with_name(f"{first.stem}-{s}{first.suffix}") for s in strategies[1:]]
    else:
        paths = [folder / f"demo-{topic}-{s}.sqlite" for s in strategies]
    taken = [p for p in paths if p.exists()]
    if not taken:
        return paths, ""
    if force:
        return paths, f"Overwriting {', '.join(map(str, taken))} (--force)"
    if given:
        raise CommandError(f"--db {taken[0]} exists (an earlier crawl): give another --db, or --force to overwrite it")
    n = 2
    while any(p.with_name(f"{p.stem}-{n}{p.suffix}").exists() for p in paths):
        n += 1
    moved = [p.with_name(f"{p.stem}-{n}{p.suffix}") for p in paths]
    return moved, f"{taken[0]} exists (an earlier crawl, kept): this demo writes {', '.join(map(str, moved))}"


@dataclass(frozen=True)
class Row:
    """One crawl's line of the demo's table."""

    strategy: str
    pages: int
    on_topic: int
    critic_harvest: float
    db: Path

    @property
    def true_harvest(self) -> float:
        return self.on_topic / self.pages if self.pages else 0.0


def table(rows: Sequence[Row]) -> list[str]:
    """The demo's table, one line per crawl (harvests in percent)."""
    head = ("strategy", "pages", "on topic", "true harvest", "critic's harvest")
    cells = [
        (r.strategy, str(r.pages), str(r.on_topic), f"{100 * r.true_harvest:.1f} %", f"{100 * r.critic_harvest:.1f} %")
        for r in rows
    ]
    widths = [max(len(line[i]) for line in (head, *cells)) for i in range(len(head))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths, strict=True))
        )

    return [line(head), *(line(c) for c in cells)]


def run(args: argparse.Namespace) -> int:
    from focused.bench.metrics import crawl_curve
    from focused.bench.runner import PROJECT_ROOT, CrawlSpec, run_crawl
    from focused.bench.tracks import TrackError, holdout_track
    from focused.corpora.webkb import default_archive
    from focused.extensions.summary import seconds_text, shown
    from focused.learning.critic.load import load_critic
    from focused.replay.server import ReplayServer

    strategies = demo_strategies(args.strategy, args.compare)
    if not getattr(args, "verbose", False):  # the demo says what it does; the modules' INFO lines go with -v
        for name in ("focused.bench", "focused.replay"):
            logging.getLogger(name).setLevel(logging.WARNING)
    setting_items(args.set)  # a malformed item fails before anything slow
    dbs, said = choose_dbs(args.db, PROJECT_ROOT / "crawls", args.topic, strategies, force=args.force)
    if said:
        print(said)
    archive = Path(args.archive) if args.archive else default_archive()
    if not archive.exists():
        raise CommandError(f"archive not found: {archive} (set FOCUSED_CORPORA or --archive)")
    # the bench's track, named and cached as `focused bench` names and caches it, with its default critics
    # (URL words and a verdict head): the demo's critic is the bench's critic for this university
    name = archive.name.split(".")[0] if args.archive else "webkb"
    cache = PROJECT_ROOT / "results" / "cache" / name
    print(
        f"Loading the replay of {archive.name} and the critic trained without {args.university} "
        f"(the first run trains it, in about 15 s, and caches it in {shown(cache)}) ..."
    )
    try:
        track = holdout_track(
            name, archive, cache, hold_out=[args.university], topics=[args.topic], critic_urls=True, critic_head=True
        )
    except TrackError as exc:
        raise CommandError(str(exc)) from None
    case = track.cases[0]
    model = case.model
    if args.model:
        model = Path(args.model) if Path(args.model).is_absolute() else PROJECT_ROOT / args.model
    seeds = tuple(s for s in args.seeds.split(",") if s) if args.seeds else case.seeds
    try:
        critic = load_critic(model)  # a bad --model fails here with a "how to rebuild" message
        topic = critic.resolve_topic(args.topic)
    except ValueError as exc:  # ModelError, UnknownTopicError
        raise CommandError(str(exc)) from None
    extra: dict[str, str] = {}
    for strategy in strategies:
        extra = demo_settings(
            args.set, {"topic": args.topic, "strategy": strategy, "seeds": ",".join(seeds), "model": str(model)}
        )
    trained_on = critic.metadata.get("groups")
    critic_text = f"trained on {', '.join(trained_on)}" if isinstance(trained_on, list) else f"from {shown(model)}"
    print(
        f"The web is {args.university} alone (every other page answers 404); the critic was {critic_text}. "
        f"Topic {topic.name!r}, {args.pages} pages a crawl, from {', '.join(seeds)}."
    )
    rows: list[Row] = []
    with ReplayServer(track.store.confined(case.confine or frozenset([args.university]))) as server:
        for i, (strategy, db) in enumerate(zip(strategies, dbs, strict=True), 1):
            print(f"[{i}/{len(strategies)}] crawling with {strategy} ...", end=" ", flush=True)
            settings: dict[str, object] = {"FOCUSED_LOG_EVERY": 50, **extra}
            if strategy == "oracle-lookahead" and case.graph is not None:  # as the bench runs it
                settings["FOCUSED_ORACLE_GRAPH"] = str(case.graph)
            spec = CrawlSpec(
                name=f"demo-{strategy}",
                topic=args.topic,
                strategy=strategy,
                seeds=seeds,
                model=model,
                proxy=server.proxy_url,
                db=db,
                max_pages=args.pages,
                labels=case.labels,
                settings=settings,
            )
            result = run_crawl(spec)
            if result.returncode != 0:
                print()
                raise CommandError(f"the {strategy} crawl failed (exit {result.returncode}); see {shown(result.log)}")
            curve = crawl_curve(db, track.store.labels, topic)
            n = len(curve.urls)
            if not n:
                print()
                raise CommandError(f"the {strategy} crawl fetched no page; see {shown(result.log)}")
            rows.append(Row(strategy, n, sum(curve.true_relevant), curve.critic_harvest_at(n), db))
            print(f"{n} pages in {seconds_text(result.seconds)} (log: {shown(result.log)})")
    print()
    print("\n".join(table(rows)))
    print()
    width = max(len(r.strategy) for r in rows)
    print("Crawl databases:")
    for r in rows:
        print(f"  {r.strategy:<{width}}  {shown(r.db)}")
    first = rows[0].db
    print(
        f"Report of the {rows[0].strategy} crawl: focused report {shown(first)} -o {shown(first.with_suffix('.html'))}"
    )
    return 0
