"""What every frontier policy shares: the page it scores links of, the scores it returns, and the
two policies that learn nothing (breadth-first and the paper's baseline).

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

from focused.learning.critic.topics import Topic, Verdict
from focused.page.parsed import ParsedPage


@dataclass(frozen=True)
class BuildContext:
    """What a strategy's builder reads: the crawl's settings, critic and topic, and its relevance."""

    #: Scrapy settings, or any object with their typed getters (read with :func:`focused.settings.access.setting`)
    settings: Any
    critic: Any
    topic: Topic
    #: the crawl's definition of a relevant page (:meth:`focused.relevance.RelevanceDefinition.relevance`)
    relevance_of: Callable[..., float]


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
    """Scores of a page's links, optional per-link payloads for the frontier, and those payloads encoded when the
    strategy encoded them already (:func:`~focused.frontier.payloads.encode_payloads`'s bytes)."""

    scores: list[float]
    payloads: list[Any] | None = None
    blobs: list[bytes] | None = None


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


def build_bfs(name: str, ctx: BuildContext) -> BreadthFirst:
    return BreadthFirst()


def build_baseline(name: str, ctx: BuildContext) -> Baseline:
    return Baseline()
