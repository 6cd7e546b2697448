"""Frontier policies: how the outlinks of a fetched page are scored.

Scrapy-free. A strategy gets the fetched page (its URL, depth and the critic's
verdict) and the URLs it links to, and returns one score in [0, 1] per link;
:func:`focused.priority.score_to_priority` turns scores into priorities.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from focused.learning.critic import Topic, Verdict

STRATEGIES = ("bfs", "baseline", "oracle")


@dataclass(frozen=True)
class FetchedPage:
    """What a strategy knows about the source page u of the links it scores."""

    url: str
    depth: int
    verdict: Verdict
    html: str = ""


class Strategy(Protocol):
    name: str

    def score(self, page: FetchedPage, links: Sequence[str]) -> list[float]: ...


class BreadthFirst:
    """Breadth-first: shallower links first; ties in discovery order."""

    name = "bfs"

    def score(self, page: FetchedPage, links: Sequence[str]) -> list[float]:
        return [1.0 / (2.0 + page.depth)] * len(links)


class Baseline:
    """The paper's baseline best-first crawler: every outlink of u gets Pr(c*|u)."""

    name = "baseline"

    def score(self, page: FetchedPage, links: Sequence[str]) -> list[float]:
        return [page.verdict.relevance] * len(links)


class Oracle:
    """Benchmark bound: a link scores 1 when its target's true label is on topic.

    ``label_of`` maps a URL to its ground-truth label (``None`` if unknown).
    """

    name = "oracle"

    def __init__(self, topic: Topic, label_of: Callable[[str], str | None]) -> None:
        self.topic = topic
        self.label_of = label_of

    def score(self, page: FetchedPage, links: Sequence[str]) -> list[float]:
        scores = []
        for url in links:
            label = self.label_of(url)
            scores.append(1.0 if label and self.topic.matches(label) else 0.0)
        return scores
