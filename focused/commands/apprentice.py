"""Apprentice commands: ``train-apprentice`` (off-line, from crawl databases) and ``bench-features``."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from focused.cli import CommandError

if TYPE_CHECKING:
    from focused.learning.critic.snippet import SnippetCritic

logger = logging.getLogger(__name__)

#: Spelled out (not imported) so that building the parser does not import scikit-learn.
DEFAULT_D_MAX = 5
BINNINGS = ("fixed", "equal-prob")
#: WebKB universities that can be held out (``misc`` always trains).
HELD_OUT = ("cornell", "texas", "washington")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the apprentice commands to the ``focused`` command line."""
    train = subparsers.add_parser(
        "train-apprentice",
        help="train the apprentice off-line from crawl databases",
        description=(
            "Make an instance of every link (u, v) with both ends fetched in a crawl (the <t,d> features of the "
            "link in u, the critic's Pr(c*|v)) and write the naive Bayes apprentice, which a crawl can load and "
            "keep training (Chakrabarti et al. 2002, section 3.5)."
        ),
    )
    train.add_argument(
        "--from",
        dest="sources",
        action="append",
        required=True,
        metavar="DB",
        help="crawl database (.sqlite); repeat for several crawls of the same topic",
    )
    train.add_argument("-o", "--out", required=True, metavar="PATH", help="apprentice file to write (.npz)")
    train.add_argument("--d-max", type=int, default=DEFAULT_D_MAX, help="DOM window |d| (default: %(default)s)")
    train.add_argument(
        "--class-features", action="store_true", help="add the critic's top classes of the source page as features"
    )
    train.add_argument(
        "--binning",
        choices=BINNINGS,
        default="equal-prob",
        help="LOW/HIGH buckets: equally probable (the paper's) or at --threshold (default: %(default)s)",
    )
    train.add_argument(
        "--threshold", type=float, default=0.5, help="HIGH from this relevance with --binning fixed (default: 0.5)"
    )
    train.add_argument("--alpha", type=float, default=0.1, help="naive Bayes smoothing (default: %(default)s)")
    views = train.add_mutually_exclusive_group()
    views.add_argument(
        "--critic",
        metavar="MODEL",
        help="critic that reads anchor texts for the side features (default: the one the crawl recorded)",
    )
    views.add_argument(
        "--no-critic-views",
        action="store_true",
        help="leave out the critic's views of each link (the paper's apprentice: <t,d> features only)",
    )
    train.set_defaults(func=_train)

    bench = subparsers.add_parser(
        "bench-features",
        help="the paper's feature studies on WebKB (DOM window size, offsets vs plain text)",
        description=(
            "Leave-one-university-out accuracy and AUC of the apprentice on every link between stored WebKB pages, "
            "for d_max = 0..7, with <t,d> features and with plain text near the link, labelled by the critic and by "
            "the hand labels (the paper's Fig. 6 and 7). Writes features.json, features.md and features.png."
        ),
    )
    bench.add_argument("--out", default="results", help="results folder (default: %(default)s)")
    bench.add_argument("--archive", help="WebKB archive (default: ../shared/corpora/webkb-dev.tar.gz)")
    bench.add_argument("--targets", default="course,student,faculty,project", help="topics (default: %(default)s)")
    bench.add_argument(
        "--universities", default="cornell,texas,washington", help="held out in turn (default: %(default)s)"
    )
    bench.add_argument("--d-max", type=int, default=7, help="largest DOM window studied (default: %(default)s)")
    bench.set_defaults(func=_bench)


