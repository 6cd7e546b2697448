"""An exploration term for links whose features the apprentice has little evidence on. Scrapy-free.

The apprentice learns a link context only from links whose targets the crawler
fetched, and the crawler fetches what the critic's views (or the model) already
rank high. Contexts that look unpromising to the critic, such as a department
page's list of course numbers, are then never tried, so never learned. This
term adds an optimistic, UCB-like bonus to a link's logit:

    bonus = β · decay(pages) · novelty(link),
    novelty = mean over the link's feature occurrences f of 1/√(1 + n_f),

where ``n_f`` is the number of training instances (links whose target has been
fetched and judged, as the apprentice learns them) that hold the hashed feature
``f``. A link of features never seen gets ``β``; a link whose every feature was
seen in many instances almost nothing. ``decay = H / (H + pages)`` with the
half-life ``H`` (pages fetched; ``H = 0``: no decay) lets the crawl exploit more
as it goes. ``n_f`` is counted live, from the first page on, independently of the
learner's batches.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["NoveltyBonus", "shift_logits"]


def shift_logits(scores: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """``σ(logit(score) + offset)``: scores moved in logit space, still inside (0, 1) (the exploration
    bonus and the sibling term, :mod:`focused.learning.apprentice.siblings`)."""
    p = np.clip(np.asarray(scores, dtype=np.float64), 1e-12, 1.0 - 1e-12)
    return 1.0 / (1.0 + np.exp(-(np.log(p) - np.log1p(-p) + offset)))


class NoveltyBonus:
    """Live per-feature evidence counts and the exploration bonus they give (module docstring).

    Parameters
    ----------
    n_features
        Dimension of the hashed feature space.
    weight
        β, the bonus of a link of unseen features, in logit units (> 0).
    half_life
        ``H`` of the decay, in pages fetched; 0 keeps β for the whole crawl.
    """

    def __init__(self, n_features: int, weight: float, half_life: float = 0.0) -> None:
        if not weight > 0:
            raise ValueError(f"the exploration weight must be > 0, got {weight}")
        if not half_life >= 0:
            raise ValueError(f"the exploration half-life must be >= 0, got {half_life}")
        self.n_features = int(n_features)
        self.weight = float(weight)
        self.half_life = float(half_life)
        self.counts = np.zeros(self.n_features, dtype=np.float64)
        self.pages = 0

    def observe(self, ids: Sequence[np.ndarray]) -> None:
        """Training instances with these feature ids exist now (one array per instance; repeats count once)."""
        if not ids:
            return
        distinct = [np.unique(np.asarray(a, dtype=np.int64)) for a in ids]
        flat = np.concatenate(distinct) if distinct else np.zeros(0, np.int64)
        if flat.size:
            np.add.at(self.counts, flat, 1.0)

    def page_fetched(self) -> None:
        self.pages += 1

    def frozen(self) -> NoveltyBonus:
        """A copy of the counts as they are now."""
        twin = copy.copy(self)
        twin.counts = self.counts.copy()
        return twin

    @property
    def scale(self) -> float:
        """β · decay(pages) now."""
        scale = self.weight
        if self.half_life > 0:
            scale *= self.half_life / (self.half_life + self.pages)
        return scale

    def novelty(self, lengths: np.ndarray, flat_ids: np.ndarray) -> np.ndarray:
        """Mean 1/√(1 + n_f) over each link's feature occurrences (link i holds the next ``lengths[i]`` ids).

        A link without features is as novel as one of unseen features (1).
        """
        lengths = np.asarray(lengths, dtype=np.int64)
        out = np.ones(len(lengths), dtype=np.float64)
        if not flat_ids.size:
            return out
        w = 1.0 / np.sqrt(1.0 + self.counts[np.asarray(flat_ids, dtype=np.int64)])
        has = lengths > 0
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])[has]
        out[has] = np.add.reduceat(w, starts) / lengths[has]
        return out

    def bonus(self, lengths: np.ndarray, flat_ids: np.ndarray) -> np.ndarray:
        """The logit bonus of each link (see :meth:`novelty`)."""
        return self.scale * self.novelty(lengths, flat_ids)

    def bonus_rows(self, ids: Sequence[np.ndarray]) -> np.ndarray:
        """:meth:`bonus` of links given as one id array each."""
        lengths = np.fromiter((len(a) for a in ids), dtype=np.int64, count=len(ids))
        flat = np.concatenate([np.asarray(a, dtype=np.int64) for a in ids]) if ids else np.zeros(0, np.int64)
        return self.bonus(lengths, flat)

    def apply(self, scores: np.ndarray, bonus: np.ndarray) -> np.ndarray:
        """``σ(logit(score) + bonus)``: the scores with their bonus, still inside (0, 1)."""
        return shift_logits(scores, bonus)

    # -- checkpoints: the non-zero counts as plain arrays -------------------------------

    def state_arrays(self) -> dict[str, np.ndarray]:
        nz = np.flatnonzero(self.counts)
        return {
            "explore_ids": nz.astype(np.int64),
            "explore_counts": self.counts[nz].copy(),
            "explore_pages": np.array([self.pages], dtype=np.int64),
        }

    def restore_arrays(self, arrays: Mapping[str, np.ndarray]) -> None:
        if "explore_ids" not in arrays:
            return
        ids = np.asarray(arrays["explore_ids"], dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.n_features):
            raise ValueError("exploration feature ids out of range")
        self.counts = np.zeros(self.n_features, dtype=np.float64)
        self.counts[ids] = np.asarray(arrays["explore_counts"], dtype=np.float64)
        self.pages = int(np.asarray(arrays["explore_pages"]).ravel()[0])
