"""Online relevance feedback: the apprentice learns from the critic during a crawl.

Scrapy-free (the crawler's adapters are :class:`focused.strategies.ApprenticeStrategy`
and :class:`focused.feedback.RelevanceFeedback`). The loop of the paper's §2.2:

1. When a page u is fetched, the ⟨t,d⟩ features of each of its links (u,v) are
   extracted in one pass (:func:`~focused.learning.linkfeatures.extract_link_features`)
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

Until the first model exists, links get the baseline's Pr(c*|u).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from w3lib.url import safe_url_string

from focused.learning.apprentice import Apprentice, ApprenticeModel
from focused.learning.linkfeatures import class_features, compact_many, extract_link_features
from focused.priority import score_to_priority

logger = logging.getLogger(__name__)


def page_key(url: str) -> str:
    """Key under which a page is matched: ``dir``, ``dir/`` and ``dir/index.html`` alike.

    Cheap on purpose (it runs twice per link): lower-cased scheme and host,
    no fragment, no default port, percent-encoded like Scrapy's requests.
    """
    if not url.isascii() or " " in url:
        url = safe_url_string(url)
    url = url.split("#", 1)[0]
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    host, _, path = rest.partition("/")
    host = host.lower()
    if host.endswith(":80"):
        host = host[:-3]
    key = f"{scheme.lower()}://{host}/{path}"
    for suffix in ("/index.html", "/index.htm"):
        if key.endswith(suffix):
            key = key[: -len(suffix) + 1]
    return key.rstrip("/")


class OnlineApprentice:
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
    ) -> None:
        self.learner = learner
        self.d_max = int(d_max)
        self.class_features = bool(class_features)
        self.batch_size = max(1, int(batch_size))
        self.learn = learn
        self.aggregation = aggregation
        self.model: ApprenticeModel | None = None
        self._lock = threading.Lock()
        self._pending: dict[str, list[np.ndarray]] = {}
        self._fetched: dict[str, float] = {}
        self._buffer: list[tuple[np.ndarray, float]] = []
        self._pages_in_batch = 0
        self.instances_seen = 0

    # -- features -----------------------------------------------------------------

    def link_features(self, url: str, html: str, top_classes: Sequence[str], links: Sequence[str]) -> list[np.ndarray]:
        """Compact feature ids of each link (u, v) of page u, in the order of ``links``.

        A link the feature extractor did not see (e.g. a URL Scrapy's link
        extractor normalised differently) gets only the page-level features.
        """
        page = extract_link_features(html, url, d_max=self.d_max)
        by_key: dict[str, list[str]] = {}
        for target, feats in zip(page.urls, page.features, strict=True):
            by_key.setdefault(page_key(target), feats)
        extra = class_features(top_classes) if self.class_features else []
        # one hashing call for the whole page: FeatureHasher's per-call overhead dominates per-link calls
        return compact_many([by_key.get(page_key(link), []) + extra for link in links], self.learner.n_features)

    # -- the feedback loop --------------------------------------------------------

    def observe_links(self, links: Sequence[str], payloads: Sequence[np.ndarray]) -> None:
        """Remember the links of a fetched page until their targets are fetched."""
        with self._lock:
            for link, ids in zip(links, payloads, strict=True):
                key = page_key(link)
                relevance = self._fetched.get(key)
                if relevance is not None:
                    self._buffer.append((ids, relevance))
                else:
                    self._pending.setdefault(key, []).append(ids)

    def observe_page(self, urls: Sequence[str], relevance: float) -> bool:
        """A page (and the URLs it was requested under) was judged by the critic.

        Returns ``True`` when a batch is complete (time to train).
        """
        with self._lock:
            for url in urls:
                key = page_key(url)
                self._fetched[key] = float(relevance)
                for ids in self._pending.pop(key, ()):
                    self._buffer.append((ids, float(relevance)))
            self._pages_in_batch += 1
            return self.learn and self._pages_in_batch >= self.batch_size

    def take_batch(self) -> tuple[list[np.ndarray], np.ndarray]:
        """The buffered instances; starts a new batch."""
        with self._lock:
            batch, self._buffer = self._buffer, []
            self._pages_in_batch = 0
        feats = [ids for ids, _ in batch]
        return feats, np.array([rel for _, rel in batch], dtype=np.float64)

    def train(self, features: list[np.ndarray], relevances: np.ndarray) -> ApprenticeModel | None:
        """Add a batch to the learner and fit a new model if it is ready (thread-safe, slow)."""
        if features:
            self.learner.add(features, relevances)
            self.instances_seen += len(features)
        if not self.learner.ready:
            return None
        return self.learner.fit()

    def install(self, model: ApprenticeModel) -> None:
        """Switch a new model in (atomic: one reference assignment)."""
        self.model = model

    # -- scoring ------------------------------------------------------------------

    def score(self, payloads: Sequence[np.ndarray]) -> list[float] | None:
        """Pr(HIGH | features) of each link, or ``None`` before the first model."""
        model = self.model
        if model is None or not payloads:
            return None
        return [float(p) for p in model.predict(list(payloads))]

    def rescore(self, payloads_per_entry: Sequence[Sequence[Any]]) -> list[int | None]:
        """New priorities for waiting URLs from their parents' link features.

        One prediction over all payloads (vectorised), then each URL's parent
        scores are combined by ``aggregation``. URLs without features (seeds)
        keep their priority (``None``).
        """
        model = self.model
        if model is None:
            return [None] * len(payloads_per_entry)
        flat: list[np.ndarray] = []
        owners: list[int] = []
        for i, payloads in enumerate(payloads_per_entry):
            for ids in payloads:
                if isinstance(ids, np.ndarray):
                    flat.append(ids)
                    owners.append(i)
        if not flat:
            return [None] * len(payloads_per_entry)
        scores = model.predict(flat)
        per_entry: list[list[float]] = [[] for _ in payloads_per_entry]
        for owner, score in zip(owners, scores, strict=True):
            per_entry[owner].append(float(score))
        out: list[int | None] = []
        for values in per_entry:
            if not values:
                out.append(None)
            elif self.aggregation == "first":
                out.append(score_to_priority(values[0]))
            elif self.aggregation == "mean":
                out.append(score_to_priority(sum(values) / len(values)))
            else:
                out.append(score_to_priority(max(values)))
        return out

    # -- introspection and persistence -----------------------------------------------

    @property
    def pending_links(self) -> int:
        return sum(len(v) for v in self._pending.values())

    def state(self) -> dict[str, Any]:
        """Picklable crawl-time state (the learner is saved separately)."""
        with self._lock:
            return {
                "pending": self._pending,
                "fetched": self._fetched,
                "buffer": self._buffer,
                "pages_in_batch": self._pages_in_batch,
                "instances_seen": self.instances_seen,
            }

    def restore(self, state: dict[str, Any]) -> None:
        with self._lock:
            self._pending = state["pending"]
            self._fetched = state["fetched"]
            self._buffer = state["buffer"]
            self._pages_in_batch = int(state["pages_in_batch"])
            self.instances_seen = int(state.get("instances_seen", 0))