def _train(args: argparse.Namespace) -> int:
    from focused.crawldb import CrawlDBError
    from focused.learning.apprentice.data import instances_from_crawl, train_apprentice
    from focused.learning.apprentice.learner import NotReadyError

    if args.d_max < 0:
        raise CommandError("--d-max must be >= 0")
    if not 0.0 <= args.threshold <= 1.0:
        raise CommandError("--threshold must be in [0, 1]")
    if not args.alpha > 0:
        raise CommandError("--alpha must be positive")
    sources = [Path(p) for p in args.sources]
    for path in sources:
        if not path.is_file():
            raise CommandError(f"crawl database not found: {path}")
    out = Path(args.out)
    start = time.perf_counter()
    try:
        snippet = None if args.no_critic_views else _snippet_critic(sources[0], args.critic)
        instances = instances_from_crawl(
            sources, d_max=args.d_max, class_features=args.class_features, snippet_critic=snippet
        )
        app = train_apprentice(
            sources,
            d_max=args.d_max,
            class_features=args.class_features,
            binning=args.binning,
            threshold=args.threshold,
            alpha=args.alpha,
            instances=instances,
        )
        model = app.fit()
    except (CrawlDBError, ValueError, NotReadyError) as exc:
        raise CommandError(str(exc)) from exc
    seconds = time.perf_counter() - start
    app.save(out)  # atomic: never a half-written model
    missing = f", {instances.pages_without_html} without HTML" if instances.pages_without_html else ""
    print(
        f"{len(instances)} instances from {instances.pages} pages{missing} in {len(sources)} crawl(s), "
        f"topic {instances.topic!r}"
    )
    print(
        f"HIGH rate {model.high_rate:.1%} (relevance >= {model.threshold:.3g}, {args.binning} binning); "
        f"{model.n_known} distinct features"
    )
    print(
        f"training time {seconds:.2f} s (features {instances.seconds:.2f} s, "
        f"{len(instances) / max(seconds, 1e-9):.0f} instances/s)"
    )
    if model.n_side:
        w_parent, w_anchor = model.side_weights
        print(f"critic views: weight {w_parent:+.2f} on logit Pr(c*|u), {w_anchor:+.2f} on logit Pr(c*|anchor)")
    print(f"wrote {out} ({out.stat().st_size / 1024:.0f} kB)")
    return 0


def _snippet_critic(db: Path, critic_path: str | None) -> SnippetCritic:
    """The critic reading anchor texts for the crawl's topic (``critic_path`` or the one ``db`` recorded)."""
    from focused.crawldb import read_meta
    from focused.learning.critic.bundle import ModelError
    from focused.learning.critic.load import load_critic
    from focused.learning.critic.snippet import make_snippet_critic
    from focused.learning.critic.topics import UnknownTopicError
    from focused.paths import load_model

    meta = read_meta(db)
    path = critic_path or meta.get("critic_model")
    if not path:
        raise CommandError(f"{db} records no critic: pass --critic MODEL, or --no-critic-views")
    if not meta.get("topic"):
        raise CommandError(f"{db} records no topic, so the critic cannot read anchors: use --no-critic-views")
    try:
        critic, _ = load_model(path, load_critic)
        return make_snippet_critic(critic, critic.resolve_topic(meta["topic"]))
    except (OSError, ModelError, UnknownTopicError) as exc:
        raise CommandError(f"critic {path}: {exc} (pass --critic MODEL, or --no-critic-views)") from exc


def _bench(args: argparse.Namespace) -> int:
    from focused.bench.studies.features import feature_study
    from focused.corpora.webkb import ArchiveError, default_archive
    from focused.replay.files import StoreError

    archive = Path(args.archive) if args.archive else default_archive()
    if not archive.exists():
        raise CommandError(f"WebKB archive not found: {archive} (set FOCUSED_CORPORA or --archive)")
    targets = tuple(t.strip() for t in args.targets.split(",") if t.strip())
    universities = tuple(u.strip() for u in args.universities.split(",") if u.strip())
    unknown = sorted(set(universities) - set(HELD_OUT))
    if unknown or not universities:
        raise CommandError(f"--universities: cannot hold out {unknown}; choose among {', '.join(HELD_OUT)}")
    if args.d_max < 0:
        raise CommandError("--d-max must be >= 0")
    out = Path(args.out)
    try:
        feature_study(archive, out, targets=targets, universities=universities, d_values=range(args.d_max + 1))
    except (ArchiveError, StoreError, ValueError) as exc:
        raise CommandError(str(exc)) from exc
    print(f"Results: {out / 'features.md'}, {out / 'features.json'}, plot: {out / 'features.png'}")
    return 0
