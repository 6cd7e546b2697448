"""How far learning from the critic can go: best-first crawls simulated on a track's link graph.

The apprentice learns to predict the critic's verdict on a link's target before
fetching it (Chakrabarti et al. 2002, §2.2). However well it learns, a crawl
steered by that prediction cannot beat one that *knows* each target's verdict.
This module replays a bench track's cases without HTTP or Scrapy: every page of
the case's web (the confined store, for a held-out group) is parsed once with the
crawler's own parser, judged by the case's critic (page view) and each link's anchor
read by it (anchor view), exactly as the crawler computes them; then a best-first
crawl from the case's seeds (max over fetched parents, the default aggregation)
is simulated (:mod:`focused.bench.studies.simcrawl`) for each edge score:

* ``sim:baseline``: the parent's relevance Pr(c*|u);
* ``sim:prior``: the blend of the two views (``apprentice:prior``'s scores);
* ``sim:critic``: the target's own verdict Pr(c*|v), ties by the prior: what an
  apprentice that predicted the critic without error would fetch (its ceiling);
* ``sim:oracle``: the target's true label, ties by the prior (the greedy oracle);
* ``sim:critic-lookahead``: the look-ahead of ``oracle-lookahead``
  (:class:`~focused.strategies.oracles.GraphLookAhead`: distance to the nearest undiscovered page)
  towards the pages the critic calls relevant (Pr(c*|v) > 0.5), ties by the prior: the ceiling
  of a learner that knew, from the critic's verdicts, where every hub leads;
* ``sim:oracle-lookahead``: the same towards the truly relevant pages (the look-ahead oracle,
  whose crawls break its ties by arrival order);
* ``sim:link-model-views`` and ``sim:link-model``: a link model learned from the other groups'
  labelled cases (:mod:`focused.bench.studies.linkmodel`), the issue's cross-topic warm start.

Each case also records how many on-topic pages its seeds reach at all: the most any crawl harvests.

``--page-view discriminative`` replaces the critic's page view by its verdict head
(:mod:`focused.learning.critic.verdict_head`: a logistic regression on the same hashed features, tf-idf
weighted, trained on the critic's own training pages): how far a better page classifier would
move these ceilings (held-out tracks only; the anchor view stays the critic's).

A crawl's waiting URLs are scored once, when a parent is fetched, as in the
crawler; links to pages the web does not serve (dead links, other groups) are not
counted as fetches. The output is a ``bench.json``-shaped file (``runs`` with
``cumulative_loss``) that :mod:`focused.bench.curves` reads, so G of each
simulated strategy is computed against a real run's baseline and oracles:

``python3 -m focused.bench.studies.ceiling --tracks webkb,wiki --budget 250 --out DIR``

``DIR/cache`` is the bench's cache (critics, webs, graphs), shared with ``focused bench --out DIR``.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from focused.bench.graph import served_url
from focused.bench.studies.simcrawl import Scorer, reachable, simulate
from focused.bench.tracks import Case, Track, TrackError, store_training_set
from focused.learning.apprentice.linkids import page_link_ids, parse_for_links
from focused.learning.apprentice.model import critic_views
from focused.learning.critic.crossfit import CrossFitCritic
from focused.learning.critic.load import load_critic
from focused.learning.critic.naive_bayes import Critic
from focused.page.text import content_type_charset
from focused.settings.defaults import FOCUSED_APPRENTICE_ANCHOR_WEIGHT
from focused.strategies.oracles import GraphLookAhead, load_graph

__all__ = ["STRATEGIES", "CaseWeb", "case_web", "edge_scores"]

logger = logging.getLogger(__name__)

#: The bench tracks this module can build (their caches as ``focused bench`` lays them out).
TRACKS = ("webkb", "wiki")
STRATEGIES = ("sim:baseline", "sim:prior", "sim:critic", "sim:oracle", "sim:critic-lookahead", "sim:oracle-lookahead")
#: The page views: the critic's own, or a logistic regression on its features (``--page-view``).
PAGE_VIEWS = ("critic", "discriminative")
#: Ties of the critic's verdict and of the true label are broken by the prior, scaled by this.
_TIE = 1e-3
#: ... and the look-ahead's levels by the prior scaled by this (below its smallest gap, 2^-17 / 100).
_LOOKAHEAD_TIE = 1e-9


@dataclass
class CaseWeb:
    """One case's web as the critic sees it: pages ``0..n-1`` (``urls``) and links ``src[i] -> dst[i]``."""

    urls: list[str]
    page_view: np.ndarray  # Pr(c*|u) of each page
    truth: np.ndarray  # each page on topic (bool)
    src: np.ndarray
    dst: np.ndarray
    anchor_view: np.ndarray  # Pr(c*|anchor, target URL) of each link
    seeds: list[int]


