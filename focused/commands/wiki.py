"""``focused build-wiki`` (the Wikispeedia benchmark web) and ``focused train-wiki-critic``."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import Any

from focused.cli import CommandError

logger = logging.getLogger(__name__)

DEFAULT_MODEL = Path("models/wiki-topics.npz")


def register(subparsers: Any) -> None:
    """Add the ``build-wiki`` and ``train-wiki-critic`` sub-commands."""
    build = subparsers.add_parser(
        "build-wiki",
        help="render the Wikispeedia corpus as a site (WARC + labels) for the benchmark",
        description="Render every Wikispeedia article as a page of http://wikischools.test/, write "
        "wiki.warc.gz, wiki.labels.tsv and wiki.links.tsv to OUT, and (unless --web-only) the 5-fold "
        "cross-fitted critic and the seeds of the benchmark topics. Up-to-date outputs are reused.",
    )
    build.add_argument("--archive", type=Path, help="wikispeedia.tar.gz or its folder (default: corpora folder)")
    build.add_argument("--out", type=Path, help="output folder (default: results/cache/wiki)")
    build.add_argument("--force", action="store_true", help="rebuild even when the outputs are up to date")
    build.add_argument("--web-only", action="store_true", help="build the site only, not the critic and seeds")
    build.set_defaults(func=run_build_wiki)

    train = subparsers.add_parser(
        "train-wiki-critic",
        help="train the default topic critic on all Wikispeedia articles (105 classes)",
        description="Train the naive Bayes critic on the rendered pages of every article, one class per "
        "second-level category, with each class's 3 seed URLs as examples.",
    )
    train.add_argument("--archive", type=Path, help="wikispeedia.tar.gz or its folder (default: corpora folder)")
    train.add_argument("-o", "--output", type=Path, default=DEFAULT_MODEL, help=f"default: {DEFAULT_MODEL}")
    train.add_argument("--n-features", type=int, help="hashed features (default 2**17)")
    train.add_argument("--alpha", type=float, help="naive Bayes smoothing (default 0.05)")
    train.add_argument("--cv", action="store_true", help="also report the 5-fold cross-fitted accuracy")
    train.add_argument(
        "--url-words", choices=("on", "off"), default="on", help="read each article's URL words too (default: on)"
    )
    train.add_argument(
        "--verdict-head",
        choices=("on", "off"),
        default="on",
        help="also fit a discriminative verdict that judges pages (focused.learning.critic.verdict_head; default: on)",
    )
    train.set_defaults(func=run_train_wiki_critic)


def _load(archive: Path | None) -> Any:
    from focused.corpora.wikispeedia import WikispeediaError, load_wikispeedia
    from focused.wiki.web import default_archive

    try:
        return load_wikispeedia(archive or default_archive())
    except WikispeediaError as exc:
        raise CommandError(str(exc)) from exc


def run_build_wiki(args: argparse.Namespace) -> int:
    from focused.corpora.wikispeedia import WikispeediaError
    from focused.wiki.build import prepare_wiki_track
    from focused.wiki.web import DEFAULT_OUT, build_wiki_web, default_archive

    archive = args.archive or default_archive()
    if not archive.exists():
        raise CommandError(f"Wikispeedia archive not found: {archive}")
    out = args.out or DEFAULT_OUT
    start = time.perf_counter()
    try:
        if args.web_only:
            web = build_wiki_web(archive, out, force=args.force)
        else:
            track = prepare_wiki_track(out, archive, force=args.force)
            web = build_wiki_web(archive, out)  # up to date now: just the counts
    except WikispeediaError as exc:
        raise CommandError(str(exc)) from exc
    print(f"{web.warc}: {web.pages} pages, {web.articles} articles, {web.link_count} article links")
    print(f"labels: {web.labels}\nlink graph: {web.links}")
    if not args.web_only:
        from focused.learning.critic.load import load_critic

        accuracy = load_critic(track.critic).metadata.get("crossfit", {}).get("accuracy")
        measured = f" (5-fold top-1 accuracy {accuracy:.3f})" if accuracy is not None else ""
        print(f"cross-fitted critic: {track.critic}{measured}")
        for topic in track.topics:
            print(f"  {topic}: {' '.join(track.seeds[topic])}")
    print(f"({time.perf_counter() - start:.1f} s)")
    return 0


def run_train_wiki_critic(args: argparse.Namespace) -> int:
    from focused.wiki.critic import DEFAULT_ALPHA, DEFAULT_N_FEATURES, cross_validate, page_texts, train_wiki_critic
    from focused.wiki.taxonomy import build_taxonomy

    start = time.perf_counter()
    wiki = _load(args.archive)
    alpha = args.alpha if args.alpha is not None else DEFAULT_ALPHA
    n_features = args.n_features or DEFAULT_N_FEATURES
    taxonomy = build_taxonomy(wiki.categories)
    texts = page_texts(wiki)
    kw = {
        "n_features": n_features,
        "alpha": alpha,
        "url_features": args.url_words == "on",
        "verdict_head": args.verdict_head == "on",
    }
    critic = train_wiki_critic(wiki, taxonomy=taxonomy, texts=texts, **kw)
    critic.save(args.output)
    size = args.output.stat().st_size / 1e6
    print(f"{args.output}: {len(critic.classes)} classes, {size:.1f} MB ({time.perf_counter() - start:.1f} s)")
    if args.cv:
        folds = train_wiki_critic(wiki, taxonomy=taxonomy, texts=texts, folds=5, **kw)
        accuracy = cross_validate(wiki, folds, taxonomy=taxonomy, texts=texts)  # type: ignore[arg-type]
        print(f"5-fold cross-fitted top-1 accuracy: {accuracy:.3f}")
        if kw["verdict_head"]:
            accuracy = cross_validate(wiki, folds, taxonomy=taxonomy, texts=texts, verdicts=True)  # type: ignore[arg-type]
            print(f"5-fold cross-fitted top-1 accuracy of the verdict heads: {accuracy:.3f}")
    return 0
