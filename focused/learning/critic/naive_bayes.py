"""The baseline classifier ("critic"): multinomial naive Bayes over hashed words.

As in Chakrabarti et al. (2002, §2.1, §3.3) the critic is a multinomial naive
Bayes classifier over the words of whole pages, trained on a taxonomy whose
class names are hierarchical with ``.`` (``rec.sport.hockey``,
``Science.Physics``; WebKB's page types are flat). A crawl topic is a class, a
subtree of the taxonomy or a union of them (:meth:`Critic.resolve_topic`), and
a page's relevance is the posterior mass of the topic's classes.

Features are word counts hashed into ``n_features`` buckets
(``HashingVectorizer``'s ids, :mod:`focused.page.hashing`, of :func:`focused.page.text.tokenize`), so no
vocabulary is stored or shared. The model is the per-class feature counts
(sparse, float32) plus the class counts; log-probabilities are rebuilt on load
and kept sparse: with additive (Lidstone) smoothing ``log θ_ct = log(α + N_ct) − log Z_c``,
the log-likelihood of a page of length ``L`` is
``L (log α − log Z_c) + Σ_t n_t log1p(N_ct / α)``, whose last term only
touches the features a class has seen.

Posteriors are length-calibrated (:mod:`focused.learning.critic.calibration` explains
why and measures it); topics are resolved by :mod:`focused.learning.critic.topics`.
A model is saved as one ``.npz`` file of plain arrays and a JSON header
(:mod:`focused.learning.modelfile`), never a pickle.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from focused.learning.critic import bundle as nb_bundle
from focused.learning.critic.bundle import READABLE_VERSIONS, read_critic_file
from focused.learning.critic.calibration import HOLDOUT_FRACTION, fit_length_scale, stratified_split
from focused.learning.critic.products import times
from focused.learning.critic.topics import Topic, UnknownTopicError, Verdict, resolve_topic, topics_of, verdict_of
from focused.learning.critic.urlwords import MIN_PAGES, url_text, url_vocabulary
from focused.learning.critic.verdict_head import VerdictHead, train_head
from focused.learning.modelfile import save_model
from focused.page.text import tokenize
from focused.page.words import hashed_counts as _hash_texts

__all__ = ["DEFAULT_ALPHA", "Critic"]

#: Default additive (Lidstone) smoothing (chosen on 20 Newsgroups and WebKB,
#: see :mod:`focused.learning.critic.calibration`).
DEFAULT_ALPHA = 0.1
#: The URLs of the pages or link targets a critic reads, parallel to the texts (None: no URL known).
URLs = Sequence[str | None] | None

logger = logging.getLogger(__name__)


class Critic:
    """Multinomial naive Bayes over hashed word counts, with calibrated posteriors.

    Build one with :meth:`train` or :func:`~focused.learning.critic.load.load_critic`; the constructor takes
    fitted state. ``feature_count`` is the (n_classes, n_features) matrix of
    summed token counts per class, ``class_count`` the number of training pages
    per class, ``length_scale`` the fitted ``L_eff`` (``None``: uncalibrated). With
    ``url_words`` (the URL words it knows; None: no URL features) the critic reads each page's
    text followed by its URL's words (:func:`~focused.learning.critic.urlwords.url_text`) wherever a URL is given.
    """

    kind = nb_bundle.KIND

    def __init__(
        self,
        classes: Sequence[str],
        class_count: np.ndarray,
        feature_count: sp.spmatrix | sp.sparray,
        *,
        alpha: float,
        n_features: int,
        length_scale: float | None = None,
        metadata: dict[str, Any] | None = None,
        examples: dict[str, list[str]] | None = None,
        url_words: Collection[str] | None = None,
        head: VerdictHead | None = None,
    ) -> None:
        classes = [str(c) for c in classes]
        class_count = np.asarray(class_count, dtype=np.float64)
        feature_count = sp.csr_matrix(feature_count, dtype=np.float32)
        if len(set(classes)) != len(classes) or not classes:
            raise ValueError("classes must be unique and non-empty")
        if class_count.shape != (len(classes),):
            raise ValueError(f"class_count has shape {class_count.shape}, expected ({len(classes)},)")
        if feature_count.shape != (len(classes), n_features):
            raise ValueError(f"feature_count has shape {feature_count.shape}, expected ({len(classes)}, {n_features})")
        if not alpha > 0:
            raise ValueError(f"alpha must be > 0, got {alpha}")
        if length_scale is not None and not length_scale > 0:
            raise ValueError(f"length_scale must be > 0, got {length_scale}")
        self.classes: list[str] = classes
        self.class_count_ = class_count
        #: the training counts; ``None`` once :meth:`release_counts` dropped them (a crawl's critic)
        self.feature_count_: sp.csr_matrix | None = feature_count
        self.alpha = float(alpha)
        self.n_features = int(n_features)
        self.length_scale = None if length_scale is None else float(length_scale)
        self.url_words = None if url_words is None else frozenset(str(w) for w in url_words)
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.examples: dict[str, list[str]] = {k: list(v) for k, v in (examples or {}).items()}
        self._class_index = {c: i for i, c in enumerate(classes)}
        #: the discriminative verdict (:mod:`focused.learning.critic.verdict_head`), ``None``: verdicts by naive Bayes
        self.head = head
        self._rebuild(feature_count)

    @property
    def url_features(self) -> bool:
        """Whether the critic reads URLs (see :mod:`focused.learning.critic.urlwords`)."""
        return self.url_words is not None

    def release_counts(self) -> None:
        """Drop the training counts, keeping the scoring state derived from them: a crawl only scores, in its
        process and in its page-analysis worker (docs/results.md, "Memory of the 3,000-page default crawl").
        The critic then scores as before but cannot be saved or suggest topics by their words."""
        self.feature_count_ = None

    def _rebuild(self, feature_count: sp.csr_matrix) -> None:
        """Derive the scoring state (log prior, sparse log-probability weights) from the counts."""
        counts = self.class_count_
        total = counts.sum()
        with np.errstate(divide="ignore"):
            self.class_log_prior_ = np.log(counts / total) if total > 0 else np.zeros_like(counts)
        fc = feature_count.astype(np.float64)
        # log θ_ct = log α + log1p(N_ct / α) − log Z_c; the first and last terms are per class only.
        self._log_norm = np.log(self.alpha) - np.log(np.asarray(fc.sum(axis=1)).ravel() + self.alpha * self.n_features)
        weights = fc.copy()
        weights.data = np.log1p(weights.data / self.alpha)
        self._weights_t = sp.csr_matrix(weights.T)

    # ------------------------------------------------------------------ training

    @classmethod
    def train(
        cls,
        texts: Sequence[str],
        labels: Sequence[str],
        *,
        urls: Sequence[str] | None = None,
        url_min_pages: int = MIN_PAGES,
        n_features: int = 2**18,
        alpha: float = DEFAULT_ALPHA,
        calibrate: bool = True,
        seed: int = 0,
        metadata: dict[str, Any] | None = None,
        examples: dict[str, list[str]] | None = None,
        verdict_head: bool = False,
    ) -> Critic:
        """Fit a critic on page texts (already visible text) and their class names.

        With ``calibrate`` a stratified 20% hold-out (drawn with ``seed``) fits
        the effective length ``L_eff`` of :meth:`posteriors`; the counts are then
        refitted on all pages. Training statistics go to ``metadata["critic"]``.
        With ``urls`` (each page's URL) the critic has URL features: it learns from
        each page's text and URL words (those in ``url_min_pages`` URLs or more), and reads
        them wherever a URL is given. With ``verdict_head`` the critic also fits a discriminative verdict
        on the same features (:mod:`focused.learning.critic.verdict_head`), which :meth:`judge` then uses.
        """
        if isinstance(texts, str) or isinstance(labels, str):
            raise TypeError("texts and labels must be sequences of strings, not a string")
        if len(texts) != len(labels):
            raise ValueError(f"{len(texts)} texts but {len(labels)} labels")
        classes = sorted({str(label) for label in labels})
        if len(classes) < 2:
            raise ValueError(f"need pages of at least two classes, got {classes}")
        index = {c: i for i, c in enumerate(classes)}
        y = np.array([index[str(label)] for label in labels], dtype=np.int64)
        url_words = None if urls is None else url_vocabulary(urls, url_min_pages)
        X = _token_counts(texts, urls, url_words, n_features)
        info: dict[str, Any] = {
            "n_documents": len(y),
            "class_counts": {c: int(n) for c, n in zip(classes, np.bincount(y, minlength=len(classes)), strict=True)},
            "alpha": float(alpha),
            "n_features": int(n_features),
            "tokenizer": nb_bundle.TOKENIZER_NAME,
            "url_features": None if url_words is None else {"min_pages": url_min_pages, "words": len(url_words)},
            "seed": seed,
        }
        length_scale = None
        if calibrate:
            fit, held = stratified_split(y, HOLDOUT_FRACTION, seed)
            if len(held) and len(np.unique(y[fit])) == len(classes):
                part = cls(classes, *_counts(X[fit], y[fit], len(classes)), alpha=alpha, n_features=n_features)
                loglik, lengths = part._log_likelihood(X[held])
                length_scale, stats = fit_length_scale(part.class_log_prior_, loglik, lengths, y[held])
                info["calibration"] = {"method": "length", "holdout": len(held), **stats}
            else:
                logger.warning("too few pages per class to hold some out: critic left uncalibrated")
        class_count, feature_count = _counts(X, y, len(classes))
        head = train_head(X, y, len(classes), seed=seed) if verdict_head else None
        if head is not None:
            info["verdict_head"] = {"model": "logistic regression (one vs rest), tf-idf", "alpha": head.alpha}
        meta = dict(metadata or {})
        meta["critic"] = info
        return cls(
            classes,
            class_count,
            feature_count,
            alpha=alpha,
            n_features=n_features,
            length_scale=length_scale,
            metadata=meta,
            examples=examples,
            url_words=url_words,
            head=head,
        )

    # ------------------------------------------------------------------ scoring

    def transform(self, texts: Sequence[str], urls: URLs = None, *, anchors: bool = False) -> sp.csr_matrix:
        """Hashed token counts of ``texts`` (and, with URL features, of ``urls``), shape (n, n_features).

        With ``anchors`` a URL word the text already has is left out (see :meth:`snippet_posteriors`).
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not a string")
        return _token_counts(texts, urls, self.url_words, self.n_features, anchors=anchors)

    def _log_likelihood(self, X: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
        """Per-class ``Σ_t n_t log θ_ct`` (n, n_classes) and page lengths ``L`` (n,)."""
        lengths = np.asarray(X.sum(axis=1), dtype=np.float64).ravel()
        loglik = np.asarray(times(X.data, X.indices, X.indptr, self._weights_t), dtype=np.float64)
        loglik += lengths[:, None] * self._log_norm[None, :]
        return loglik, lengths

    def _joint(self, X: sp.csr_matrix, calibrated: bool) -> np.ndarray:
        loglik, lengths = self._log_likelihood(X)
        if calibrated and self.length_scale is not None:
            loglik *= (self.length_scale / np.maximum(lengths, 1.0))[:, None]
        return loglik + self.class_log_prior_[None, :]

    def posteriors(self, texts: Sequence[str], urls: URLs = None) -> np.ndarray:
        """Calibrated class posteriors Pr(c | page), shape (n, n_classes); rows sum to 1."""
        return _softmax(self._joint(self.transform(texts, urls), calibrated=True))

    def raw_posteriors(self, texts: Sequence[str], urls: URLs = None) -> np.ndarray:
        """Textbook naive Bayes posteriors (saturate on long pages; for comparison only)."""
        return _softmax(self._joint(self.transform(texts, urls), calibrated=False))

    def snippet_posteriors(self, texts: Sequence[str], urls: URLs = None) -> np.ndarray:
        """Class posteriors of short texts (anchor texts), never sharper than textbook naive Bayes.

        The page calibration rescales a text's log-likelihood to ``L_eff``
        tokens, which would *sharpen* a two-word anchor several-fold. Here the
        factor is ``min(1, L_eff / L)``: short snippets keep their raw naive
        Bayes posterior, long ones are flattened as pages are. An empty text
        gets the class prior. ``urls`` are the URLs of the links' *targets*: a
        critic with URL features reads each anchor followed by its target's URL words,
        less those the anchor has (an anchor that is its target's title, as an
        encyclopedia's are, would otherwise count each of its words twice).
        """
        loglik, lengths = self._log_likelihood(self.transform(texts, urls, anchors=True))
        if self.length_scale is not None:
            loglik *= np.minimum(1.0, self.length_scale / np.maximum(lengths, 1.0))[:, None]
        return _softmax(loglik + self.class_log_prior_[None, :])

    def snippet_relevance(self, texts: Sequence[str], topic: Topic, urls: URLs = None) -> np.ndarray:
        """Pr(topic | snippet) for short texts; see :meth:`snippet_posteriors`."""
        idx = self._topic_indices(topic)
        return np.clip(self.snippet_posteriors(texts, urls)[:, idx].sum(axis=1), 0.0, 1.0)

    def predict(self, texts: Sequence[str], urls: URLs = None) -> list[str]:
        """The most probable class of each text."""
        best = self._joint(self.transform(texts, urls), calibrated=True).argmax(axis=1)
        return [self.classes[i] for i in best]

    def relevance(self, texts: Sequence[str], topic: Topic, urls: URLs = None) -> np.ndarray:
        """Pr(topic | page) for each text: the posterior mass of the topic's classes."""
        idx = self._topic_indices(topic)
        return np.clip(self.posteriors(texts, urls)[:, idx].sum(axis=1), 0.0, 1.0)

    def verdict_posteriors(self, texts: Sequence[str], urls: URLs = None) -> np.ndarray:
        """Pr(c | page) of the verdict: the head's, or the calibrated naive Bayes posteriors without one."""
        if self.head is None:
            return self.posteriors(texts, urls)
        return self.head.posteriors(self.transform(texts, urls))

    def judge_posteriors(self, text: str, url: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """One page's calibrated naive Bayes posteriors and its verdict's (the head's, or the same array
        without one), from one reading of the page."""
        X = self.transform([text], [url])
        nb = _softmax(self._joint(X, calibrated=True))[0]
        return nb, nb if self.head is None else self.head.posteriors(X)[0]

    def judge(self, text: str, topic: Topic, *, url: str | None = None) -> Verdict:
        """Relevance, best class and best three classes of one page (``url`` read with URL features).

        With a verdict head these are the head's, and ``link_relevance`` is the naive Bayes Pr(topic | page),
        the parent view of the page's links (module :mod:`focused.learning.critic.verdict_head` says why).
        """
        nb, post = self.judge_posteriors(text, url)
        return verdict_of(post, self.classes, self._topic_indices(topic), None if self.head is None else nb)

    def _topic_indices(self, topic: Topic) -> np.ndarray:
        try:
            return np.array([self._class_index[c] for c in topic.classes], dtype=np.intp)
        except KeyError as exc:
            raise UnknownTopicError(
                f"topic {topic.name!r} covers class {exc.args[0]!r}, which this critic does not have",
                topic=topic.name,
                valid=self.topics(),
            ) from None

    # ------------------------------------------------------------------ topics

    def topics(self) -> list[str]:
        """Every valid topic name: each class and each proper prefix of the hierarchy."""
        return topics_of(self.classes)

    def resolve_topic(self, spec: str) -> Topic:
        """Resolve ``spec`` (a class, a subtree such as ``Science/Physics``, or a union ``a,b``) into a
        :class:`~focused.learning.critic.topics.Topic`; :class:`UnknownTopicError` lists the valid ones."""
        return resolve_topic(self.classes, spec)

    # ------------------------------------------------------------------ persistence

    def to_bundle(self) -> dict[str, Any]:
        """The model as a plain dict of arrays and builtins (what :meth:`save` writes)."""
        return nb_bundle.bundle_of(self)

    @classmethod
    def from_bundle(cls, bundle: dict[str, Any]) -> Critic:
        """Rebuild a critic from :meth:`to_bundle` output; :class:`ModelError` for another kind or version."""
        return cls(**nb_bundle.critic_args(bundle))

    def save(self, path: str | Path) -> Path:
        """Write the model to ``path`` (one ``.npz`` file whatever the name, atomically); return the path."""
        return save_model(self.to_bundle(), path)

    @classmethod
    def load(cls, path: str | Path) -> Critic:
        """Read a naive Bayes critic written by :meth:`save` (:func:`~focused.learning.critic.load.load_critic`
        also reads cross-fitted critics); :class:`ModelError` for any other file."""
        return read_critic_file(path, {cls.kind: READABLE_VERSIONS}, cls.from_bundle)

    def __repr__(self) -> str:
        scale = "uncalibrated" if self.length_scale is None else f"L_eff={self.length_scale:.3g}"
        urls = ", URL features" if self.url_features else ""
        head = ", verdict head" if self.head is not None else ""
        return f"<Critic nb: {len(self.classes)} classes, alpha={self.alpha:g}, {scale}{urls}{head}>"


# ---------------------------------------------------------------------- helpers


def _counts(X: sp.csr_matrix, y: np.ndarray, n_classes: int) -> tuple[np.ndarray, sp.csr_matrix]:
    """Pages per class and summed token counts per class (float32 CSR)."""
    onehot = sp.csr_matrix((np.ones(len(y)), (y, np.arange(len(y)))), shape=(n_classes, len(y)))
    feature_count = sp.csr_matrix(onehot @ X, dtype=np.float32)
    feature_count.eliminate_zeros()
    feature_count.sort_indices()
    return np.bincount(y, minlength=n_classes).astype(np.float64), feature_count


def _token_counts(
    texts: Sequence[str],
    urls: Sequence[str | None] | None,
    known: frozenset[str] | None,
    n_features: int,
    *,
    anchors: bool = False,
) -> sp.csr_matrix:
    """Hashed counts of each text and, with ``known`` URL features and ``urls``, of its URL's in the
    same row (:func:`~focused.learning.critic.urlwords.url_text`; a None URL adds none).

    A page's text stays the very string the near-duplicate check tokenized, which the word table
    then reads again at no cost (text + URL would be a new string to tokenize). With ``anchors``
    (short texts) a path word the text has is left out.
    """
    if known is None or urls is None:
        return _hash_texts(texts, n_features)
    if len(texts) != len(urls):
        raise ValueError(f"{len(texts)} texts but {len(urls)} urls")
    if anchors:
        extra = [
            url_text(url, known, skip=tokenize(text)) if url else "" for text, url in zip(texts, urls, strict=True)
        ]
    else:
        extra = [url_text(url, known) if url else "" for url in urls]
    return _hash_texts(texts, n_features, extra)


def _softmax(scores: np.ndarray) -> np.ndarray:
    scores = scores - scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    return scores
