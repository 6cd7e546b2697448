"""The baseline classifier ("critic"): multinomial naive Bayes over hashed words.

As in Chakrabarti et al. (2002, §2.1, §3.3) the critic is a multinomial naive
Bayes classifier over the words of whole pages, trained on a taxonomy whose
class names are hierarchical with ``.`` (``rec.sport.hockey``,
``Science.Physics``; WebKB's page types are flat). A crawl topic is a class, a
subtree of the taxonomy or a union of them (:meth:`Critic.resolve_topic`), and
a page's relevance is the posterior mass of the topic's classes.

Features are word counts hashed into ``n_features`` buckets
(``HashingVectorizer`` with :func:`focused.learning.text.tokenize`), so no
vocabulary is stored or shared. The model is the per-class feature counts
(sparse, float32) plus the class counts; log-probabilities are rebuilt on load
and kept sparse: with additive (Lidstone) smoothing ``log θ_ct = log(α + N_ct) − log Z_c``,
the log-likelihood of a page of length ``L`` is
``L (log α − log Z_c) + Σ_t n_t log1p(N_ct / α)``, whose last term only
touches the features a class has seen.

The priority signal
-------------------
Raw naive Bayes posteriors are useless for ranking pages: the log-likelihood is
a sum over every token, so the gap between the best and second class grows
with the page length into the hundreds or thousands of nats, and posteriors
saturate to exactly 0.0 or 1.0 in floating point (the paper's Figure 5 shows
that bimodality). Saturated pages tie, and a long, vaguely on-topic page
outranks a short, clearly on-topic one.

:meth:`Critic.posteriors` therefore returns *length-normalised, temperature-
scaled* posteriors::

    s_c = log P(c) + (L_eff / max(L, 1)) · Σ_t n_t log θ_ct,   P(c | u) = softmax_c(s_c)

i.e. the page's log-likelihood is rescaled to an effective length ``L_eff``.
The single parameter is fitted during :meth:`Critic.train` by minimising the
log-loss on a stratified 20% hold-out (counts fitted on the other 80%, then
refitted on all the data). The hold-out targets are smoothed in Platt's way
(the true class gets ``1 − 1/(n + 2)`` for ``n`` hold-out pages) so that a
small, perfectly separated hold-out cannot push ``L_eff`` to infinity.
:meth:`Critic.raw_posteriors` keeps the textbook posteriors for comparison.

Measured with ``focused eval-critic --20news`` and ``focused eval-critic --webkb``
(α = 0.1, 2**18 features). AUC is one class's posterior against all other test
pages (the ranking of a one-class topic); "ties" counts pages, among 1,000
sampled test pages, whose score for that class exactly equals another's. The
temperature-only and power-law rows come from a one-off comparison script over
the same splits (not kept).

20 Newsgroups bydate, train 11,314 → test 7,532 posts (L_eff = 8.3):

==========================  =====  ========  ===================================  =================
posteriors                  acc.   log-loss  AUC sci.med / hockey / graphics;     ties (sci.med)
                                             macro over 20
==========================  =====  ========  ===================================  =================
raw NB                      0.803  4.57      0.988 / 0.996 / 0.964; 0.971         71
temperature only (T=18.5)   0.804  1.05      0.989 / 0.996 / 0.964; 0.973         3
length-normalised (chosen)  0.805  0.87      0.991 / 0.999 / 0.973; 0.986         0
power law a·L^-0.72         0.804  0.86      0.992 / 0.999 / 0.974; 0.985         0
==========================  =====  ========  ===================================  =================

WebKB, leave one university out (train on the two others + ``misc``, test on
cornell, texas, washington in turn; means; L_eff ≈ 4.7):

==========================  =====  ========  ===================================  =================
posteriors                  acc.   log-loss  AUC course / student / faculty /     ties (course)
                                             project
==========================  =====  ========  ===================================  =================
raw NB                      0.484  10.87     0.884 / 0.847 / 0.919 / 0.766        93
temperature only            0.708  1.09      0.896 / 0.847 / 0.920 / 0.837        4
length-normalised (chosen)  0.594  1.13      0.896 / 0.859 / 0.935 / 0.857        4
power law                   0.595  1.06      0.898 / 0.864 / 0.937 / 0.859        4
==========================  =====  ========  ===================================  =================

Temperature scaling alone removes most saturation but changes the ranking
little (it helps WebKB ``project``); the length normalisation is what improves
it across the board, at no cost in 20 Newsgroups accuracy. In-distribution on
WebKB it costs some accuracy (the default model's hold-out: 0.650 raw, 0.624
calibrated). The remaining WebKB ties are pages with identical tokens (e.g.
image-only assignment pages). A second, power-law parameter was within 0.005
AUC of ``L_eff / L`` and was not kept. WebKB accuracy is low for every variant
because the test universities are ~73% ``other`` pages while the training
pages (mostly ``misc``) are ~35% ``other``: a prior shift, not a ranking
problem. α = 0.1 had the best or tied-best calibrated macro AUC among 0.01,
0.03, 0.1, 0.3 and 1 on both corpora (1 costs 8 points of 20 Newsgroups
accuracy).

Models are joblib files (pickles): load only models you built or trust.
"""

