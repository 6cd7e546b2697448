"""Intelligent crawling: reusing K across crawls, and a predicate vs the critic, on the WebKB track.

The paper's §5 reuse experiment: an intelligent crawl of one university saves
its statistics K; a crawl of another university for the same topic starts
from it ("warm") or from nothing ("cold"). Optionally a third crawl of the
target uses a keyword predicate instead of the critic as its relevance. True
harvest is judged against the hand labels, as in ``focused bench``. Real
crawls through the loopback replay; results print as a Markdown table::

    python -m focused.bench.studies.intelligent_reuse --topic student --source cornell --target texas --budget 250 \\
        --predicate 'text:student or url:~' --out results/intelligent
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from focused.bench.metrics import crawl_curve
from focused.bench.runner import CrawlSpec, run_crawl
from focused.bench.tracks import WEBKB_UNIVERSITIES, Case, webkb_track
from focused.corpora.webkb import default_archive
from focused.learning.critic.load import load_critic
from focused.replay.server import ReplayServer

CHECKPOINTS = (50, 100, 250, 500)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topic", default="student")
    parser.add_argument("--source", default="cornell", choices=WEBKB_UNIVERSITIES)
    parser.add_argument("--target", default="texas", choices=WEBKB_UNIVERSITIES)
    parser.add_argument("--budget", type=int, default=250)
    parser.add_argument("--strategy", default="intelligent", help="intelligent or intelligent:FACTOR")
    parser.add_argument("--predicate", default="", help="also crawl the target with this predicate as relevance")
    parser.add_argument("--out", default="results/intelligent")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    out = Path(args.out)
    track = webkb_track(
        default_archive(), out / "cache" / "webkb", universities=(args.source, args.target), targets=(args.topic,)
    )
    source, target = (next(c for c in track.cases if c.group == u) for u in (args.source, args.target))
    k_file = out / f"k-{args.source}-{args.topic}.npz"
    rows = []
    with ReplayServer(track.store) as server:

        def crawl(case: Case, name: str, **settings: object) -> list[str]:
            spec = CrawlSpec(
                name=name,
                topic=case.topic,
                strategy=args.strategy,
                seeds=case.seeds,
                model=case.model,
                proxy=server.proxy_url,
                db=out / "crawls" / f"{name}.sqlite",
                max_pages=args.budget,
                settings={"FOCUSED_LOG_EVERY": 250, **settings},
            )
            result = run_crawl(spec)
            if result.returncode != 0:
                raise SystemExit(f"crawl {name} failed; see {result.log}")
            topic = load_critic(case.model).resolve_topic(case.topic)
            curve = crawl_curve(spec.db, track.store.labels, topic)
            stats = result.stats
            rows.append(
                [name, *(f"{100 * curve.true_harvest_at(k):.1f}" for k in CHECKPOINTS if k <= args.budget),
                 f"{stats.get('focused/intelligent/satisfying', 0):.0f}/{stats.get('focused/pages', 0)}"]
            )  # fmt: skip
            return curve.urls

        crawl(source, f"{args.source}-{args.topic}-source", FOCUSED_INTELLIGENT_SAVE=str(k_file))
        crawl(target, f"{args.target}-{args.topic}-cold")
        crawl(target, f"{args.target}-{args.topic}-warm", FOCUSED_INTELLIGENT_LOAD=str(k_file))
        if args.predicate:
            crawl(target, f"{args.target}-{args.topic}-predicate", FOCUSED_PREDICATE=args.predicate)
    ks = [k for k in CHECKPOINTS if k <= args.budget]
    print(f"\n{args.strategy}, topic {args.topic}: K from {args.source}, crawls of {args.target}; true harvest (%)\n")
    print("| crawl | " + " | ".join(f"@{k}" for k in ks) + " | satisfying/pages (K's relevance) |")
    print("|---|" + "---|" * (len(ks) + 1))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
