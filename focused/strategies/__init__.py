"""Frontier policies: how the outlinks of a fetched page are scored.

Scrapy-free. A strategy gets the fetched page (its URL, depth, HTML and the
critic's verdict) and the URLs it links to, and returns one score in [0, 1]
per link, plus optionally one compact payload per link (the apprentice's link
features) that the frontier keeps for re-scoring;
:func:`focused.priority.score_to_priority` turns scores into priorities.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from focused.learning.apprentice.online import LinkPayload, OnlineApprentice
from focused.learning.critic import Topic, Verdict
from focused.page.parse import ParsedPage

#: The Markines et al. classifiers (focused.strategies.markines) are ``markines:CLASSIFIER-MODE``.
MARKINES_STRATEGIES = tuple(f"markines:{c}-{m}" for m in ("link", "page") for c in ("nb", "svm", "cosine"))
STRATEGIES = (
    "bfs", "baseline", "oracle", "oracle-lookahead", "apprentice", "apprentice-offline",
    "intelligent", "intelligent:content", "intelligent:url", "intelligent:link", "intelligent:sibling",
    *MARKINES_STRATEGIES,
)  # fmt: skip


@dataclass(frozen=True)
class FetchedPage:
    """What a strategy knows about the source page u of the links it scores."""

    url: str
    depth: int
    verdict: Verdict
    html: str = ""
    #: the spider's one parse of ``html`` (link features read it instead of parsing again)
    parsed: ParsedPage | None = None
    text: str | None = None  # the page's visible text, when the caller has it


@dataclass(frozen=True)
class Scored:
    """Scores of a page's links, and optional per-link payloads for the frontier."""

    scores: list[float]
    payloads: list[Any] | None = None


class Strategy(Protocol):
    name: str

    def score(self, page: FetchedPage, links: Sequence[str]) -> Scored: ...


class BreadthFirst:
    """Breadth-first: shallower links first; ties in discovery order."""

    name = "bfs"

    def score(self, page: FetchedPage, links: Sequence[str]) -> Scored:
        return Scored([1.0 / (2.0 + page.depth)] * len(links))


class Baseline:
    """The paper's baseline best-first crawler: every outlink of u gets Pr(c*|u), as the critic's
    parent view (:attr:`~focused.learning.critic.topics.Verdict.parent_view`: naive Bayes, also with a verdict head)."""

    name = "baseline"

    def score(self, page: FetchedPage, links: Sequence[str]) -> Scored:
        return Scored([page.verdict.parent_view] * len(links))


class Oracle:
    """Benchmark bound: a link scores 1 when its target's true label is on topic.

    ``label_of`` maps a URL to its ground-truth label (``None`` if unknown).
    """

    name = "oracle"

    def __init__(self, topic: Topic, label_of: Callable[[str], str | None]) -> None:
        self.topic = topic
        self.label_of = label_of

    def score(self, page: FetchedPage, links: Sequence[str]) -> Scored:
        scores = []
        for url in links:
            label = self.label_of(url)
            scores.append(1.0 if label and self.topic.matches(label) else 0.0)
        return Scored(scores)


class ApprenticeStrategy:
    """The paper's enhanced crawler: links scored by the apprentice, Pr(HIGH | ⟨t,d⟩ features).

    Before the apprentice has a model (online mode, first batches) a link gets
    the critic's blended views of u and of the anchor (or, without a snippet
    critic, the baseline's Pr(c*|u)). The per-link features go to the frontier
    as payloads so that a retrained model can re-score waiting URLs.
    """

    def __init__(self, online: OnlineApprentice, name: str = "apprentice") -> None:
        self.online = online
        self.name = name
        #: Where the links of a fetched page go until their targets are judged (shared learning replaces it).
        self.observe_links: Callable[[Sequence[str], Sequence[LinkPayload]], object] = online.observe_links

    def score(self, page: FetchedPage, links: Sequence[str]) -> Scored:
        payloads = self.online.link_features(
            page.url, page.html, page.verdict.parent_view, page.verdict.top_classes, links, parsed=page.parsed
        )
        self.observe_links(links, payloads)
        scores = self.online.score(payloads)
        if scores is None:
            scores = [page.verdict.parent_view] * len(links)
        return Scored(scores, payloads)
