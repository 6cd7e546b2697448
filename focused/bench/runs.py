"""One benchmark crawl's figures: harvest, loss and recall at the checkpoints, from its crawl database."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from focused.bench.metrics import crawl_curve
from focused.bench.runner import CrawlResult
from focused.bench.tracks import Case, Track
from focused.learning.critic.load import load_critic

#: Pages after which harvest, loss and recall are read.
CHECKPOINTS = (100, 250, 500, 1000)


@dataclass
class Run:
    """One crawl's figures."""

    track: str
    group: str
    topic: str
    strategy: str
    repeat: int
    pages: int
    seconds: float
    true_harvest: dict[int, float]
    critic_harvest: dict[int, float]
    loss: dict[int, float]
    recall: dict[int, float]
    responses: int
    not_found: int
    non_html: int
    cumulative_loss: list[int] = field(repr=False)
    ok: bool = True
    apprentice: dict[str, Any] = field(default_factory=dict)


def crawl_figures(track: Track, case: Case, strategy: str, repeat: int, result: CrawlResult) -> Run:
    """The figures of a finished crawl, read from its crawl database and stats."""
    critic = load_critic(case.model)
    topic = critic.resolve_topic(case.topic)
    stats = result.stats
    curve = crawl_curve(str(result.spec.db), track.store.labels, topic) if result.spec.db.exists() else None
    pages = len(curve.urls) if curve else 0
    ks = [k for k in CHECKPOINTS if k <= result.spec.max_pages]
    return Run(
        track=track.name,
        group=case.group,
        topic=case.topic,
        strategy=strategy,
        repeat=repeat,
        pages=pages,
        seconds=round(result.seconds, 2),
        true_harvest={k: round(curve.true_harvest_at(k), 4) for k in ks} if curve else {},
        critic_harvest={k: round(curve.critic_harvest_at(k), 4) for k in ks} if curve else {},
        loss={k: round(curve.loss_at(k), 4) for k in ks} if curve else {},
        recall={k: round(curve.recall_at(k, set(case.targets), track.canonical), 4) for k in ks} if curve else {},
        responses=int(stats.get("downloader/response_count", 0)),
        not_found=int(stats.get("downloader/response_status_count/404", 0)),
        non_html=int(stats.get("focused/skipped/non_html", 0)),
        cumulative_loss=curve.cumulative_loss() if curve else [],
        ok=result.returncode == 0 and pages > 0,
        apprentice={k.rsplit("/", 1)[1]: v for k, v in stats.items() if k.startswith("focused/apprentice/")},
    )


def failed_run(track: Track, case: Case, strategy: str, repeat: int) -> Run:
    """A crawl that could not run (no figures, ``ok=False``)."""
    return Run(track.name, case.group, case.topic, strategy, repeat, 0, 0.0, {}, {}, {}, {}, 0, 0, 0, [], ok=False)
