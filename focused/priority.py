"""The one place where a relevance score becomes a Scrapy request priority."""

from __future__ import annotations

import math

import numpy as np

#: Priorities span ``0 .. PRIORITY_SCALE``; seeds sit above every scored link.
PRIORITY_SCALE = 1_000_000
SEED_PRIORITY = PRIORITY_SCALE + 1


def score_to_priority(score: float) -> int:
    """Map a score in [0, 1] to an integer priority (higher = sooner).

    Scrapy accepts only ``int`` priorities. Scores outside [0, 1] are clipped
    and NaN counts as 0, so a bad score can delay a link but never crash the
    crawl. Six decimal digits keep distinct calibrated scores distinct.
    """
    score = float(score)
    if math.isnan(score) or score <= 0.0:
        return 0
    if score >= 1.0:
        return PRIORITY_SCALE
    return round(score * PRIORITY_SCALE)


def scores_to_priorities(scores: np.ndarray) -> list[int]:
    """:func:`score_to_priority` of every score, in a few array operations (a re-score maps 100,000 at once).

    The same ints: ``np.rint`` rounds halves to even as ``round`` does, on the same float64 products.
    """
    scores = np.asarray(scores, dtype=np.float64)
    scaled = np.rint(np.clip(np.nan_to_num(scores, nan=0.0), 0.0, 1.0) * PRIORITY_SCALE)
    return scaled.astype(np.int64).tolist()


def priority_to_score(priority: int) -> float:
    """Inverse of :func:`score_to_priority` (for reporting)."""
    return min(max(priority, 0), PRIORITY_SCALE) / PRIORITY_SCALE
