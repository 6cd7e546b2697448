"""Where to cut a positive-unlabelled regression, and how held-out examples fare there.

Scrapy-free. :func:`~focused.learning.critic.examples.train_examples_critic` scores every example and every
background page by a cross-validation model that did not train on it; here the threshold is placed among those
held-out scores (a percentile of the background's, :func:`level_of` and :func:`cut_at`) and the held-out report
the user reads is made (:class:`HoldoutReport`, with its one-line warning).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "MAX_BACKGROUND_ACCEPTED",
    "MAX_LEVEL",
    "MIN_ACCEPTED",
    "MIN_LEVEL",
    "THRESHOLD",
    "HoldoutReport",
    "cut_at",
    "holdout_report",
    "level_of",
    "percentile_of",
]

#: A critic that accepts fewer held-out examples, or more of the background, gets a warning.
MIN_ACCEPTED = 0.8
MAX_BACKGROUND_ACCEPTED = 0.05
#: Verdicts at or above this are on topic (the crawl's FOCUSED_RELEVANCE_THRESHOLD default).
THRESHOLD = 0.5
#: Bounds of the threshold's percentile among the held-out background scores: never below MIN_LEVEL (at most
#: 1 − MIN_LEVEL of the background accepted) nor above MAX_LEVEL (the background holds pages of the topic too: a
#: threshold above all of it would reject them).
MIN_LEVEL = 0.8
MAX_LEVEL = 0.99


@dataclass(frozen=True)
class HoldoutReport:
    """How the positives fare when held out (k-fold cross-validation), and the final model on its own examples."""

    folds: int
    positives: int
    background: int
    #: share of held-out positives, and of held-out background pages, at or above the threshold, each fold's
    #: threshold chosen without its positives
    accepted: float
    background_accepted: float
    #: ROC AUC of held-out positives against held-out background, and the positives' median rank among them
    #: (1: above every background page)
    auc: float
    median_percentile: float
    #: the examples the final model judges off topic (it trained on them)
    own_rejected: int
    #: the threshold's percentile among the background's scores
    level: float = MIN_LEVEL
    #: each held-out positive's percentile among the background
    held_out: list[float] = field(default_factory=list, repr=False)

    def lines(self) -> list[str]:
        """The report as the user reads it: two lines, and the warning line when there is one."""
        out = [
            f"held out ({self.folds}-fold): {self.accepted:.0%} of {self.positives} positives and "
            f"{self.background_accepted:.1%} of {self.background} background pages get Pr(topic) >= {THRESHOLD}; "
            f"ROC AUC {self.auc:.3f}",
            f"held-out positives rank above {self.median_percentile:.1%} of the background (median); threshold "
            f"at the background's {100 * self.level:.1f}th percentile; the final model accepts "
            f"{self.positives - self.own_rejected} of its {self.positives} examples",
        ]
        warning = self.warning()
        return [*out, warning] if warning else out

    def warning(self) -> str | None:
        """One line when the model would reject its own examples (or held-out ones), else None."""
        if self.own_rejected:
            return (
                f"warning: the critic judges {self.own_rejected} of its own {self.positives} examples off topic: "
                "add examples, or pass --negative pages and --keyword words"
            )
        if self.background_accepted > MAX_BACKGROUND_ACCEPTED:
            return (
                f"warning: the critic accepts {self.background_accepted:.0%} of the background to keep "
                f"{self.accepted:.0%} of held-out examples (ROC AUC {self.auc:.2f}): the examples are hard to tell "
                "from other pages, or the background holds many of the topic; give more examples, of one topic, "
                "or --negative pages"
            )
        if self.accepted < MIN_ACCEPTED:
            return (
                f"warning: only {self.accepted:.0%} of held-out examples are judged on topic: the crawl will miss "
                "pages like them; add examples (or --keyword words)"
            )
        return None

    def to_dict(self) -> dict[str, Any]:
        """The report for a model file's metadata (plain numbers)."""
        return {
            "folds": self.folds,
            "positives": self.positives,
            "background": self.background,
            "accepted": self.accepted,
            "background_accepted": self.background_accepted,
            "auc": self.auc,
            "median_percentile": self.median_percentile,
            "own_rejected": self.own_rejected,
            "level": self.level,
        }


def percentile_of(sorted_scores: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The share of ``sorted_scores`` below each of ``x`` (ties count half)."""
    below = np.searchsorted(sorted_scores, x, side="left")
    ties = np.searchsorted(sorted_scores, x, side="right") - below
    return (below + ties / 2.0) / max(1, len(sorted_scores))


def level_of(percentiles: np.ndarray) -> float:
    """The background percentile of the threshold, from the held-out positives' percentiles.

    Lee and Liu's criterion for positive-unlabelled data (ICML 2003): the threshold that maximises
    recall² / Pr(accepted), recall measured on held-out positives and Pr(accepted) on the unlabelled
    background (1 − level), which is proportional to precision × recall without knowing which background
    pages are on topic. Kept within [``MIN_LEVEL``, ``MAX_LEVEL``]."""
    if not len(percentiles):
        return MIN_LEVEL
    candidates = np.clip(np.unique(percentiles), MIN_LEVEL, MAX_LEVEL)
    recall = np.array([np.mean(percentiles >= level) for level in candidates])
    score = recall**2 / np.maximum(1.0 - candidates, 1e-3)
    return float(candidates[int(np.argmax(score))])


def cut_at(sorted_bg: np.ndarray, positives: np.ndarray, level: float) -> float:
    """The threshold: percentile ``level`` of the background's scores ``sorted_bg``, raised to the middle of
    the gap between the lowest held-out positive above it and the highest background score below that
    positive. Moving the cut up through that gap loses no held-out positive and accepts fewer background
    pages, and its middle keeps a margin on both sides: a page with a few of the topic's words, scoring a
    little above the background, stays off topic when the examples score far above it."""
    at = float(np.quantile(sorted_bg, level))
    above = positives[positives >= at]
    if not len(above):
        return at
    lowest = float(above.min())
    below = sorted_bg[sorted_bg < lowest]
    if not len(below):
        return at
    return max(at, (float(below[-1]) + lowest) / 2.0)


def holdout_report(
    k: int,
    percentile: np.ndarray,
    accepted: np.ndarray,
    background_accepted: float,
    level: float,
    pos: np.ndarray,
    bg: np.ndarray,
    own_rejected: int,
) -> HoldoutReport:
    """The held-out figures: positives' percentiles among the background, the rule's acceptance, and the
    fold models' ROC AUC of held-out positives (scores ``pos``) against held-out background (``bg``)."""
    return HoldoutReport(
        folds=k,
        positives=len(pos),
        background=len(bg),
        accepted=float(np.mean(accepted)),
        background_accepted=background_accepted,
        auc=float(percentile_of(np.sort(bg), pos).mean()),
        median_percentile=float(np.median(percentile)),
        own_rejected=own_rejected,
        level=level,
        held_out=[float(x) for x in percentile],
    )
