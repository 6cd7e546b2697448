"""``focused demo``: an offline focused crawl of the replayed WebKB web.

It starts the replay proxy on a free loopback port, runs
``scrapy crawl focused`` through it (progress shows in the log), and prints
the harvest and loss the critic measured plus the true harvest from the
archive's hand labels.

It never overwrites an earlier crawl without saying so: by default each run
writes a new ``crawls/demo-TOPIC-STRATEGY[-N].sqlite`` (the first free N); a
``--db`` that exists is refused unless ``--force``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from focused.cli import CommandError, add_set_option, positive_int, setting_items

DEMO_SEED = "http://www.cs.cornell.edu/"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="offline demo crawl of the WebKB replay",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--archive", help="WebKB archive (default: the dev archive in ../shared/corpora)")
    parser.add_argument("--topic", default="course", help="topic (default: course)")
    parser.add_argument(
        "--strategy", default="apprentice", help="apprentice, baseline, bfs or oracle (default: apprentice)"
    )
    parser.add_argument("--seeds", default=DEMO_SEED, help=f"seed URLs, comma-separated (default: {DEMO_SEED})")
    parser.add_argument("--pages", type=positive_int, default=300, help="page budget (default: 300)")
    parser.add_argument("--model", default="models/webkb-pagetype.npz", help="critic model")
    parser.add_argument(
        "--db",
        help="crawl database to write (default: crawls/demo-TOPIC-STRATEGY.sqlite, or -2, -3... when it exists)",
    )
    parser.add_argument(
        "--force", action="store_true", help="overwrite the crawl database when it exists (default: never)"
    )
    add_set_option(
        parser, "a Scrapy/FOCUSED_* setting for the crawl (repeatable), e.g. -s FOCUSED_APPRENTICE_SIBLINGS=0"
    )
    parser.set_defaults(func=run)


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


def choose_db(given: str | None, default: Path, *, force: bool) -> tuple[Path, str]:
    """The crawl database this demo writes and what to say about it (empty: nothing to say).

    An earlier crawl is never overwritten silently: a given ``--db`` that exists is refused
    (:class:`CommandError`) unless ``force``; the default name moves on to ``-2``, ``-3``... when taken.
    """
    path = Path(given) if given else default
    if not path.exists():
        return path, ""
    if force:
        return path, f"Overwriting {path} (--force)"
    if given:
        raise CommandError(f"--db {path} exists (an earlier crawl): give another --db, or --force to overwrite it")
    n = 2
    while (taken := path.with_name(f"{path.stem}-{n}{path.suffix}")).exists():
        n += 1
    return taken, f"{path} exists (an earlier crawl, kept): this crawl writes {taken}"


def run(args: argparse.Namespace) -> int:
    from focused.bench.metrics import crawl_curve
    from focused.bench.runner import PROJECT_ROOT, CrawlSpec, run_crawl
    from focused.corpora.webkb import default_archive
    from focused.learning.critic.load import load_critic
    from focused.replay.files import StoreError
    from focused.replay.labels import write_labels
    from focused.replay.load import open_store
    from focused.replay.server import ReplayServer
    from focused.strategies import STRATEGIES

    if args.strategy not in STRATEGIES:
        raise CommandError(f"--strategy {args.strategy}: unknown strategy; valid: {', '.join(STRATEGIES)}")
    archive = Path(args.archive) if args.archive else default_archive()
    model = Path(args.model) if Path(args.model).is_absolute() else PROJECT_ROOT / args.model
    try:
        critic = load_critic(model)  # fails early with a "how to rebuild" message
        topic = critic.resolve_topic(args.topic)
    except ValueError as exc:  # ModelError, UnknownTopicError
        raise CommandError(str(exc)) from exc
    spider_args = {"topic": args.topic, "strategy": args.strategy, "seeds": args.seeds, "model": str(model)}
    extra = demo_settings(args.set, spider_args)
    default_db = PROJECT_ROOT / "crawls" / f"demo-{args.topic}-{args.strategy}.sqlite"
    db, said = choose_db(args.db, default_db, force=args.force)
    if said:
        print(said)
    print(f"Loading the replay store from {archive} ...")
    try:
        store = open_store(archive)
    except StoreError as exc:
        raise CommandError(str(exc)) from exc
    with tempfile.TemporaryDirectory() as tmp, ReplayServer(store) as server:
        labels = Path(tmp) / "labels.tsv"
        write_labels(labels, ((url, store.labels[url], store.groups.get(url)) for url in store.labels))
        print(
            f"Replaying {len(store)} pages on {server.proxy_url}; crawling topic {topic.name!r} "
            f"with strategy {args.strategy!r} for {args.pages} pages ..."
        )
        spec = CrawlSpec(
            name="demo",
            topic=args.topic,
            strategy=args.strategy,
            seeds=tuple(args.seeds.split(",")),
            model=model,
            proxy=server.proxy_url,
            db=db,
            max_pages=args.pages,
            labels=labels,
            settings={"FOCUSED_LOG_EVERY": 50, **extra},
        )
        result = run_crawl(spec, stream=True)
        if result.returncode != 0:
            raise CommandError(f"the crawl failed (exit {result.returncode}); see {result.log}")
        curve = crawl_curve(db, store.labels, topic)
    n = len(curve.true_relevant)
    if not n:
        raise CommandError(f"the crawl fetched no page; see {result.log}")
    # the terms of the crawl's own closing summary (focused.extensions.summary), which the log above ends with
    from focused.extensions.summary import seconds_text, shown

    judged = curve.critic_harvest_at(n)
    print(f"\nDemo summary ({args.strategy}, topic {topic.name!r}):")
    print(f"  {'pages stored:':<16} {n} in {seconds_text(result.seconds)} (with the crawl's start-up)")
    print(f"  {'harvest:':<16} {judged:.3f} (the critic's mean Pr(topic|page); loss {1 - judged:.3f})")
    print(
        f"  {'true harvest:':<16} {curve.true_harvest_at(n):.3f} "
        f"({sum(curve.true_relevant)} of {n} pages are labelled {topic.name!r} in the WebKB archive)"
    )
    print(f"  {'crawl database:':<16} {shown(db)}")
    print(f"  {'report:':<16} focused report {shown(db)} -o {shown(db.with_suffix('.html'))}")
    return 0