def _lookahead(web: CaseWeb, positive: np.ndarray, prior: np.ndarray) -> Scorer:
    graph = GraphLookAhead(positive, web.src, web.dst)
    return lambda u, links: (
        np.asarray(graph.score_nodes(u, web.dst[links].tolist())) + _LOOKAHEAD_TIE * prior[links]
    ).tolist()


def edge_scores(
    web: CaseWeb, strategy: str, anchor_weight: float = FOCUSED_APPRENTICE_ANCHOR_WEIGHT
) -> np.ndarray | Scorer:
    """Each link's score under one of :data:`STRATEGIES` (a scorer for the look-ahead ones: fresh state)."""
    views = critic_views(web.page_view[web.src], web.anchor_view)  # clipped logits, as the crawler has them
    prior = 1 / (1 + np.exp(-((1 - anchor_weight) * views[:, 0] + anchor_weight * views[:, 1])))
    if strategy == "sim:critic-lookahead":
        return _lookahead(web, web.page_view > 0.5, prior)
    if strategy == "sim:oracle-lookahead":
        return _lookahead(web, web.truth, prior)
    if strategy == "sim:baseline":
        return web.page_view[web.src]
    if strategy == "sim:prior":
        return prior
    if strategy == "sim:critic":
        return web.page_view[web.dst] + _TIE * prior
    if strategy == "sim:oracle":
        return web.truth[web.dst].astype(np.float64) + _TIE * prior
    raise ValueError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")


@dataclass
class _Pages:
    """A web parsed once (topic-free): page texts, links and their anchors."""

    urls: list[str]
    texts: list[str]
    src: np.ndarray
    dst: np.ndarray
    anchors: list[str]
    hrefs: list[str]  # each link's target as the page names it (the anchor view reads its URL)


def _parse_web(track: Track, case: Case) -> _Pages:
    store = track.store.confined(sorted(case.confine)) if case.confine else track.store
    assert case.graph is not None, "a case needs its link graph"
    urls = load_graph(case.graph)[0]
    index = {u: i for i, u in enumerate(urls)}
    texts: list[str] = []
    src: list[int] = []
    dst: list[int] = []
    anchors: list[str] = []
    hrefs: list[str] = []
    served: dict[str, int | None] = {}
    for u, url in enumerate(urls):
        response = store.resolve(url).response
        if response is None:  # the graph names the page as served: not expected
            texts.append("")
            continue
        parsed = parse_for_links(response.body, response.url, content_type_charset(response.header("Content-Type")))
        texts.append(parsed.text)
        targets, _, texts_of = page_link_ids(parsed, response.url, 0, 2**10)
        for href, anchor in zip(targets, texts_of, strict=True):
            if href not in served:
                target = served_url(store, href)
                served[href] = index.get(target) if target else None
            v = served[href]
            if v is not None and v != u:
                src.append(u)
                dst.append(v)
                anchors.append(anchor)
                hrefs.append(href)
    return _Pages(urls, texts, np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64), anchors, hrefs)


