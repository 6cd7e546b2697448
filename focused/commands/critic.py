"""Critic commands: ``train-critic``, ``eval-critic``, ``models`` and ``topics``."""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

from focused.cli import CommandError
from focused.corpora.webkb import ArchiveError

logger = logging.getLogger(__name__)

DEFAULT_MODELS_DIR = "models"
#: Default critic model (``focused.learning.critic.training.DEFAULT_MODEL_NAME`` under ``models/``); spelled out here so
#: that building the parser does not import scikit-learn.
DEFAULT_MODEL = f"{DEFAULT_MODELS_DIR}/webkb-pagetype.npz"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the critic commands to the ``focused`` command line."""
    train = subparsers.add_parser(
        "train-critic",
        help="train a naive Bayes critic on WebKB or on a class/.../doc tree",
        description="Train the baseline classifier (critic) and write it as a model file (.npz).",
    )
    source = train.add_mutually_exclusive_group(required=True)
    source.add_argument("--webkb", metavar="ARCHIVE", help="WebKB archive (.tar.gz or folder): page types")
    source.add_argument("--dirtree", metavar="PATH", help="class/.../doc tree (.tar.gz or folder): topics")
    train.add_argument("--universities", metavar="A,B", help="WebKB universities to train on (default: all)")
    train.add_argument("--exclude", metavar="A,B", help="WebKB universities to leave out")
    train.add_argument("--subset", metavar="NAME", help="top folder of the tree to read, e.g. 20news-bydate-train")
    _training_options(train)
    train.add_argument("-o", "--out", required=True, metavar="PATH", help="model file to write")
    train.set_defaults(func=_train)

    evaluate = subparsers.add_parser(
        "eval-critic",
        help="evaluate the critic on 20 Newsgroups (bydate) or WebKB (leave one university out)",
        description=(
            "Print accuracy, log-loss and ranking AUCs of raw and calibrated naive Bayes posteriors. "
            "ARCHIVE defaults to the corpora folder ($FOCUSED_CORPORA or ../shared/corpora)."
        ),
    )
    which = evaluate.add_mutually_exclusive_group(required=True)
    which.add_argument("--20news", dest="news", nargs="?", const="", metavar="ARCHIVE", help="20news-bydate archive")
    which.add_argument("--webkb", nargs="?", const="", metavar="ARCHIVE", help="WebKB archive (LOUO)")
    _training_options(evaluate)
    evaluate.add_argument("--json", action="store_true", help="print all statistics as JSON")
    evaluate.set_defaults(func=_evaluate)

    models = subparsers.add_parser(
        "models",
        help="build the default models (models/webkb-pagetype.npz)",
        description="Reproducibly train the default critic from webkb-dev and write it.",
    )
    models.add_argument("--out", default=DEFAULT_MODELS_DIR, metavar="DIR", help="output folder (default: %(default)s)")
    models.add_argument("--archive", metavar="ARCHIVE", help="WebKB archive (default: the corpora folder's)")
    models.set_defaults(func=_models)

    topics = subparsers.add_parser(
        "topics",
        help="list the topics a critic model can focus on",
        description="List every valid topic: each class and each prefix of the class hierarchy.",
    )
    topics.add_argument("--model", default=DEFAULT_MODEL, metavar="PATH", help="model file (default: %(default)s)")
    topics.add_argument("pattern", nargs="?", default="", help="list only the topics containing this text (any case)")
    topics.set_defaults(func=_topics)


def _training_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--alpha", type=float, help="additive smoothing (default: the critic's, 0.1)")
    parser.add_argument("--n-features", type=int, default=2**18, help="hash buckets (default: %(default)s)")
    parser.add_argument("--no-calibrate", action="store_true", help="keep raw naive Bayes posteriors")
    parser.add_argument("--seed", type=int, default=0, help="seed of the calibration hold-out (default: 0)")
    parser.add_argument(
        "--url-words",
        choices=("on", "off"),
        help="the critic also reads each page's URL words (default: on for WebKB, off for a document tree)",
    )
    parser.add_argument(
        "--verdict-head",
        choices=("on", "off"),
        default="on",
        help="also fit a discriminative verdict (logistic regression) that judges pages; links keep the naive "
        "Bayes view (default: on)",
    )


def _training_kw(args: argparse.Namespace) -> dict[str, Any]:
    kw: dict[str, Any] = {
        "n_features": args.n_features,
        "calibrate": not args.no_calibrate,
        "seed": args.seed,
        "verdict_head": args.verdict_head == "on",
    }
    webkb = getattr(args, "webkb", None) is not None
    if args.url_words == "on" and not webkb:
        raise CommandError("--url-words on needs pages with URLs (--webkb); a document tree has none")
    if webkb:
        kw["url_features"] = args.url_words != "off"
    if args.alpha is not None:
        if not args.alpha > 0:
            raise CommandError("--alpha must be positive")
        kw["alpha"] = args.alpha
    if args.n_features < 2:
        raise CommandError("--n-features must be at least 2")
    return kw


def _names(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def _existing(path: str | Path, what: str) -> Path:
    path = Path(path)
    if not path.exists():
        raise CommandError(f"{what} not found: {path} (set $FOCUSED_CORPORA or pass the path)")
    return path


def _train(args: argparse.Namespace) -> int:
    from focused.learning.critic.training import train_dirtree_critic, train_webkb_critic

    kw = _training_kw(args)
    start = time.perf_counter()
    try:
        if args.webkb:
            if args.subset:
                raise CommandError("--subset applies to --dirtree only")
            critic = train_webkb_critic(
                _existing(args.webkb, "WebKB archive"),
                universities=_names(args.universities),
                exclude=_names(args.exclude),
                **kw,
            )
        else:
            if args.universities or args.exclude:
                raise CommandError("--universities/--exclude apply to --webkb only")
            critic = train_dirtree_critic(_existing(args.dirtree, "document tree"), args.subset, **kw)
    except (ArchiveError, ValueError) as exc:
        raise CommandError(str(exc)) from exc
    path = critic.save(args.out)
    info = critic.metadata["critic"]
    scale = "uncalibrated" if critic.length_scale is None else f"L_eff={critic.length_scale:.3g}"
    print(
        f"wrote {path} ({path.stat().st_size / 1024:.0f} kB): {len(critic.classes)} classes, "
        f"{info['n_documents']} documents, {scale}, {time.perf_counter() - start:.1f} s"
    )
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from focused.corpora import corpora_dir
    from focused.learning.critic.training import evaluate_20news, evaluate_webkb_louo

    kw = _training_kw(args)
    try:
        if args.news is not None:
            archive = _existing(args.news or corpora_dir() / "20news-bydate.tar.gz", "20 Newsgroups archive")
            results = evaluate_20news(archive, **kw)
        else:
            archive = _existing(args.webkb or corpora_dir() / "webkb-dev.tar.gz", "WebKB archive")
            results = evaluate_webkb_louo(archive, **kw)
    except (ArchiveError, ValueError) as exc:
        raise CommandError(str(exc)) from exc
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    elif args.news is not None:
        n_train, n_test = results["n_train"], results["n_test"]
        print(f"20 Newsgroups bydate: trained on {n_train}, tested on {n_test} posts")
        for name in [n for n in ("raw", "calibrated", "verdict") if n in results]:
            print(f"{name:>10}  {_row(results[name])}")
        scale, alpha, seconds = results["length_scale"], results["alpha"], results["train_seconds"]
        print(f"L_eff={scale:.3g} alpha={alpha:g} train={seconds:.1f}s")
        print(f"accuracy {results['accuracy']:.4f}")
    else:
        print("WebKB, leave one university out (train on the others + misc, test on the one)")
        rows = [(u, stats) for u, stats in results["universities"].items()] + [("mean", results["mean"])]
        for university, stats in rows:
            for name in [n for n in ("raw", "calibrated", "verdict") if n in stats]:
                print(f"{university:>10} {name:>10}  {_row(stats[name])}")
    return 0


def _row(stats: dict[str, Any]) -> str:
    aucs = " ".join(f"{c}={v:.3f}" for c, v in stats["auc"].items())
    return (
        f"acc={stats['accuracy']:.4f} log-loss={stats['log_loss']:.3f} macro-F1={stats['macro_f1']:.3f} "
        f"macro-AUC={stats['macro_auc']:.3f} AUC[{aucs}] ties/1000={stats.get('ties', float('nan')):.1f}"
    )


def _models(args: argparse.Namespace) -> int:
    from focused.corpora.webkb import default_archive
    from focused.learning.critic.training import build_default_models

    archive = _existing(args.archive or default_archive(), "WebKB archive")
    start = time.perf_counter()
    try:
        paths = build_default_models(args.out, archive=archive)
    except (ArchiveError, ValueError) as exc:
        raise CommandError(str(exc)) from exc
    for path in paths:
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} kB)")
    print(f"built {len(paths)} model(s) in {time.perf_counter() - start:.1f} s")
    return 0


def _topics(args: argparse.Namespace) -> int:
    from focused.learning.critic.bundle import ModelError
    from focused.learning.critic.load import load_critic
    from focused.paths import load_model

    try:
        critic, _ = load_model(args.model, load_critic, base=Path.cwd())
    except ModelError as exc:
        raise CommandError(str(exc)) from exc
    pattern = args.pattern.casefold()
    names = [name for name in critic.topics() if pattern in name.casefold()]
    if not names:
        raise CommandError(f"no topic of {args.model} contains {args.pattern!r}; `focused topics` lists them all")
    for name in names:
        print(name)
    return 0
