"""Online relevance feedback: the apprentice learns from the critic during a crawl.

Scrapy-free (the crawler's adapters are :class:`focused.strategies.ApprenticeStrategy`
and :class:`focused.extensions.apprentice.base.RelevanceFeedback`). The loop of the paper's §2.2:

1. When a page u is fetched, the ⟨t,d⟩ features of each of its links (u,v) are
   extracted in one pass (:func:`~focused.learning.apprentice.linkids.page_link_ids`, the ids of
   :func:`~focused.learning.apprentice.features.extract_link_features`)
   and kept as compact hashed ids, both with the waiting request (so the
   frontier can be re-scored) and here, keyed by v, until v is fetched.
2. When v is fetched and the critic has judged it, every kept link (u,v)
   becomes a training instance ⟨features(u,v), Pr(c*|v)⟩. A link found to a
   page fetched earlier becomes an instance at once. Instances wait in a
   buffer until the current batch of ``batch_size`` pages is complete.
3. At the end of a batch the buffered instances are added to the learner; once
   it has enough (``Apprentice.min_instances``, both buckets non-empty) a new
   frozen model is fitted (in a thread, by the caller), switched in, and the
   waiting frontier is re-scored with it (:meth:`OnlineApprentice.rescore`).

Until the first model exists, links get the baseline's Pr(c*|u), or, with a
snippet critic (the default in a crawl), a blend of the critic's two views of
the link: ``σ((1 − w)·logit Pr(c*|u) + w·logit Pr(c*|anchor))``. The same two
views are side features of every instance, which the model stacks with the
⟨t,d⟩ evidence (see :mod:`focused.learning.apprentice`).
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from focused.learning.apprentice.explore import NoveltyBonus, shift_logits
from focused.learning.apprentice.instances import kept_past_bound
from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.linkbatch import LinkBatch
from focused.learning.apprentice.linkids import parse_for_links
from focused.learning.apprentice.model import ApprenticeModel
from focused.learning.apprentice.pagelinks import page_payloads
from focused.learning.apprentice.payload import LinkPayload, encode_links, page_key, split_tagged, tagged_lengths
from focused.learning.apprentice.payload import unpack as _unpack
from focused.learning.apprentice.siblings import SiblingFeedback, payload_tags
from focused.learning.apprentice.state import OnlineState
from focused.learning.critic.snippet import SnippetCritic
from focused.page.parsed import ParsedPage
from focused.priority import scores_to_priorities

logger = logging.getLogger(__name__)

__all__ = ["OnlineApprentice"]


class OnlineApprentice(OnlineState):
    """The apprentice's state during one crawl (see the module docstring).

    Parameters
    ----------
    learner
        The incremental learner; a pre-trained one (``Apprentice.load``) warm-starts it.
    d_max
        Largest DOM offset of the ⟨t,d⟩ features.
    class_features
        Add the critic's top classes of u with their prefixes (§3.8).
    batch_size
        Pages per batch (the paper's B): instances are added and the model is
        retrained when a batch completes.
    learn
        ``False`` freezes the apprentice: a pre-trained model serves the whole
        crawl (the paper's §3.5 offline mode).
    aggregation
        How the scores of a URL's several parents combine when the frontier is
        re-scored (``first``, ``max``, ``mean``), as in the scheduler.
    snippet_critic
        The critic applied to anchor texts; required when the learner has side
        features (``learner.n_side == 2``), unused otherwise.
    anchor_weight
        ``w`` of the priority before the first model (module docstring).
    explore
        An exploration bonus for links of little-seen features (:mod:`focused.learning.apprentice.explore`).
    siblings
        Sibling feedback (:mod:`focused.learning.apprentice.siblings`; needs side features): the source page's
        tag becomes the last column of every payload's side views.
    """

    def __init__(
        self,
        learner: Apprentice,
        *,
        d_max: int = 5,
        class_features: bool = False,
        batch_size: int = 200,
        learn: bool = True,
        aggregation: str = "max",
        snippet_critic: SnippetCritic | None = None,
        anchor_weight: float = 0.7,
        explore: NoveltyBonus | None = None,
        siblings: SiblingFeedback | None = None,
        max_pending: int = 0,
    ) -> None:
        if learner.n_side not in (0, 2):
            raise ValueError(f"the apprentice has {learner.n_side} side features; the crawler computes 0 or 2")
        if learner.n_side and snippet_critic is None:
            raise ValueError("an apprentice with side features needs a snippet critic")
        if not 0.0 <= anchor_weight <= 1.0:
            raise ValueError(f"anchor_weight must be in [0, 1], got {anchor_weight}")
        self.learner = learner
        self.snippet_critic = snippet_critic if learner.n_side else None
        self.anchor_weight = float(anchor_weight)
        self.d_max = int(d_max)
        self.class_features = bool(class_features)
        self.batch_size = max(1, int(batch_size))
        self.learn = learn
        self.aggregation = aggregation
        self.model: ApprenticeModel | None = None
        self._lock = threading.Lock()
        #: the links of fetched pages whose targets are not judged yet: per target, their payloads' tagged bytes
        #: joined (:func:`~focused.learning.apprentice.payload.encode_links`: the ids as 2-byte gaps where they
        #: fit; no object per link for the garbage collector to walk)
        self._pending: dict[str, bytearray] = {}
        self._n_pending = 0
        #: links kept in ``_pending`` at most (0: no limit), and the links dropped to keep to it
        self.max_pending = max(0, int(max_pending))
        self.pending_dropped = 0
        self._fetched: dict[str, float] = {}
        self._buffer: list[tuple[LinkPayload, float]] = []  # payload, target's relevance
        self._pages_in_batch = 0
        self.instances_seen = 0
        self.explore = explore
        self.siblings = siblings if learner.n_side else None

    # -- features -----------------------------------------------------------------

    def link_features(
        self,
        url: str,
        html: str,
        relevance: float,
        top_classes: Sequence[str],
        links: Sequence[str],
        *,
        parsed: ParsedPage | None = None,
    ) -> list[LinkPayload]:
        """The payload of each link (u, v) of page u, in the order of ``links`` (see
        :func:`~focused.learning.apprentice.pagelinks.page_payloads`); ``parsed`` is the page's one parse, if the
        caller has it."""
        return page_payloads(
            parse_for_links(html, url) if parsed is None else parsed,
            url,
            links,
            relevance=relevance,
            top_classes=top_classes,
            n_features=self.learner.n_features,
            d_max=self.d_max,
            with_classes=self.class_features,
            snippet_critic=self.snippet_critic,
            tagged=self.siblings is not None,
        )

    # -- the feedback loop --------------------------------------------------------

    def observe_links(
        self, links: Sequence[str], payloads: Sequence[LinkPayload], blobs: Sequence[bytes] | None = None
    ) -> None:
        """Remember the links of a fetched page until their targets are fetched (``blobs``: the payloads'
        :func:`~focused.learning.apprentice.payload.encode_links`, when the caller has them)."""
        with self._lock:
            if self.siblings is not None:
                self.siblings.note_source(payloads)
            to_judged: list[LinkPayload] = []
            judged: list[float] = []
            waiting: list[tuple[str, int]] = []
            for i, (link, payload) in enumerate(zip(links, payloads, strict=True)):
                key = page_key(link)
                relevance = self._fetched.get(key)
                if relevance is not None:
                    self._buffer.append((payload, relevance))
                    if self.explore is not None:
                        self.explore.observe([payload.ids])
                    to_judged.append(payload)
                    judged.append(relevance)
                else:
                    waiting.append((key, i))
            # kept as their tagged bytes, the ids as 2-byte gaps where they fit (half of their int32 bytes)
            if blobs is None:
                encoded = encode_links([payloads[i] for _, i in waiting])
            else:
                encoded = [blobs[i] for _, i in waiting]
            for (key, _), blob in zip(waiting, encoded, strict=True):
                self._pending.setdefault(key, bytearray()).extend(blob)
            self._n_pending += len(waiting)
            if self.max_pending and self._n_pending > self.max_pending:
                self._drop_pending()
            if self.siblings is not None and to_judged:
                self.siblings.observe_links_to_judged(to_judged, judged, self.prior)

    def _drop_pending(self) -> None:
        """Forget the links to the targets met longest ago (the dict's order), down to
        :func:`~focused.learning.apprentice.instances.kept_past_bound` of ``max_pending``: one pass over them, so a
        crawl at its bound pays for it once in a while."""
        goal, n = kept_past_bound(self.max_pending), self._n_pending
        doomed = []
        for key, joined in self._pending.items():
            if n <= goal:
                break
            n -= len(tagged_lengths(joined))
            doomed.append(key)
        for key in doomed:
            del self._pending[key]
        self.pending_dropped += self._n_pending - n
        self._n_pending = n

    def observe_page(self, urls: Sequence[str], relevance: float) -> bool:
        """A page (and the URLs it was requested under) was judged by the critic.

        Returns ``True`` when a batch is complete (time to train).
        """
        with self._lock:
            found: list[LinkPayload] = []
            for key in (page_key(url) for url in urls):
                self._fetched[key] = float(relevance)
                waiting = self._pending.pop(key, None)
                if waiting is not None:
                    links = split_tagged(waiting)
                    self._n_pending -= len(links)
                    found += links
            self._buffer.extend((payload, float(relevance)) for payload in found)
            if self.explore is not None:
                self.explore.observe([p.ids for p in found])
                self.explore.page_fetched()
            if self.siblings is not None:
                self.siblings.observe_payloads(found, relevance, self.prior)
                self.siblings.page_judged(relevance)
            self._pages_in_batch += 1
            return self.learn and self._pages_in_batch >= self.batch_size

    def take_batch(self) -> tuple[list[LinkPayload], np.ndarray]:
        """The buffered instances (link payloads and target relevances); starts a new batch."""
        with self._lock:
            batch, self._buffer = self._buffer, []
            self._pages_in_batch = 0
        return [payload for payload, _ in batch], np.array([rel for _, rel in batch], dtype=np.float64)

    def train(self, payloads: list[LinkPayload], relevances: np.ndarray) -> ApprenticeModel | None:
        """Add a batch to the learner and fit a new model if it is ready (thread-safe, slow)."""
        if payloads:
            ids, side = _unpack(payloads, self.learner.n_side)
            self.learner.add(ids, relevances, side)
            self.instances_seen += len(payloads)
        if not self.learner.ready:
            return None
        return self.learner.fit()

    def install(self, model: ApprenticeModel) -> None:
        """Switch a new model in (atomic: one reference assignment)."""
        self.model = model

    def frozen(self) -> OnlineApprentice:
        """A copy that scores (:meth:`rescore`) as this one does now, whatever this one learns meanwhile:
        for a re-score in a thread while the crawl goes on. Its exploration and sibling counts are copies;
        the rest is shared, and only read by the scoring."""
        with self._lock:
            twin = copy.copy(self)
            twin.explore = None if self.explore is None else self.explore.frozen()
            twin.siblings = None if self.siblings is None else self.siblings.frozen()
        return twin

    # -- scoring ------------------------------------------------------------------

    def score(self, payloads: Sequence[LinkPayload]) -> list[float] | None:
        """Pr(HIGH | link) of each link; before the first model the critic's blended views, or ``None``."""
        if not payloads or (self.model is None and self.snippet_critic is None):
            return None
        scored = self._link_scores([payloads])  # one URL's payloads, in order: scored as a re-scoring scores them
        return None if scored is None else [float(p) for p in scored[0]]

    def prior_logit(self, side: np.ndarray) -> np.ndarray:
        """(1 − w)·logit Pr(c*|u) + w·logit Pr(c*|anchor) of each link."""
        side = np.asarray(side, dtype=np.float64)
        return (1.0 - self.anchor_weight) * side[:, 0] + self.anchor_weight * side[:, 1]

    def prior(self, side: np.ndarray) -> np.ndarray:
        """Priority before the first model: σ((1 − w)·logit Pr(c*|u) + w·logit Pr(c*|anchor))."""
        return 1.0 / (1.0 + np.exp(-self.prior_logit(side)))

    def rescore(self, payloads_per_entry: Sequence[Sequence[Any]]) -> list[int | None]:
        """New priorities for waiting URLs from their parents' link features.

        One prediction over all payloads (vectorised; a :class:`LinkBatch` is read as it is), then
        each URL's parent scores are combined by ``aggregation``. URLs without features (seeds)
        keep their priority (``None``).
        """
        out: list[int | None] = [None] * len(payloads_per_entry)
        if self.model is None and ((self.explore is None and self.siblings is None) or self.snippet_critic is None):
            return out  # before a model the prior stands, unless exploration bonuses or sibling terms move
        scored = self._link_scores(payloads_per_entry)
        if scored is None:
            return out
        scores, owners = scored
        entries, starts = np.unique(owners, return_index=True)  # owners ascend: each URL's payloads in a run
        ends = np.append(starts[1:], len(scores))
        if self.aggregation == "first":
            values = scores[starts]
        elif self.aggregation == "mean":
            values = np.array(
                [sum(scores[a:b].tolist()) / (b - a) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
            )
        else:
            values = np.maximum.reduceat(scores, starts)
        for entry, priority in zip(entries.tolist(), scores_to_priorities(values), strict=True):
            out[entry] = priority
        return out

    def _link_scores(self, payloads_per_entry: Sequence[Sequence[Any]]) -> tuple[np.ndarray, np.ndarray] | None:
        """The score of every link payload and the URL (entry index) it belongs to; None if there are none."""
        serving = self.model
        n_side = 2 if serving is None else serving.n_side
        if isinstance(payloads_per_entry, LinkBatch):
            batch = payloads_per_entry
            if not batch.n_links:
                return None
            if n_side and (batch.side is None or batch.side.shape[1] < n_side):
                raise ValueError("the model needs side features, but a link payload has none")
            side = batch.side[:, :n_side].astype(np.float64) if n_side and batch.side is not None else None
            tagged = self.siblings is not None and batch.side is not None and batch.side.shape[1] > n_side
            tags = batch.side[:, n_side] if tagged and batch.side is not None else None
            ids: Any = batch.product_matrix(self.learner.n_features)  # for the model's products only
            owners = batch.owners()
            bonus = self.explore.bonus(batch.lengths, batch.ids) if self.explore is not None else None
        else:
            flat: list[LinkPayload] = []
            owned: list[int] = []
            for i, payloads in enumerate(payloads_per_entry):
                for payload in payloads:
                    if isinstance(payload, LinkPayload):
                        flat.append(payload)
                        owned.append(i)
            if not flat:
                return None
            ids, side = _unpack(flat, n_side)
            owners = np.asarray(owned, dtype=np.int64)
            tags = payload_tags(flat, n_side) if self.siblings is not None else None
            bonus = self.explore.bonus_rows(ids) if self.explore is not None else None
        if serving is None:  # before the first model: the critic's blended views
            assert side is not None
            scores = self.prior(side)
        else:
            scores = np.asarray(serving.predict(ids, side), dtype=np.float64)
        if self.explore is not None and bonus is not None:
            scores = self.explore.apply(scores, bonus)
        if self.siblings is not None and tags is not None:
            scores = shift_logits(scores, self.siblings.term(tags))
        return scores, owners

    # -- introspection and persistence -----------------------------------------------

    @property
    def pending_links(self) -> int:
        return self._n_pending
