"""What "relevant" means in a crawl: the critic's Pr(c*|page), or a user's predicate (``-a predicate=...``).

Without a predicate a page's relevance is the critic's Pr(c*|page) and it is
relevant from ``FOCUSED_RELEVANCE_THRESHOLD`` on. With one, the predicate
decides: relevance is 1.0 when the page satisfies it and 0.0 otherwise, in the
pipeline's labels, the crawl database, the harvest stats and the feedback the
learning strategies get. The critic is still there for ``class:`` atoms (and
the strategies that read it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from focused.errors import ConfigError
from focused.learning.critic.topics import Topic, UnknownTopicError, Verdict
from focused.relevance.predicates import Page, Predicate, PredicateError, parse_predicate

__all__ = ["RelevanceDefinition", "load_predicate"]


def load_predicate(spec: str, critic: Any) -> tuple[Predicate, dict[str, Topic]]:
    """Parse ``spec`` and resolve its ``class:`` names against ``critic``; ConfigError (one line) if bad."""
    try:
        predicate = parse_predicate(spec)
    except PredicateError as exc:
        raise ConfigError(str(exc)) from exc
    topics: dict[str, Topic] = {}
    for atom in predicate.class_atoms():
        try:
            topics[atom.name] = critic.resolve_topic(atom.name)
        except UnknownTopicError as exc:
            valid = ", ".join(critic.topics()[:40])
            raise ConfigError(
                f"bad predicate at position {atom.position + 1} of {spec!r}: the critic has no class "
                f"{atom.name!r}. Valid classes: {valid}"
            ) from exc
    return predicate, topics


class RelevanceDefinition:
    """The relevance of a fetched page, by the critic or by a predicate."""

    def __init__(self, critic: Any, threshold: float, predicate: Predicate | None = None,
                 class_topics: dict[str, Topic] | None = None) -> None:  # fmt: skip
        self.critic = critic
        self.threshold = threshold
        self.predicate = predicate
        self.class_topics = class_topics or {}

    def relevance(self, url: str, text: str, verdict: Verdict) -> float:
        """Pr(c*|page), or 1.0 / 0.0 by the predicate."""
        if self.predicate is None:
            return verdict.relevance
        posteriors: list[np.ndarray] = []

        def class_score(name: str) -> float:
            if not posteriors:  # once per page, and only when a class: atom is reached
                posteriors.append(self._posteriors(url, text))
            return float(np.clip(posteriors[0][self.class_topics[name].indices].sum(), 0.0, 1.0))

        return 1.0 if self.predicate(Page(url, text, class_score)) else 0.0

    def is_relevant(self, relevance: float) -> bool:
        return relevance >= self.threshold

    def _posteriors(self, url: str, text: str) -> np.ndarray:
        if hasattr(self.critic, "folds"):  # a cross-fitted critic judges a page by the fold blind to it
            return self.critic.posteriors([text], [url])[0]
        return self.critic.posteriors([text])[0]