def discriminative_view(track: Track, case: Case, pages: _Pages, critic: Critic | CrossFitCritic) -> np.ndarray:
    """Pr(c*|page) of a verdict head (:func:`~focused.learning.critic.verdict_head.train_head`) on the case's
    ``critic``'s features, trained on the pages that critic trained on (a held-out track's critic names its
    groups): what ``focused bench --critic-head on`` gives the crawler's verdicts."""
    from focused.learning.critic.verdict_head import train_head

    groups = critic.metadata.get("groups")
    if not isinstance(critic, Critic) or not groups:
        raise TrackError(f"--page-view discriminative needs a held-out track's critic; {case.model.name} is not one")
    texts, labels, urls = store_training_set(track.store, groups)
    index = {c: i for i, c in enumerate(critic.classes)}
    y = np.array([index[label] for label in labels], dtype=np.int64)
    head = train_head(critic.transform(texts, urls), y, len(critic.classes))
    topic = critic.resolve_topic(case.topic)
    return np.asarray(head.posteriors(critic.transform(pages.texts, pages.urls))[:, topic.indices].sum(axis=1))


def case_web(track: Track, case: Case, pages: _Pages | None = None, page_view: str = "critic") -> CaseWeb:
    """Judge a case's web with its critic (``pages``: the web already parsed, shared by the cases of one web;
    ``page_view``: one of :data:`PAGE_VIEWS`)."""
    pages = pages or _parse_web(track, case)
    critic = load_critic(case.model)
    topic = critic.resolve_topic(case.topic)
    if page_view == "discriminative":
        page_view_of = discriminative_view(track, case, pages, critic)
    elif page_view == "critic":
        page_view_of = critic.relevance(pages.texts, topic, pages.urls)
    else:
        raise ValueError(f"unknown page view {page_view!r}; valid: {', '.join(PAGE_VIEWS)}")
    anchor_view = critic.snippet_relevance(pages.anchors, topic, pages.hrefs) if pages.anchors else np.zeros(0)
    truth = np.array([track.canonical(u) in case.targets for u in pages.urls], dtype=bool)
    index = {u: i for i, u in enumerate(pages.urls)}
    seeds = [index[s] for s in (track.canonical(u) for u in case.seeds) if s in index]
    if not seeds:
        raise TrackError(f"no seed of {case.group}/{case.topic} is a page of its web")
    return CaseWeb(pages.urls, page_view_of, truth, pages.src, pages.dst, anchor_view, seeds)


def case_runs(
    track: Track,
    case: Case,
    budget: int,
    pages: _Pages | None = None,
    page_view: str = "critic",
    *,
    web: CaseWeb | None = None,
    extra: dict[str, np.ndarray] | None = None,
) -> list[dict[str, Any]]:
    """One ``bench.json`` run per simulated strategy of a case (``web``: the case already judged;
    ``extra``: more strategies' link scores, e.g. :func:`~focused.bench.studies.linkmodel.cross_case_scores`)."""
    from sklearn.metrics import average_precision_score

    web = web if web is not None else case_web(track, case, pages, page_view)
    # how well the page view ranks the web's pages by their true label (the learner's target)
    precision = float(average_precision_score(web.truth, web.page_view)) if web.truth.any() else 0.0
    targets = int((web.truth & reachable(len(web.urls), web.src, web.dst, web.seeds)).sum())
    scores: dict[str, np.ndarray | Scorer] = {s: edge_scores(web, s) for s in STRATEGIES}
    scores.update(extra or {})
    runs = []
    for strategy, score in scores.items():
        fetched = simulate(len(web.urls), web.src, web.dst, score, web.seeds, budget)
        loss = np.cumsum(~web.truth[fetched]).tolist()
        runs.append(
            {"track": track.name, "group": case.group, "topic": case.topic, "strategy": strategy, "repeat": 0,
             "pages": len(fetched), "cumulative_loss": loss, "page_view_ap": precision,
             "reachable_targets": targets}
        )  # fmt: skip
    return runs


def _tracks(names: Sequence[str], cache: Path) -> list[Track]:
    from focused.bench.tracks import webkb_track, wiki_track
    from focused.corpora.webkb import default_archive

    tracks = []
    for name in names:
        if name == "webkb":
            archive = default_archive()
            if not archive.exists():
                raise TrackError(f"WebKB archive not found: {archive} (set FOCUSED_CORPORA)")
            tracks.append(webkb_track(archive, cache / "webkb"))
        elif name == "wiki":
            tracks.append(wiki_track(cache))
        else:
            raise TrackError(f"unknown track {name!r}; valid: {', '.join(TRACKS)}")
    return tracks


