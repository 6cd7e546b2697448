"""The baseline classifier ("critic"): multinomial naive Bayes over hashed words.

As in Chakrabarti et al. (2002, §2.1, §3.3) the critic is a multinomial naive
Bayes classifier over the words of whole pages, trained on a taxonomy whose
class names are hierarchical with ``.`` (``rec.sport.hockey``,
``Science.Physics``; WebKB's page types are flat). A crawl topic is a class, a
subtree of the taxonomy or a union of them (:meth:`Critic.resolve_topic`), and
a page's relevance is the posterior mass of the topic's classes.

Features are word counts hashed into ``n_features`` buckets
(``HashingVectorizer``'s ids, :mod:`focused.learning.hashing`, of :func:`focused.learning.text.tokenize`), so no
vocabulary is stored or shared. The model is the per-class feature counts
(sparse, float32) plus the class counts; log-probabilities are rebuilt on load
and kept sparse: with additive (Lidstone) smoothing ``log θ_ct = log(α + N_ct) − log Z_c``,
the log-likelihood of a page of length ``L`` is
``L (log α − log Z_c) + Σ_t n_t log1p(N_ct / α)``, whose last term only
touches the features a class has seen.

Posteriors are length-calibrated (:mod:`focused.learning.calibration` explains
why and measures it); topics are resolved by :mod:`focused.learning.topics`.
A model is saved as one ``.npz`` file of plain arrays and a JSON header
(:mod:`focused.learning.modelfile`), never a pickle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from focused.learning.calibration import HOLDOUT_FRACTION, fit_length_scale, stratified_split
from focused.learning.modelfile import ModelFileError, read_model, save_model
from focused.learning.text import tokenize
from focused.learning.topics import Topic, UnknownTopicError, Verdict, resolve_topic, topics_of
from focused.learning.wordtable import hashed_counts as _hash_texts

__all__ = ["DEFAULT_ALPHA", "FORMAT_VERSION", "REBUILD_HINT", "Critic", "ModelError", "read_critic_file"]

logger = logging.getLogger(__name__)

#: Version of the ``kind="nb"`` bundle layout written by :meth:`Critic.save`.
FORMAT_VERSION = 1
#: Default additive (Lidstone) smoothing (chosen on 20 Newsgroups and WebKB, see :mod:`focused.learning.calibration`).
DEFAULT_ALPHA = 0.1
_TOKENIZER_NAME = f"{tokenize.__module__}.{tokenize.__qualname__}"
#: What to do about a bad critic model file (ends every :class:`ModelError` about one).
REBUILD_HINT = (
    "Rebuild the default model with `make models` (or `focused models`), "
    "or train one with `focused train-critic --webkb ARCHIVE -o PATH`."
)
_T = TypeVar("_T")


class ModelError(ModelFileError):
    """A critic model file is missing, corrupt, a pickle, or of another kind or format version."""


class Critic:
    """Multinomial naive Bayes over hashed word counts, with calibrated posteriors.

    Build one with :meth:`train` or :func:`~focused.learning.critic.load_critic`; the constructor takes
    fitted state. ``feature_count`` is the (n_classes, n_features) matrix of
    summed token counts per class, ``class_count`` the number of training pages
    per class, ``length_scale`` the fitted ``L_eff`` (``None``: uncalibrated).
    """

    kind = "nb"

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
        self.feature_count_ = feature_count
        self.alpha = float(alpha)
        self.n_features = int(n_features)
        self.length_scale = None if length_scale is None else float(length_scale)
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.examples: dict[str, list[str]] = {k: list(v) for k, v in (examples or {}).items()}
        self._class_index = {c: i for i, c in enumerate(classes)}
        self._rebuild()

    def _rebuild(self) -> None:
        """Derive the scoring state (log prior, sparse log-probability weights) from the counts."""
        counts = self.class_count_
        total = counts.sum()
        with np.errstate(divide="ignore"):
            self.class_log_prior_ = np.log(counts / total) if total > 0 else np.zeros_like(counts)
        fc = self.feature_count_.astype(np.float64)
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
        n_features: int = 2**18,
        alpha: float = DEFAULT_ALPHA,
        calibrate: bool = True,
        seed: int = 0,
        metadata: dict[str, Any] | None = None,
        examples: dict[str, list[str]] | None = None,
    ) -> Critic:
        """Fit a critic on page texts (already visible text) and their class names.

        With ``calibrate`` a stratified 20% hold-out (drawn with ``seed``) fits
        the effective length ``L_eff`` of :meth:`posteriors`; the counts are then
        refitted on all pages. Training statistics go to ``metadata["critic"]``.
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
        X = _hash_texts(texts, n_features)
        info: dict[str, Any] = {
            "n_documents": len(y),
            "class_counts": {c: int(n) for c, n in zip(classes, np.bincount(y, minlength=len(classes)), strict=True)},
            "alpha": float(alpha),
            "n_features": int(n_features),
            "tokenizer": _TOKENIZER_NAME,
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
        )

    # ------------------------------------------------------------------ scoring

    def transform(self, texts: Sequence[str]) -> sp.csr_matrix:
        """Hashed token counts of ``texts``, shape (n, n_features)."""
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not a string")
        return _hash_texts(texts, self.n_features)

    def _log_likelihood(self, X: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
        """Per-class ``Σ_t n_t log θ_ct`` (n, n_classes) and page lengths ``L`` (n,)."""
        lengths = np.asarray(X.sum(axis=1), dtype=np.float64).ravel()
        loglik = np.asarray((X @ self._weights_t).todense(), dtype=np.float64)
        loglik += lengths[:, None] * self._log_norm[None, :]
        return loglik, lengths

    def _joint(self, X: sp.csr_matrix, calibrated: bool) -> np.ndarray:
        loglik, lengths = self._log_likelihood(X)
        if calibrated and self.length_scale is not None:
            loglik *= (self.length_scale / np.maximum(lengths, 1.0))[:, None]
        return loglik + self.class_log_prior_[None, :]

    def posteriors(self, texts: Sequence[str]) -> np.ndarray:
        """Calibrated class posteriors Pr(c | page), shape (n, n_classes); rows sum to 1."""
        return _softmax(self._joint(self.transform(texts), calibrated=True))

    def raw_posteriors(self, texts: Sequence[str]) -> np.ndarray:
        """Textbook naive Bayes posteriors (saturate on long pages; for comparison only)."""
        return _softmax(self._joint(self.transform(texts), calibrated=False))

    def snippet_posteriors(self, texts: Sequence[str]) -> np.ndarray:
        """Class posteriors of short texts (anchor texts), never sharper than textbook naive Bayes.

        The page calibration rescales a text's log-likelihood to ``L_eff``
        tokens, which would *sharpen* a two-word anchor several-fold. Here the
        factor is ``min(1, L_eff / L)``: short snippets keep their raw naive
        Bayes posterior, long ones are flattened as pages are. An empty text
        gets the class prior.
        """
        loglik, lengths = self._log_likelihood(self.transform(texts))
        if self.length_scale is not None:
            loglik *= np.minimum(1.0, self.length_scale / np.maximum(lengths, 1.0))[:, None]
        return _softmax(loglik + self.class_log_prior_[None, :])

    def snippet_relevance(self, texts: Sequence[str], topic: Topic) -> np.ndarray:
        """Pr(topic | snippet) for short texts; see :meth:`snippet_posteriors`."""
        idx = self._topic_indices(topic)
        return np.clip(self.snippet_posteriors(texts)[:, idx].sum(axis=1), 0.0, 1.0)

    def predict(self, texts: Sequence[str]) -> list[str]:
        """The most probable class of each text."""
        best = self._joint(self.transform(texts), calibrated=True).argmax(axis=1)
        return [self.classes[i] for i in best]

    def relevance(self, texts: Sequence[str], topic: Topic) -> np.ndarray:
        """Pr(topic | page) for each text: the posterior mass of the topic's classes."""
        idx = self._topic_indices(topic)
        return np.clip(self.posteriors(texts)[:, idx].sum(axis=1), 0.0, 1.0)

    def judge(self, text: str, topic: Topic, *, url: str | None = None) -> Verdict:
        """Relevance, best class and best three classes of one page (``url`` is unused here)."""
        post = self.posteriors([text])[0]
        relevance = float(np.clip(post[self._topic_indices(topic)].sum(), 0.0, 1.0))
        order = np.argsort(-post, kind="stable")[:3]
        top = tuple(self.classes[i] for i in order)
        return Verdict(relevance=relevance, predicted_class=top[0], top_classes=top)

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
        :class:`~focused.learning.topics.Topic`; :class:`UnknownTopicError` lists the valid ones."""
        return resolve_topic(self.classes, spec)

    # ------------------------------------------------------------------ persistence

    def to_bundle(self) -> dict[str, Any]:
        """The model as a plain dict of arrays and builtins (what :meth:`save` writes)."""
        fc = self.feature_count_
        return {
            "kind": self.kind,
            "format_version": FORMAT_VERSION,
            "classes": list(self.classes),
            "class_count": self.class_count_.copy(),
            # CSR parts as plain arrays: small, and independent of scipy's pickle layout.
            "feature_count": {
                "data": fc.data.astype(np.float32),
                "indices": fc.indices.astype(np.int32),
                "indptr": fc.indptr.astype(np.int64),
                "shape": tuple(int(n) for n in fc.shape),
            },
            "features": {
                "vectorizer": "sklearn.feature_extraction.text.HashingVectorizer",
                "n_features": self.n_features,
                "alternate_sign": False,
                "norm": None,
                "lowercase": False,
                "tokenizer": _TOKENIZER_NAME,
            },
            "alpha": self.alpha,
            "calibration": None
            if self.length_scale is None
            else {"method": "length", "length_scale": self.length_scale},
            "metadata": self.metadata,
            "examples": self.examples,
        }

    @classmethod
    def from_bundle(cls, bundle: dict[str, Any]) -> Critic:
        """Rebuild a critic from :meth:`to_bundle` output.

        Raises
        ------
        ModelError
            When the bundle is not a ``kind="nb"`` bundle of this format version.
        """
        if not isinstance(bundle, dict) or bundle.get("kind") != cls.kind:
            kind = bundle.get("kind") if isinstance(bundle, dict) else type(bundle).__name__
            raise ModelError(f"not a naive Bayes critic bundle (kind={kind!r}). {REBUILD_HINT}")
        version = bundle.get("format_version")
        if version != FORMAT_VERSION:
            raise ModelError(
                f"critic model format version {version!r} is not supported (this code reads "
                f"version {FORMAT_VERSION}). {REBUILD_HINT}"
            )
        try:
            features = bundle["features"]
            if features.get("tokenizer") != _TOKENIZER_NAME or features.get("alternate_sign") is not False:
                raise ModelError(f"critic model uses different features ({features}). {REBUILD_HINT}")
            parts = bundle["feature_count"]
            feature_count = sp.csr_matrix(
                (parts["data"], parts["indices"], parts["indptr"]), shape=tuple(parts["shape"])
            )
            feature_count.check_format(full_check=True)  # indices in range: a file is not trusted
            calibration = bundle.get("calibration") or {}
            return cls(
                bundle["classes"],
                bundle["class_count"],
                feature_count,
                alpha=bundle["alpha"],
                n_features=int(features["n_features"]),
                length_scale=calibration.get("length_scale"),
                metadata=bundle.get("metadata"),
                examples=bundle.get("examples"),
            )
        except ModelError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise ModelError(f"critic model is incomplete or inconsistent ({exc!r}). {REBUILD_HINT}") from exc

    def save(self, path: str | Path) -> Path:
        """Write the model to ``path`` (one ``.npz`` file whatever the name, atomically); return the path."""
        return save_model(self.to_bundle(), path)

    @classmethod
    def load(cls, path: str | Path) -> Critic:
        """Read a naive Bayes critic written by :meth:`save` (:func:`~focused.learning.critic.load_critic`
        also reads cross-fitted critics); :class:`ModelError` for any other file."""
        return read_critic_file(path, {cls.kind: (FORMAT_VERSION,)}, cls.from_bundle)

    def __repr__(self) -> str:
        scale = "uncalibrated" if self.length_scale is None else f"L_eff={self.length_scale:.3g}"
        return f"<Critic nb: {len(self.classes)} classes, alpha={self.alpha:g}, {scale}>"


def read_critic_file(
    path: str | Path, kinds: Mapping[str, Collection[int]], build: Callable[[dict[str, Any]], _T]
) -> _T:
    """Read a critic model file of one of ``kinds`` (kind -> readable versions) and ``build(bundle)`` it.

    Every problem, in the file or in the bundle it holds, is a one-line :class:`ModelError`
    naming the file.
    """
    bundle = read_model(path, kinds, what="critic model", hint=REBUILD_HINT, error=ModelError)
    try:
        return build(bundle)
    except ModelError as exc:
        hint = "" if REBUILD_HINT in str(exc) else f" {REBUILD_HINT}"
        raise ModelError(f"{path}: {exc}{hint}") from exc
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ModelError(f"{path}: incomplete or inconsistent critic model ({exc!r}). {REBUILD_HINT}") from exc


# ---------------------------------------------------------------------- helpers


def _counts(X: sp.csr_matrix, y: np.ndarray, n_classes: int) -> tuple[np.ndarray, sp.csr_matrix]:
    """Pages per class and summed token counts per class (float32 CSR)."""
    onehot = sp.csr_matrix((np.ones(len(y)), (y, np.arange(len(y)))), shape=(n_classes, len(y)))
    feature_count = sp.csr_matrix(onehot @ X, dtype=np.float32)
    feature_count.eliminate_zeros()
    feature_count.sort_indices()
    return np.bincount(y, minlength=n_classes).astype(np.float64), feature_count


def _softmax(scores: np.ndarray) -> np.ndarray:
    scores = scores - scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    return scores
