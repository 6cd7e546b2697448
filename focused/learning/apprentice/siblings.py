"""Sibling feedback: a waiting link gains when its source page's fetched links led to relevant pages. Scrapy-free.

The paper's online feedback reaches a waiting link only through the apprentice,
which learns link contexts from a batch of pages and switches in after
hundreds. Aggarwal et al. (2001) use a faster signal, the *sibling* factor: a
page whose other children were on topic is a hub, so its unfetched children are
worth more. Here it is a correction of the link's logit, live from the first
page judged:

    term(u) = γ · (logit q_u − logit p̄),   q_u = (R_u + m·p̄) / (n_u + m),

where ``n_u`` links of the source page u lead to pages judged so far, ``R_u``
is the sum of the critic's Pr(c*|v) over those pages, ``p̄`` is the mean
relevance of every page judged in the crawl (smoothed) and ``m`` the
pseudo-count that shrinks a page of few judged children towards it. A page none
of whose children has been judged gets 0; one whose judged children were on
topic more often than the crawl's pages gets a positive term; a waiting URL of
several parents takes the best. The term moves priorities only when the
frontier is re-scored (every ``refresh`` pages, see the crawler's feedback loop).

A link's source page travels with its payload as a 24-bit tag (:func:`source_tag`),
the last column of the payload's side views (exact in float32), so that a
frontier store keeps it without another format.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from focused.learning.apprentice.payload import LinkPayload, page_key, target_group

__all__ = ["TAG_BITS", "SiblingFeedback", "payload_tags", "source_tag"]

#: Bits of a source page's tag: integers below 2**24 are exact in float32.
TAG_BITS = 24
_MASK = (1 << TAG_BITS) - 1
#: Relevances are kept away from 0 and 1 before a logit.
_EPS = 1e-3
#: Terms of at most this many links are looked up source by source; more (a re-scoring) through a sorted
#: table of every source, rebuilt once after new evidence (rebuilding it per page would cost O(pages)).
_FEW = 4096


def source_tag(url: str) -> float:
    """The tag of page ``url`` as a source of links: 24 bits of its :func:`target_group`, as a float."""
    return float(target_group(page_key(url)) & _MASK)


def payload_tags(payloads: Sequence[LinkPayload], n_views: int = 2) -> np.ndarray:
    """The source tag of each payload (its side column after the ``n_views`` views), −1 if it has none."""
    return np.fromiter(
        (p.side[n_views] if p.side is not None and len(p.side) > n_views else -1.0 for p in payloads),
        dtype=np.float64,
        count=len(payloads),
    )


class SiblingFeedback:
    """Per-source counts of judged children and the logit term they give (module docstring).

    Parameters
    ----------
    weight
        γ, the term's weight in logit units (> 0).
    pseudo_count
        ``m``: judged children that weigh as much as the crawl's mean relevance.
    spread_scale
        ``s`` (0: off): a source's term is scaled by 1 / (1 + (σ_u / s)²), σ_u the spread (standard
        deviation) of the critic's anchor logits over u's links. A list of alike links (names) keeps its
        term; a page whose anchors the critic already tells apart (an article) gets little.
    """

    def __init__(self, weight: float, pseudo_count: float = 2.0, spread_scale: float = 0.0) -> None:
        if not weight > 0:
            raise ValueError(f"the sibling weight must be > 0, got {weight}")
        if not pseudo_count > 0:
            raise ValueError(f"the sibling pseudo-count must be > 0, got {pseudo_count}")
        self.weight = float(weight)
        self.pseudo_count = float(pseudo_count)
        self.spread_scale = float(spread_scale)
        #: tag -> [n judged children, sum of their relevance, sum of the prior's scores of their links (no
        #: term reads it; kept in the checkpoints' layout), the spread of the critic's anchor logits over the
        #: source's links]
        self._children: dict[int, list[float]] = {}
        self.pages = 0
        self.relevance_sum = 0.0
        self._table: tuple[np.ndarray, np.ndarray] | None = None  # sorted tags, their counts

    # -- evidence ---------------------------------------------------------------------

    def observe(
        self, tags: np.ndarray | list[float], relevance: float, prior: np.ndarray | list[float] | None = None
    ) -> None:
        """Links from the source pages ``tags`` (one per link), scored ``prior`` by the critic's views,
        lead to a page judged ``relevance``."""
        if isinstance(tags, list) and (prior is None or isinstance(prior, list)):  # a few links: no arrays
            keys = [int(t) for t in tags]
            expected = [0.0] * len(keys) if prior is None else [float(x) for x in prior]
        else:
            keys = np.asarray(tags, dtype=np.float64).astype(np.int64).tolist()
            expected = [0.0] * len(keys) if prior is None else np.asarray(prior, dtype=np.float64).tolist()
        for tag, score in zip(keys, expected, strict=True):
            counts = self._children.setdefault(tag, [0.0, 0.0, 0.0, 0.0])
            counts[0] += 1.0
            counts[1] += float(relevance)
            counts[2] += score
        self._table = None

    def observe_payloads(
        self, payloads: Sequence[LinkPayload], relevance: float, prior: Callable[[np.ndarray], np.ndarray]
    ) -> None:
        """:meth:`observe` the links of tagged payloads (two views, then the tag); ``prior`` scores the views."""
        sides = [p.side for p in payloads if p.side is not None and len(p.side) == 3]  # untagged: from before
        if sides:
            views = np.array(sides, dtype=np.float64)
            self.observe(views[:, 2], relevance, prior(views[:, :2]))

    def observe_links_to_judged(
        self, payloads: Sequence[LinkPayload], relevances: Sequence[float], prior: Callable[[np.ndarray], np.ndarray]
    ) -> None:
        """A page's links to pages judged earlier (``relevances``, one each), in one pass: as
        :meth:`observe_payloads` link by link, without array work per link."""
        kept = [
            (p.side, r) for p, r in zip(payloads, relevances, strict=True) if p.side is not None and len(p.side) == 3
        ]
        if not kept:
            return
        views = np.array([side for side, _ in kept], dtype=np.float64)
        scores = prior(views[:, :2])
        for (_, relevance), tag, score in zip(kept, views[:, 2].tolist(), scores.tolist(), strict=True):
            self.observe([tag], relevance, [score])

    def note_source(self, payloads: Sequence[LinkPayload]) -> None:
        """The links of one fetched page (tagged payloads): with ``spread_scale``, note their anchors' spread,
        source by source."""
        sides = [p.side for p in payloads if p.side is not None and len(p.side) == 3]
        if self.spread_scale <= 0 or not sides:
            return
        views = np.array(sides, dtype=np.float64)
        tags, at = np.unique(views[:, 2].astype(np.int64), return_inverse=True)
        n = np.bincount(at, minlength=len(tags))
        mean = np.bincount(at, weights=views[:, 1], minlength=len(tags)) / n
        sq = np.bincount(at, weights=views[:, 1] ** 2, minlength=len(tags)) / n
        for tag, spread in zip(tags.tolist(), np.sqrt(np.maximum(sq - mean**2, 0.0)).tolist(), strict=True):
            self._children.setdefault(tag, [0.0, 0.0, 0.0, 0.0])[3] = spread
        self._table = None

    def frozen(self) -> SiblingFeedback:
        """A copy of the counts as they are now (the sorted table, never changed in place, is shared)."""
        twin = copy.copy(self)
        twin._children = {tag: counts.copy() for tag, counts in self._children.items()}
        return twin

    def page_judged(self, relevance: float) -> None:
        self.pages += 1
        self.relevance_sum += float(relevance)

    def _unit_terms(self, tags: Iterable[int]) -> dict[int, float]:
        """The term of each source in ``tags`` with γ = 1 (as :meth:`term`), in Python floats: no array per
        source."""
        p, m, scale = self.mean_relevance, self.pseudo_count, self.spread_scale
        logit_p = _logit(p)
        units = {}
        for tag in tags:
            counts = self._children.get(tag)
            if counts is None:
                units[tag] = 0.0
                continue
            n, total, _, spread = counts
            q = min(max((total + m * p) / (n + m), _EPS), 1.0 - _EPS)
            damping = 1.0  # as _damping: 1 / (1 + (σ_u / s)²), the square a product as NumPy's is
            if scale > 0:
                ratio = spread / scale
                damping = 1.0 / (1.0 + ratio * ratio)
            units[tag] = (_logit(q) - logit_p) * damping
        return units

    @property
    def mean_relevance(self) -> float:
        """p̄: the mean relevance of the pages judged, with one pseudo-page at ½."""
        return min(max((self.relevance_sum + 0.5) / (self.pages + 1), _EPS), 1.0 - _EPS)

    # -- the term ---------------------------------------------------------------------

    def term(self, tags: np.ndarray) -> np.ndarray:
        """The logit term of links from the source pages ``tags`` (0 for a source of no judged child)."""
        tags = np.asarray(tags, dtype=np.float64).astype(np.int64)  # −1: no tag, never a source's
        out = np.zeros(len(tags), dtype=np.float64)
        weight = self.weight
        if not self._children or not len(tags):
            return out
        if len(tags) <= _FEW:  # a page's own links (one source): dict look-ups, no sorted table to rebuild
            listed = tags.tolist()
            units = self._unit_terms(set(listed))
            return weight * np.array([units[tag] for tag in listed], dtype=np.float64)
        keys, counts = self._sorted()
        at = np.clip(np.searchsorted(keys, tags), 0, len(keys) - 1)
        known = keys[at] == tags
        if not known.any():
            return out
        n, total, _, spread = counts[at[known]].T
        p, m = self.mean_relevance, self.pseudo_count
        q = np.clip((total + m * p) / (n + m), _EPS, 1.0 - _EPS)
        out[known] = weight * (np.log(q / (1.0 - q)) - np.log(p / (1.0 - p))) * self._damping(spread)
        return out

    def _damping(self, spread: np.ndarray) -> np.ndarray:
        """1 / (1 + (σ_u / s)²) of sources of anchor spread σ_u; 1 without ``spread_scale``."""
        if self.spread_scale <= 0:
            return np.ones(len(spread))
        return 1.0 / (1.0 + (spread / self.spread_scale) ** 2)

    def _sorted(self) -> tuple[np.ndarray, np.ndarray]:
        if self._table is None:
            keys = np.fromiter(self._children, dtype=np.int64, count=len(self._children))
            counts = np.array(list(self._children.values()), dtype=np.float64).reshape(-1, 4)
            order = np.argsort(keys)
            self._table = keys[order], counts[order]
        return self._table

    # -- checkpoints: plain arrays ----------------------------------------------------------

    def state_arrays(self) -> dict[str, np.ndarray]:
        keys, counts = self._sorted() if self._children else (np.zeros(0, np.int64), np.zeros((0, 4)))
        return {
            "siblings_tags": keys.astype(np.int64),
            "siblings_counts": counts.copy(),
            "siblings_pages": np.array([self.pages, self.relevance_sum], dtype=np.float64),
        }

    def restore_arrays(self, arrays: Mapping[str, np.ndarray]) -> None:
        if "siblings_tags" not in arrays:
            return
        tags = np.asarray(arrays["siblings_tags"], dtype=np.int64)
        counts = np.asarray(arrays["siblings_counts"], dtype=np.float64).reshape(-1, 4)
        if len(tags) != len(counts) or (tags.size and (tags.min() < 0 or tags.max() > _MASK)):
            raise ValueError("sibling counts do not match their tags")
        self._children = {int(t): row for t, row in zip(tags.tolist(), counts.tolist(), strict=True)}
        pages, total = np.asarray(arrays["siblings_pages"], dtype=np.float64).ravel()[:2]
        self.pages, self.relevance_sum = int(pages), float(total)
        self._table = None


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))
