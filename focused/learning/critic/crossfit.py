"""A cross-fitted critic: k naive Bayes critics, each blind to one fold of the pages.

In a benchmark the critic's verdict on a page is compared with the page's true
label; a critic that trained on that very page would be graded on its training
data. :class:`CrossFitCritic` splits the training pages into ``k`` folds by a
stable hash of their normalised URL (``zlib.crc32(normalize_url(url)) % k``) and
trains one :class:`~focused.learning.critic.naive_bayes.Critic` per fold on the other folds.
A page is judged by the model of *its* fold, the one that never saw it; a URL the
critic did not train on falls in some fold too, whose model did not see it either.

Without a URL (``url=None``, or ``urls=None`` in the batch methods) the verdict is
the average of the k models' posteriors: fine for unseen pages, but it includes
models that trained on the page, so benchmarks must pass URLs.

The class list is the union of the fold models' classes; a fold model lacking a
class (all its pages in the held-out fold) gives it probability 0.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from focused.learning.critic.bundle import ModelError, read_critic_file
from focused.learning.critic.naive_bayes import Critic
from focused.learning.critic.topics import Topic, Verdict, resolve_topic, topics_of, verdict_of
from focused.learning.modelfile import save_model
from focused.replay.urlnorm import normalize_url

__all__ = ["FORMAT_VERSION", "CrossFitCritic", "fold_of"]

FORMAT_VERSION = 1


def fold_of(url: str, k: int) -> int:
    """The fold (0..k-1) of a URL: a stable hash of its normalised form."""
    try:
        key = normalize_url(url)
    except ValueError:
        key = url
    return zlib.crc32(key.encode("utf-8")) % k


class CrossFitCritic:
    """k fold critics behind the :class:`~focused.learning.critic.naive_bayes.Critic` interface."""

    kind = "crossfit"

    def __init__(
        self,
        folds: Sequence[Critic],
        *,
        metadata: dict[str, Any] | None = None,
        examples: dict[str, list[str]] | None = None,
    ) -> None:
        if len(folds) < 2:
            raise ValueError("a cross-fitted critic needs at least two folds")
        self.folds = list(folds)
        self.k = len(self.folds)
        self.classes: list[str] = sorted({c for fold in self.folds for c in fold.classes})
        index = {c: i for i, c in enumerate(self.classes)}
        self._columns = [np.array([index[c] for c in fold.classes], dtype=np.intp) for fold in self.folds]
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.examples: dict[str, list[str]] = {c: list(v) for c, v in (examples or {}).items()}

    @classmethod
    def train(
        cls,
        texts: Sequence[str],
        labels: Sequence[str],
        urls: Sequence[str],
        *,
        k: int = 5,
        metadata: dict[str, Any] | None = None,
        examples: dict[str, list[str]] | None = None,
        url_features: bool = False,
        **critic_args: Any,
    ) -> CrossFitCritic:
        """Train fold ``f``'s critic on the pages whose URL is not in fold ``f``.

        A page may appear several times (one copy per class); its copies share a
        fold. With ``url_features`` the fold critics read each page's URL words too.
        ``critic_args`` go to :meth:`Critic.train`.
        """
        if not len(texts) == len(labels) == len(urls):
            raise ValueError(f"{len(texts)} texts, {len(labels)} labels, {len(urls)} urls")
        fold = [fold_of(url, k) for url in urls]
        critics = []
        for f in range(k):
            keep = [i for i, g in enumerate(fold) if g != f]
            keep_urls = [urls[i] for i in keep] if url_features else None
            critics.append(
                Critic.train([texts[i] for i in keep], [labels[i] for i in keep], urls=keep_urls, **critic_args)
            )
        meta = dict(metadata or {})
        meta["crossfit"] = {"k": k, "fold_sizes": np.bincount(fold, minlength=k).tolist()}
        return cls(critics, metadata=meta, examples=examples)

    # ------------------------------------------------------------------ scoring

    def release_counts(self) -> None:
        """:meth:`Critic.release_counts` of every fold."""
        for fold in self.folds:
            fold.release_counts()

    def fold_of(self, url: str) -> int:
        return fold_of(url, self.k)

    def posteriors(self, texts: Sequence[str], urls: Sequence[str | None] | None = None) -> np.ndarray:
        """Pr(c | page) over :attr:`classes`, each page by its held-out fold's model.

        A page without a URL gets the mean of the k models' posteriors.
        """
        return self._by_fold(texts, urls, "posteriors")

    def snippet_posteriors(self, texts: Sequence[str], urls: Sequence[str | None] | None = None) -> np.ndarray:
        """:meth:`Critic.snippet_posteriors`, each text by the fold model blind to its URL.

        For an anchor text, pass the URL of the link's *target*: the model that
        judges the target page must not have trained on it either.
        """
        return self._by_fold(texts, urls, "snippet_posteriors")

    def verdict_posteriors(self, texts: Sequence[str], urls: Sequence[str | None] | None = None) -> np.ndarray:
        """The verdicts' Pr(c | page), each page by its fold's critic (its head's, or naive Bayes without one)."""
        return self._by_fold(texts, urls, "verdict_posteriors")

    def snippet_relevance(
        self, texts: Sequence[str], topic: Topic, urls: Sequence[str | None] | None = None
    ) -> np.ndarray:
        return np.clip(self.snippet_posteriors(texts, urls)[:, self._indices(topic)].sum(axis=1), 0.0, 1.0)

    def _by_fold(self, texts: Sequence[str], urls: Sequence[str | None] | None, method: str) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not a string")
        if urls is not None and len(urls) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(urls)} urls")
        out = np.zeros((len(texts), len(self.classes)))
        given = list(urls) if urls is not None else [None] * len(texts)
        folds = [None if u is None else self.fold_of(u) for u in given]
        unknown = np.array([i for i, f in enumerate(folds) if f is None], dtype=np.intp)
        for f, critic in enumerate(self.folds):
            rows = np.array([i for i, g in enumerate(folds) if g == f], dtype=np.intp)
            if len(rows):
                read = getattr(critic, method)
                out[np.ix_(rows, self._columns[f])] = read([texts[i] for i in rows], [given[i] for i in rows])
            if len(unknown):
                out[np.ix_(unknown, self._columns[f])] += getattr(critic, method)([texts[i] for i in unknown]) / self.k
        return out

    def predict(self, texts: Sequence[str], urls: Sequence[str | None] | None = None) -> list[str]:
        return [self.classes[int(i)] for i in self.posteriors(texts, urls).argmax(axis=1)]

    def relevance(self, texts: Sequence[str], topic: Topic, urls: Sequence[str | None] | None = None) -> np.ndarray:
        """Pr(topic | page): the posterior mass of the topic's classes."""
        return np.clip(self.posteriors(texts, urls)[:, self._indices(topic)].sum(axis=1), 0.0, 1.0)

    def judge(self, text: str, topic: Topic, *, url: str | None = None) -> Verdict:
        """Judge one page with the model whose held-out fold holds ``url`` (with verdict heads: as
        :meth:`Critic.judge <focused.learning.critic.naive_bayes.Critic.judge>`)."""
        idx = self._indices(topic)
        heads = any(critic.head is not None for critic in self.folds)
        if url is None:  # no fold is blind to it: the folds' mean
            nb = self.posteriors([text], [url])[0]
            post = self.verdict_posteriors([text], [url])[0] if heads else nb
        else:  # one reading of the page by the fold blind to it, for both posteriors
            f = self.fold_of(url)
            nb, post = np.zeros(len(self.classes)), np.zeros(len(self.classes))
            nb[self._columns[f]], post[self._columns[f]] = self.folds[f].judge_posteriors(text, url)
        return verdict_of(post, self.classes, idx, nb if heads else None)

    def _indices(self, topic: Topic) -> np.ndarray:
        # Re-resolve by name: the topic may come from another critic with other classes.
        return self.resolve_topic(topic.name).indices

    # ------------------------------------------------------------------ topics

    def topics(self) -> list[str]:
        return topics_of(self.classes)

    def resolve_topic(self, spec: str) -> Topic:
        return resolve_topic(self.classes, spec)

    # ------------------------------------------------------------------ persistence

    def to_bundle(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "format_version": FORMAT_VERSION,
            "folds": [critic.to_bundle() for critic in self.folds],
            "metadata": self.metadata,
            "examples": self.examples,
        }

    @classmethod
    def from_bundle(cls, bundle: dict[str, Any]) -> CrossFitCritic:
        """Rebuild from :meth:`to_bundle` output; raises ModelError for another kind or version."""
        if not isinstance(bundle, dict) or bundle.get("kind") != cls.kind:
            raise ModelError("not a cross-fitted critic bundle")
        if bundle.get("format_version") != FORMAT_VERSION:
            raise ModelError(
                f"cross-fitted critic format version {bundle.get('format_version')!r} is not supported "
                f"(this code reads version {FORMAT_VERSION})"
            )
        folds = [Critic.from_bundle(fold) for fold in bundle["folds"]]
        return cls(folds, metadata=bundle.get("metadata"), examples=bundle.get("examples"))

    def save(self, path: str | Path) -> Path:
        """Write the model (one ``.npz`` file whatever the name, atomically); return the path."""
        return save_model(self.to_bundle(), path)

    @classmethod
    def load(cls, path: str | Path) -> CrossFitCritic:
        """Read a cross-fitted critic written by :meth:`save`; :class:`ModelError` for any other file."""
        return read_critic_file(path, {cls.kind: (FORMAT_VERSION,)}, cls.from_bundle)

    def __repr__(self) -> str:
        return f"<CrossFitCritic: {self.k} folds, {len(self.classes)} classes>"
