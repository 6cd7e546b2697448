"""``focused train-markines``: the Markines et al. classifiers, trained off-line from crawl databases,
and ``focused bench-markines``: their crawls on the benchmark tracks."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from focused.cli import positive_int

#: Spelled out so that building the parser does not import scikit-learn.
SELECTIONS = ("df", "mi")
MODES = ("link", "page")


def fail(message: str) -> int:
    """Bad input: one line on stderr, exit status 1."""
    print(f"focused: error: {' '.join(message.split())}", file=sys.stderr)
    return 1


def register(subparsers: argparse._SubParsersAction) -> None:
    train = subparsers.add_parser(
        "train-markines",
        help="train the Markines link and page classifiers off-line from crawl databases",
        description=(
            "Every link (u, v) with both ends fetched is an instance of the link classifiers (the words at DOM "
            "distance <= D of the link in u, no offsets); every fetched page one of the page classifiers (its whole "
            "text). A target or page is on topic when the critic's Pr(c*|page) stored in the database is >= "
            "--threshold. Feature selection keeps the top K words; Bernoulli naive Bayes, a linear SVM with "
            "Platt's sigmoid and the cosine to the positive centroid are fitted on them "
            "(Markines et al. 2004). Use the file with -a strategy=markines:CLASSIFIER-MODE -a markines=FILE."
        ),
    )
    train.add_argument(
        "--db",
        dest="dbs",
        action="append",
        required=True,
        metavar="CRAWL.sqlite",
        help="crawl database with stored HTML; repeat for several crawls of the topic",
    )
    train.add_argument("--out", "-o", required=True, metavar="FILE.npz", help="model file to write")
    train.add_argument(
        "--selection",
        choices=SELECTIONS,
        default="df",
        help="feature selection: document frequency or mutual information (default: %(default)s)",
    )
    train.add_argument("--k", type=positive_int, default=500, help="words kept (default: %(default)s)")
    train.add_argument(
        "--threshold", type=float, default=0.5, help="Pr(c*|page) from which a page is on topic (default: %(default)s)"
    )
    train.add_argument("--d-max", type=int, default=10, help="DOM distance of the link context (default: 10)")
    train.add_argument("--modes", default="link,page", help="link, page or both (default: %(default)s)")
    train.set_defaults(func=_train)

    bench = subparsers.add_parser(
        "bench-markines",
        help="crawl the benchmark tracks with the Markines strategies against baseline and the default",
        description=(
            "For every case of the tracks: a baseline crawl, Markines models trained on baseline crawls (WebKB: of "
            "the other universities; Wikipedia: the case's own, the paper's protocol), then one crawl per strategy. "
            "Prints true harvest at 100 and 250 pages (and writes markines.md/.json in --out)."
        ),
    )
    bench.add_argument("--tracks", default="webkb,wiki", help="webkb, wiki or both (default: %(default)s)")
    bench.add_argument(
        "--strategies",
        default="baseline,apprentice,markines:nb-link,markines:svm-link,markines:cosine-link,"
        "markines:nb-page,markines:svm-page,markines:cosine-page",
        help="strategies (default: %(default)s); markines:... without a model learn online",
    )
    bench.add_argument("--online", action="store_true", help="also run each markines strategy learning online")
    bench.add_argument("--budget", type=positive_int, default=250, help="pages per crawl (default: %(default)s)")
    bench.add_argument("--jobs", type=positive_int, default=2, help="crawls in parallel (default: %(default)s)")
    bench.add_argument("--selection", choices=SELECTIONS, default="df", help="feature selection (default: df)")
    bench.add_argument("--out", default="results/markines", help="results folder (default: %(default)s)")
    bench.add_argument("--reuse", action="store_true", help="reuse finished crawls in --out")
    bench.set_defaults(func=_bench)


def _train(args: argparse.Namespace) -> int:
    from focused.crawldb import CrawlDBError
    from focused.learning.markines.classifiers import MarkinesModel, fit_part
    from focused.learning.markines.data import markines_data

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - set(MODES):
        return fail(f"--modes {args.modes!r}: choose link, page or link,page")
    if not 0.0 <= args.threshold <= 1.0:
        return fail(f"--threshold {args.threshold}: must be in [0, 1]")
    if args.d_max < 0:
        return fail(f"--d-max {args.d_max}: must be >= 0")
    for db in args.dbs:
        if not Path(db).is_file():
            return fail(f"crawl database not found: {db}")
    start = time.perf_counter()
    try:
        data = markines_data(args.dbs, threshold=args.threshold, d_max=args.d_max)
    except CrawlDBError as exc:
        return fail(str(exc))
    parts = {}
    for mode in modes:
        docs, labels = (data.link_docs, data.link_labels) if mode == "link" else (data.page_docs, data.page_labels)
        try:
            parts[mode] = fit_part(docs, labels, selection=args.selection, k=args.k)
        except ValueError as exc:
            return fail(f"cannot train the {mode} classifiers from {', '.join(args.dbs)}: {exc}")
        info = parts[mode].info
        print(
            f"{mode}: {info['n_instances']} instances ({info['n_positive']} on topic), "
            f"{len(parts[mode].vocabulary)} words by {args.selection}: {' '.join(parts[mode].vocabulary[:12])} ..."
        )
    meta = {"sources": [Path(p).name for p in args.dbs], "threshold": args.threshold, "topics": sorted(data.topics)}
    model = MarkinesModel(parts, d_max=args.d_max, metadata=meta)
    out = model.save(args.out)
    print(
        f"{data.pages} pages read in {time.perf_counter() - start:.1f} s; wrote {out} "
        f"({out.stat().st_size / 1024:.0f} kB)"
    )
    return 0


def _bench(args: argparse.Namespace) -> int:
    from focused.bench.studies.markines import MarkinesBench, run_markines_bench

    tracks = [t.strip() for t in args.tracks.split(",") if t.strip()]
    if not tracks or set(tracks) - {"webkb", "wiki"}:
        return fail(f"--tracks {args.tracks!r}: choose webkb, wiki or webkb,wiki")
    strategies = tuple(s.strip() for s in args.strategies.split(",") if s.strip())
    config = MarkinesBench(
        out=Path(args.out),
        tracks=tuple(tracks),
        strategies=strategies,
        online=args.online,
        budget=args.budget,
        jobs=args.jobs,
        selection=args.selection,
        reuse=args.reuse,
    )
    try:
        table = run_markines_bench(config)
    except ValueError as exc:
        return fail(str(exc))
    print(table)
    return 0