from __future__ import annotations

import difflib
import logging
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import joblib
import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp
from sklearn.feature_extraction.text import HashingVectorizer

from focused.learning.text import tokenize

if TYPE_CHECKING:
    from focused.learning.crossfit import CrossFitCritic

__all__ = [
    "FORMAT_VERSION",
    "Critic",
    "ModelError",
    "Topic",
    "UnknownTopicError",
    "Verdict",
    "load_critic",
    "save_bundle",
]

logger = logging.getLogger(__name__)

#: Version of the ``kind="nb"`` bundle layout written by :meth:`Critic.save`.
FORMAT_VERSION = 1
#: Default additive (Lidstone) smoothing (chosen on 20 Newsgroups and WebKB, see the module docstring).
DEFAULT_ALPHA = 0.1
#: Share of the training pages held out to fit the length scale.
HOLDOUT_FRACTION = 0.2
#: Search range of the effective length ``L_eff`` (tokens).
LENGTH_SCALE_BOUNDS = (0.01, 1e5)
#: Topics listed in an :class:`UnknownTopicError` message before abbreviating.
MAX_LISTED_TOPICS = 40
_TOKENIZER_NAME = f"{tokenize.__module__}.{tokenize.__qualname__}"
_REBUILD_HINT = (
    "Rebuild the default model with `make models` (or `focused models`), "
    "or train one with `focused train-critic --webkb ARCHIVE -o PATH`."
)


class ModelError(Exception):
    """A critic model file is missing, corrupt or of an incompatible format."""