def run_ceiling(names: Sequence[str], budget: int, out: Path, page_view: str = "critic") -> Path:
    """Simulate every case of the tracks; write ``ceiling.json`` in ``out`` and return its path."""
    from focused.bench.studies.linkmodel import cross_case_scores, link_features

    runs: list[dict[str, Any]] = []
    for track in _tracks(names, out / "cache"):
        parsed: dict[tuple[Path | None, frozenset[str] | None], _Pages] = {}
        webs: list[CaseWeb] = []
        for case in track.cases:
            key = (case.graph, case.confine)
            if key not in parsed:
                parsed[key] = _parse_web(track, case)
                logger.info(
                    "%s %s: %d pages, %d links parsed",
                    track.name,
                    case.group,
                    len(parsed[key].urls),
                    len(parsed[key].src),
                )
            webs.append(case_web(track, case, parsed[key], page_view))
        # the link model of each case learns from the other groups' cases (all judged first)
        extra = cross_case_scores(
            [case.group for case in track.cases],
            [link_features(w.page_view, w.anchor_view, w.src) for w in webs],
            [w.truth[w.dst] for w in webs],
        )
        for case, web, scores in zip(track.cases, webs, extra, strict=True):
            runs.extend(case_runs(track, case, budget, web=web, extra=scores))
    path = out / ("ceiling.json" if page_view == "critic" else f"ceiling-{page_view}.json")
    config = {"tracks": list(names), "budget": budget, "page_view": page_view}
    path.write_text(json.dumps({"config": config, "runs": runs}))
    return path


def _summary_lines(path: Path, steps: Sequence[int]) -> str:
    """Per track: the mean average precision of the page view, and the most any crawl could harvest."""
    by_track: dict[str, list[dict[str, Any]]] = {}
    for run in json.loads(path.read_text())["runs"]:
        if run["strategy"] == STRATEGIES[0]:
            by_track.setdefault(run["track"], []).append(run)
    lines = []
    for track, runs in by_track.items():
        ap = sum(r["page_view_ap"] for r in runs) / len(runs)
        lines.append(
            f"{track}: average precision of the page view against the true labels, mean over {len(runs)} cases: "
            f"{ap:.3f}\n"
        )
        targets = [r["reachable_targets"] for r in runs]
        bounds = "/".join(f"{100 * sum(min(1.0, t / k) for t in targets) / len(targets):.1f}" for k in steps)
        lines.append(
            f"{track}: on-topic pages reachable from the seeds, mean over the cases: {sum(targets) / len(targets):.1f};"
            f" the most any crawl can harvest at {'/'.join(map(str, steps))} pages: {bounds}%\n"
        )
    return "".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from focused.cli import OneLineParser, positive_int

    parser = OneLineParser(prog="python3 -m focused.bench.studies.ceiling", description=__doc__.splitlines()[0])
    parser.add_argument("--tracks", default="webkb,wiki", help="comma-separated: webkb, wiki")
    parser.add_argument("--budget", type=positive_int, default=250, help="pages per simulated crawl")
    parser.add_argument("--out", type=Path, default=Path("results/ceiling"), help="folder (its cache/ is the bench's)")
    parser.add_argument("--page-view", choices=PAGE_VIEWS, default="critic", help="the page view to judge pages with")
    parser.add_argument("--reference", type=Path, help="a bench.json with baseline and both oracles, for G")
    args = parser.parse_args(argv)
    names = [t for t in args.tracks.split(",") if t]
    unknown = [t for t in names if t not in TRACKS] or ([] if names else [args.tracks])
    if unknown:
        parser.error(f"unknown track {unknown[0]!r}; valid: {', '.join(TRACKS)}")
    if args.reference is not None and not args.reference.is_file():
        parser.error(f"no such bench.json: {args.reference}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        path = run_ceiling(names, args.budget, args.out, args.page_view)
    except TrackError as exc:
        parser.error(str(exc))
    from focused.bench.curves import report

    steps = [k for k in (50, 100, 150, 200, 250, 500, 1000) if k <= args.budget]
    table = report([path], steps, args.reference) + _summary_lines(path, steps)
    path.with_suffix(".txt").write_text(table + "\n")
    sys.stdout.write(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
