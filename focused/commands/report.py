"""``focused report CRAWL.sqlite [-o report.html]``: a crawl's report, one self-contained HTML page.

The page shows the harvest and loss curves, the most relevant pages found,
pages per host, what was skipped or refused and why, and for a few fetched
pages why the crawler chose them. ``--baseline OTHER.sqlite`` puts another crawl's
loss curve beside this one's; ``--labels`` judges both by hand labels. It needs nothing but the crawl database (and,
for the link's views, the critic model the crawl recorded); it loads nothing
from the network, so it can be mailed or archived as it is.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from focused.cli import CommandError, probability


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write a crawl's HTML report (curves, best pages, hosts, what was skipped, why pages were fetched)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("db", metavar="CRAWL.sqlite", help="the crawl database")
    parser.add_argument("-o", "--out", help="the HTML file (default: the database's name with .html)")
    parser.add_argument("--labels", help="hand labels (url<TAB>label): the loss curve by them, not by the critic")
    parser.add_argument("--threshold", type=probability, default=0.5, help="Pr(c*|v) of a relevant page (0.5)")
    parser.add_argument(
        "--baseline",
        metavar="OTHER.sqlite",
        help="another crawl (e.g. with -a strategy=bfs) whose loss curve goes beside this one, judged the same way",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from focused.crawldb import CrawlDBError
    from focused.report.data import load_report
    from focused.report.html import write_report

    db = Path(args.db)
    labels = Path(args.labels) if args.labels else None
    if labels is not None and not labels.is_file():
        raise CommandError(f"--labels {labels}: no such file")
    baseline = Path(args.baseline) if args.baseline else None
    if baseline is not None and not baseline.is_file():
        raise CommandError(f"--baseline {baseline}: no such file")
    out = Path(args.out) if args.out else db.with_suffix(".html")
    try:
        data = load_report(db, threshold=args.threshold, labels=labels, baseline=baseline)
    except CrawlDBError as exc:
        raise CommandError(str(exc)) from exc
    try:
        write_report(data, out)
    except OSError as exc:
        raise CommandError(f"cannot write {out}: {exc.strerror or exc}") from exc
    print(f"Wrote {out} ({len(data.pages)} pages)")
    return 0