class UnknownTopicError(ValueError):
    """A topic names no class or prefix of the critic's taxonomy."""

    def __init__(self, message: str, *, topic: str = "", valid: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.topic = topic
        self.valid = list(valid)


@dataclass(frozen=True)
class Topic:
    """A crawl topic: a union of classes and subtrees of the critic's taxonomy.

    ``prefixes`` are the normalised parts of the spec (``Science.Physics``);
    ``classes`` the critic classes they cover, in the critic's class order, at
    positions ``indices`` of its posteriors.
    """

    name: str
    prefixes: tuple[str, ...]
    classes: tuple[str, ...]
    indices: np.ndarray = field(compare=False, repr=False)

    def matches(self, label: str) -> bool:
        """Whether a ground-truth ``label`` (several may be joined by ``|``) is in the topic."""
        for part in label.split("|"):
            part = part.strip()
            for prefix in self.prefixes:
                if part == prefix or part.startswith(prefix + "."):
                    return True
        return False


@dataclass(frozen=True)
class Verdict:
    """The critic's judgement of one page for one topic."""

    relevance: float  #: Pr(topic | page), in [0, 1]
    predicted_class: str
    top_classes: tuple[str, ...]  #: the best three classes, best first


class Critic:
    """Multinomial naive Bayes over hashed word counts, with calibrated posteriors.

    Build one with :meth:`train` or :func:`load_critic`; the constructor takes
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
        self._vectorizer = _vectorizer(self.n_features)
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
        X = _vectorizer(n_features).transform(texts)
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
            fit, held = _stratified_split(y, HOLDOUT_FRACTION, seed)
            if len(held) and len(np.unique(y[fit])) == len(classes):
                part = cls(classes, *_counts(X[fit], y[fit], len(classes)), alpha=alpha, n_features=n_features)
                loglik, lengths = part._log_likelihood(X[held])
                length_scale, stats = _fit_length_scale(part.class_log_prior_, loglik, lengths, y[held])
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
        if len(texts) == 0:  # sklearn's hasher cannot transform an empty batch
            return sp.csr_matrix((0, self.n_features), dtype=np.float64)
        return self._vectorizer.transform(texts)

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
        names: set[str] = set()
        for cls_name in self.classes:
            parts = cls_name.split(".")
            names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        names.discard("")
        return sorted(names)

    def resolve_topic(self, spec: str) -> Topic:
        """Resolve ``spec`` into a :class:`Topic`.

        ``spec`` is a class, a prefix of the hierarchy (a subtree; ``/`` works as
        a separator, as in ``Science/Physics``) or a comma-separated union of
        those. Names match exactly or, failing that, case-insensitively.

        Raises
        ------
        UnknownTopicError
            When a part names nothing; the message lists the valid topics.
        """
        # Reads only ``classes`` and ``topics()``: CrossFitCritic reuses this method.
        valid = self.topics()
        exact = set(valid)
        folded: dict[str, list[str]] = {}
        for name in valid:
            folded.setdefault(name.casefold(), []).append(name)
        prefixes: list[str] = []
        for raw in str(spec).split(","):
            part = raw.strip().replace("/", ".").strip(".")
            if part in exact:
                prefixes.append(part)
            elif len(folded.get(part.casefold(), [])) == 1:
                prefixes.append(folded[part.casefold()][0])
            else:
                raise UnknownTopicError(_unknown_message(raw.strip(), spec, valid), topic=raw.strip(), valid=valid)
        prefixes = list(dict.fromkeys(prefixes))
        covered = [i for i, c in enumerate(self.classes) if any(c == p or c.startswith(p + ".") for p in prefixes)]
        indices = np.array(covered, dtype=np.intp)
        indices.setflags(write=False)
        return Topic(
            name=",".join(prefixes),
            prefixes=tuple(prefixes),
            classes=tuple(self.classes[i] for i in covered),
            indices=indices,
        )

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
            raise ModelError(f"not a naive Bayes critic bundle (kind={kind!r}). {_REBUILD_HINT}")
        version = bundle.get("format_version")
        if version != FORMAT_VERSION:
            raise ModelError(
                f"critic model format version {version!r} is not supported (this code reads "
                f"version {FORMAT_VERSION}). {_REBUILD_HINT}"
            )
        try:
            features = bundle["features"]
            if features.get("tokenizer") != _TOKENIZER_NAME or features.get("alternate_sign") is not False:
                raise ModelError(f"critic model uses different features ({features}). {_REBUILD_HINT}")
            parts = bundle["feature_count"]
            feature_count = sp.csr_matrix(
                (parts["data"], parts["indices"], parts["indptr"]), shape=tuple(parts["shape"])
            )
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
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ModelError(f"critic model is incomplete or inconsistent ({exc!r}). {_REBUILD_HINT}") from exc

    def save(self, path: str | Path) -> Path:
        """Write the model to ``path`` (joblib, compressed, atomically); return the path."""
        return save_bundle(self.to_bundle(), path)

    @classmethod
    def load(cls, path: str | Path) -> Critic | CrossFitCritic:
        """Same as :func:`load_critic`."""
        return load_critic(path)

    def __repr__(self) -> str:
        scale = "uncalibrated" if self.length_scale is None else f"L_eff={self.length_scale:.3g}"
        return f"<Critic nb: {len(self.classes)} classes, alpha={self.alpha:g}, {scale}>"


# ---------------------------------------------------------------------- module functions


def save_bundle(bundle: dict[str, Any], path: str | Path) -> Path:
    """Write a model bundle with joblib through a temporary file and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            joblib.dump(bundle, fh, compress=3)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_critic(path: str | Path) -> Critic | CrossFitCritic:
    """Load a critic model file written by :meth:`Critic.save` (or a cross-fitted one).

    Dispatches on the bundle's ``kind``: ``"nb"`` gives a :class:`Critic`,
    ``"crossfit"`` a :class:`focused.learning.crossfit.CrossFitCritic`.

    Raises
    ------
    ModelError
        For a missing, unreadable or corrupt file, an unknown kind or an
        unsupported format version; the message says how to rebuild the model.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"critic model not found: {path}. {_REBUILD_HINT}")
    try:
        bundle = joblib.load(path)
    except Exception as exc:  # a corrupt pickle can raise almost anything
        raise ModelError(f"cannot read critic model {path} ({type(exc).__name__}: {exc}). {_REBUILD_HINT}") from exc
    if not isinstance(bundle, dict) or "kind" not in bundle:
        raise ModelError(f"{path} is not a focused critic model. {_REBUILD_HINT}")
    kind = bundle["kind"]
    try:
        if kind == Critic.kind:
            return Critic.from_bundle(bundle)
        if kind == "crossfit":
            from focused.learning.crossfit import CrossFitCritic

            return CrossFitCritic.from_bundle(bundle)
    except ModelError as exc:
        hint = "" if _REBUILD_HINT in str(exc) else f" {_REBUILD_HINT}"
        raise ModelError(f"{path}: {exc}{hint}") from exc
    except ImportError as exc:
        raise ModelError(f"{path}: this build cannot read {kind!r} models ({exc}). {_REBUILD_HINT}") from exc
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ModelError(f"{path}: incomplete or inconsistent {kind!r} model ({exc!r}). {_REBUILD_HINT}") from exc
    raise ModelError(f"{path}: unknown critic model kind {kind!r}. {_REBUILD_HINT}")


# ---------------------------------------------------------------------- helpers


def _vectorizer(n_features: int) -> HashingVectorizer:
    return HashingVectorizer(
        n_features=n_features,
        alternate_sign=False,
        norm=None,
        tokenizer=tokenize,
        lowercase=False,
        token_pattern=None,
        dtype=np.float64,
    )


def _counts(X: sp.csr_matrix, y: np.ndarray, n_classes: int) -> tuple[np.ndarray, sp.csr_matrix]:
    """Pages per class and summed token counts per class (float32 CSR)."""
    onehot = sp.csr_matrix((np.ones(len(y)), (y, np.arange(len(y)))), shape=(n_classes, len(y)))
    feature_count = sp.csr_matrix(onehot @ X, dtype=np.float32)
    feature_count.eliminate_zeros()
    feature_count.sort_indices()
    return np.bincount(y, minlength=n_classes).astype(np.float64), feature_count


def _stratified_split(y: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (fit, held out): ``fraction`` of each class with ≥ 2 pages held out (at least one)."""
    rng = np.random.default_rng(seed)
    held: list[np.ndarray] = []
    for cls_idx in np.unique(y):
        members = np.flatnonzero(y == cls_idx)
        if len(members) < 2:
            continue
        take = min(len(members) - 1, max(1, round(fraction * len(members))))
        held.append(rng.permutation(members)[:take])
    held_idx = np.sort(np.concatenate(held)) if held else np.array([], dtype=np.int64)
    mask = np.ones(len(y), dtype=bool)
    mask[held_idx] = False
    return np.flatnonzero(mask), held_idx


def _softmax(scores: np.ndarray) -> np.ndarray:
    scores = scores - scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    return scores


def _fit_length_scale(
    log_prior: np.ndarray, loglik: np.ndarray, lengths: np.ndarray, y: np.ndarray
) -> tuple[float, dict[str, float]]:
    """Fit ``L_eff`` by minimising the smoothed hold-out log-loss; return it and hold-out stats."""
    n, n_classes = loglik.shape
    eps = 1.0 / (n + 2)  # Platt's target smoothing: n pages cannot justify more confidence
    targets = np.full((n, n_classes), eps / (n_classes - 1))
    targets[np.arange(n), y] = 1.0 - eps
    per_token = loglik / np.maximum(lengths, 1.0)[:, None]

    def loss(log_scale: float) -> float:
        scores = log_prior[None, :] + np.exp(log_scale) * per_token
        logp = scores - logsumexp(scores, axis=1, keepdims=True)
        return float(-(targets * logp).sum(axis=1).mean())

    lo, hi = np.log(LENGTH_SCALE_BOUNDS[0]), np.log(LENGTH_SCALE_BOUNDS[1])
    result = minimize_scalar(loss, bounds=(lo, hi), method="bounded", options={"xatol": 1e-4})
    scale = float(np.exp(result.x))

    def stats(scores: np.ndarray) -> tuple[float, float]:
        logp = scores - logsumexp(scores, axis=1, keepdims=True)
        true = np.maximum(logp[np.arange(n), y], np.log(1e-15))
        return float((scores.argmax(axis=1) == y).mean()), float(-true.mean())

    acc_raw, loss_raw = stats(log_prior[None, :] + loglik)
    acc_cal, loss_cal = stats(log_prior[None, :] + scale * per_token)
    return scale, {
        "length_scale": scale,
        "holdout_accuracy_raw": acc_raw,
        "holdout_log_loss_raw": loss_raw,
        "holdout_accuracy": acc_cal,
        "holdout_log_loss": loss_cal,
    }


def _unknown_message(part: str, spec: str, valid: Sequence[str]) -> str:
    what = f"unknown topic {part!r}" if part == spec.strip() else f"unknown topic {part!r} in {spec!r}"
    if not part:
        what = f"empty topic in {spec!r}"
    close = difflib.get_close_matches(part.replace("/", "."), valid, n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    listed = ", ".join(valid[:MAX_LISTED_TOPICS])
    if len(valid) > MAX_LISTED_TOPICS:
        listed += f", ... ({len(valid) - MAX_LISTED_TOPICS} more; `focused topics --model PATH` lists all)"
    return f"{what}{hint}. Valid topics: {listed}"
