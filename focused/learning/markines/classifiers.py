"""Markines et al. (2004): binary word-presence classifiers of pages and of link contexts.

Markines, Erdinc and Stoilova, *Focused Crawlers vs Accelerated Focused Crawlers*
(project report, April 2004) score a link either by the relevance of its whole source
page (their *baseline*) or by the words around the link in the source page (their
*apprentice*: words at DOM distance <= 10 on either side of the ``<a>``, no offsets),
each with three classifiers over the *presence* of k selected words:

* ``nb``: Bernoulli ("binomial") naive Bayes, Laplace smoothing. It is linear in the
  presence vector, so it is stored as ``coef`` and ``intercept`` and Pr(on topic | x) =
  σ(coef·x + intercept);
* ``svm``: a linear SVM (liblinear, squared hinge loss, balanced class weights) whose decision
  value f(x) = coef·x + intercept is mapped to a probability by Platt's sigmoid
  1 / (1 + exp(a f + b)), with a and b fitted on 3-fold cross-validated decision values
  (Platt's smoothed targets);
* ``cosine``: cosine similarity between the L2-normalised presence vector and the
  centroid of the normalised positive instances (in [0, 1]; the paper's "query" is that
  centroid here, not 30 top words).

Feature selection (:func:`select_features`) keeps the top k words (default 500) by

* ``df``: class-size-normalised document frequency, max over the two classes,
  ``max_c df_c(w) / N_c`` (the paper normalises DF for the size of the topics);
* ``mi``: the expected mutual information between the presence of w and the class
  (Manning et al., IR book §13.5.1), Σ_{e_w, e_c} P(e_w, e_c) log P(e_w, e_c) / (P(e_w) P(e_c)).
  The paper writes the average *pointwise* MI (Yang & Pedersen's I_avg), which is
  −∞ for a word absent from one class, i.e. it rejects the most discriminating words;
  expected MI does not.

Ties are broken by the word, so selection is deterministic. Everything is plain numpy
arrays (:class:`MarkinesPart`), saved with :mod:`focused.learning.modelfile`; no pickle.
This module knows nothing of Scrapy or of crawl databases (:mod:`.markines_data`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from focused.learning.modelfile import ModelFileError, read_model, save_model

__all__ = [
    "CLASSIFIERS",
    "DEFAULT_K",
    "FORMAT_VERSION",
    "KIND",
    "LINK_D_MAX",
    "MODES",
    "SELECTIONS",
    "MarkinesModel",
    "MarkinesPart",
    "fit_part",
    "platt_sigmoid",
    "select_features",
]

KIND = "markines"
FORMAT_VERSION = 1
CLASSIFIERS = ("nb", "svm", "cosine")
MODES = ("link", "page")
SELECTIONS = ("df", "mi")
#: Top k words kept by feature selection (the paper's default).
DEFAULT_K = 500
#: The paper's link context: text at DOM distance <= 10 from the HREF.
LINK_D_MAX = 10
#: What to do about a bad model file.
HINT = "Train one with `focused train-markines --db CRAWL.sqlite --out FILE.npz`."

Doc = Iterable[str]


# ---------------------------------------------------------------------- feature selection


def _doc_counts(docs: Sequence[Doc], y: np.ndarray) -> tuple[Counter[str], Counter[str]]:
    """Documents of each class containing each word: (positive counts, negative counts)."""
    pos: Counter[str] = Counter()
    neg: Counter[str] = Counter()
    for doc, label in zip(docs, y, strict=True):
        (pos if label else neg).update(set(doc))
    return pos, neg


def feature_scores(docs: Sequence[Doc], labels: Sequence[bool] | np.ndarray, method: str) -> dict[str, float]:
    """The selection score of every word of ``docs`` (see the module docstring for ``df`` and ``mi``)."""
    if method not in SELECTIONS:
        raise ValueError(f"unknown feature selection {method!r}; valid: {', '.join(SELECTIONS)}")
    y = np.asarray(labels, dtype=bool)
    n = len(y)
    n_pos = int(y.sum())
    n_neg = n - n_pos
    pos, neg = _doc_counts(docs, y)
    scores: dict[str, float] = {}
    for word in pos.keys() | neg.keys():
        a, b = pos[word], neg[word]  # docs with the word, by class
        if method == "df":
            scores[word] = max(a / n_pos if n_pos else 0.0, b / n_neg if n_neg else 0.0)
            continue
        mi = 0.0
        # cells (word present?, positive?) of the 2x2 table
        for count, n_word, n_class in (
            (a, a + b, n_pos),
            (b, a + b, n_neg),
            (n_pos - a, n - a - b, n_pos),
            (n_neg - b, n - a - b, n_neg),
        ):
            if count:
                mi += count / n * np.log(count * n / (n_word * n_class))
        scores[word] = float(mi)
    return scores


def select_features(
    docs: Sequence[Doc], labels: Sequence[bool] | np.ndarray, method: str = "df", k: int = DEFAULT_K
) -> list[str]:
    """The top ``k`` words by ``method`` (``df`` or ``mi``), best first, ties by word."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    scores = feature_scores(docs, labels, method)
    return sorted(scores, key=lambda w: (-scores[w], w))[:k]


def presence_matrix(docs: Sequence[Doc], vocabulary: Mapping[str, int]) -> sp.csr_matrix:
    """Binary (n, k) matrix: 1 where the document contains the vocabulary word."""
    rows: list[int] = []
    cols: list[int] = []
    for i, doc in enumerate(docs):
        hits = {vocabulary[w] for w in doc if w in vocabulary}
        rows.extend([i] * len(hits))
        cols.extend(hits)
    data = np.ones(len(rows), dtype=np.float64)
    return sp.csr_matrix((data, (rows, cols)), shape=(len(docs), len(vocabulary)))


# ---------------------------------------------------------------------- classifiers


def _bernoulli_nb(X: sp.csr_matrix, y: np.ndarray, alpha: float = 1.0) -> tuple[np.ndarray, float]:
    """Bernoulli naive Bayes as a linear model: log-odds = coef·x + intercept."""
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    p1 = (np.asarray(X[y].sum(axis=0)).ravel() + alpha) / (n_pos + 2 * alpha)
    p0 = (np.asarray(X[~y].sum(axis=0)).ravel() + alpha) / (n_neg + 2 * alpha)
    coef = np.log(p1) - np.log1p(-p1) - np.log(p0) + np.log1p(-p0)
    intercept = float(np.log(n_pos / n_neg) + np.sum(np.log1p(-p1) - np.log1p(-p0)))
    return coef, intercept


def platt_sigmoid(decision: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Platt's (1999) a, b such that Pr(y=1 | f) = 1 / (1 + exp(a f + b)), with his smoothed targets.

    Newton's method with backtracking on the regularised log loss (Lin, Lin and Weng 2007).
    """
    f = np.asarray(decision, dtype=np.float64)
    y = np.asarray(y, dtype=bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    t = np.where(y, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    a, b = 0.0, float(np.log((n_neg + 1.0) / (n_pos + 1.0)))

    def loss(a: float, b: float) -> float:
        z = a * f + b
        return float(np.sum(t * z + np.logaddexp(0.0, -z)))

    current = loss(a, b)
    for _ in range(100):
        z = a * f + b
        p = 1.0 / (1.0 + np.exp(np.clip(z, -500, 500)))  # Pr(y=1)
        g = t - p  # d loss / dz
        w = np.maximum(p * (1 - p), 1e-12)
        grad = np.array([np.dot(g, f), g.sum()])
        hess = np.array([[np.dot(w, f * f) + 1e-12, np.dot(w, f)], [np.dot(w, f), w.sum() + 1e-12]])
        if np.max(np.abs(grad)) < 1e-6:
            break
        step = np.linalg.solve(hess, grad)
        scale = 1.0
        while scale > 1e-10:
            na, nb = a - scale * step[0], b - scale * step[1]
            new = loss(na, nb)
            if new < current + 1e-4 * scale * float(np.dot(grad, -step)):
                a, b, current = na, nb, new
                break
            scale /= 2
        else:
            break
    return float(a), float(b)


def _linear_svm(X: sp.csr_matrix, y: np.ndarray, c: float, seed: int) -> tuple[np.ndarray, float, float, float]:
    """A linear SVM and its Platt sigmoid: (coef, intercept, a, b)."""
    from sklearn.model_selection import StratifiedKFold
    from sklearn.svm import LinearSVC

    def fit(Xf: sp.csr_matrix, yf: np.ndarray) -> LinearSVC:
        return LinearSVC(C=c, class_weight="balanced", dual=True, max_iter=5000, random_state=seed).fit(Xf, yf)

    folds = min(3, int(y.sum()), int((~y).sum()))
    decision = np.zeros(len(y))
    if folds >= 2:
        for train, held in StratifiedKFold(folds, shuffle=True, random_state=seed).split(np.zeros(len(y)), y):
            decision[held] = fit(X[train], y[train]).decision_function(X[held])
    svm = fit(X, y)
    if folds < 2:  # too few of a class to cross-validate: calibrate on the training decisions
        decision = svm.decision_function(X)
    a, b = platt_sigmoid(decision, y)
    return svm.coef_.ravel().astype(np.float64), float(svm.intercept_[0]), a, b


def _centroid(X: sp.csr_matrix, y: np.ndarray) -> np.ndarray:
    norms = np.sqrt(np.asarray(X[y].sum(axis=1)).ravel())  # binary rows: ||x|| = sqrt(#words)
    rows = sp.diags(1.0 / np.maximum(norms, 1.0)) @ X[y]
    return np.asarray(rows.mean(axis=0)).ravel()


# ---------------------------------------------------------------------- a fitted part


@dataclass
class MarkinesPart:
    """The three classifiers of one mode (link or page) over one selected vocabulary."""

    vocabulary: list[str]
    nb_coef: np.ndarray
    nb_intercept: float
    svm_coef: np.ndarray
    svm_intercept: float
    sigmoid_a: float
    sigmoid_b: float
    centroid: np.ndarray
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        k = len(self.vocabulary)
        for name in ("nb_coef", "svm_coef", "centroid"):
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            if arr.shape != (k,):
                raise ValueError(f"{name} has shape {arr.shape}, expected ({k},)")
            setattr(self, name, arr)
        self._index = {w: i for i, w in enumerate(self.vocabulary)}
        if len(self._index) != k:
            raise ValueError("the vocabulary has repeated words")
        norm = float(np.linalg.norm(self.centroid))
        self._unit_centroid = self.centroid / norm if norm > 0 else self.centroid

    def transform(self, docs: Sequence[Doc]) -> sp.csr_matrix:
        return presence_matrix(docs, self._index)

    def score(self, docs: Sequence[Doc], classifier: str) -> np.ndarray:
        """Pr(on topic) (``nb``, ``svm``) or the cosine to the centroid (``cosine``), in [0, 1]."""
        X = self.transform(docs)
        if classifier == "nb":
            return _expit(X @ self.nb_coef + self.nb_intercept)
        if classifier == "svm":
            return _expit(-(self.sigmoid_a * (X @ self.svm_coef + self.svm_intercept) + self.sigmoid_b))
        if classifier == "cosine":
            lengths = np.sqrt(np.asarray(X.sum(axis=1)).ravel())
            return np.clip((X @ self._unit_centroid) / np.maximum(lengths, 1.0), 0.0, 1.0)
        raise ValueError(f"unknown classifier {classifier!r}; valid: {', '.join(CLASSIFIERS)}")

    def to_bundle(self) -> dict[str, Any]:
        return {
            "vocabulary": list(self.vocabulary),
            "nb": {"coef": self.nb_coef, "intercept": self.nb_intercept},
            "svm": {
                "coef": self.svm_coef,
                "intercept": self.svm_intercept,
                "sigmoid_a": self.sigmoid_a,
                "sigmoid_b": self.sigmoid_b,
            },
            "cosine": {"centroid": self.centroid},
            "info": self.info,
        }

    @classmethod
    def from_bundle(cls, bundle: Mapping[str, Any]) -> MarkinesPart:
        svm = bundle["svm"]
        return cls(
            vocabulary=[str(w) for w in bundle["vocabulary"]],
            nb_coef=bundle["nb"]["coef"],
            nb_intercept=float(bundle["nb"]["intercept"]),
            svm_coef=svm["coef"],
            svm_intercept=float(svm["intercept"]),
            sigmoid_a=float(svm["sigmoid_a"]),
            sigmoid_b=float(svm["sigmoid_b"]),
            centroid=bundle["cosine"]["centroid"],
            info=dict(bundle.get("info") or {}),
        )


def fit_part(
    docs: Sequence[Doc],
    labels: Sequence[bool] | np.ndarray,
    *,
    selection: str = "df",
    k: int = DEFAULT_K,
    c: float = 1.0,
    seed: int = 0,
) -> MarkinesPart:
    """Select k words and fit the three classifiers on word-presence documents.

    Raises ``ValueError`` when a class has no instance (nothing to tell apart).
    """
    y = np.asarray(labels, dtype=bool)
    if len(y) != len(docs):
        raise ValueError(f"{len(docs)} documents but {len(y)} labels")
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == len(y):
        raise ValueError(f"need instances of both classes, got {n_pos} positive of {len(y)}")
    docs = [list(d) for d in docs]
    vocabulary = select_features(docs, y, selection, k)
    X = presence_matrix(docs, {w: i for i, w in enumerate(vocabulary)})
    nb_coef, nb_intercept = _bernoulli_nb(X, y)
    svm_coef, svm_intercept, a, b = _linear_svm(X, y, c, seed)
    info = {"selection": selection, "k": k, "n_instances": len(y), "n_positive": n_pos, "svm_c": c}
    return MarkinesPart(vocabulary, nb_coef, nb_intercept, svm_coef, svm_intercept, a, b, _centroid(X, y), info)


def _expit(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(np.asarray(z, dtype=np.float64), -500, 500)))


# ---------------------------------------------------------------------- the model file


class MarkinesModelError(ModelFileError):
    """A Markines model file is missing, corrupt, or of another kind or version."""


@dataclass
class MarkinesModel:
    """The link part and/or the page part, with how their inputs are extracted."""

    parts: dict[str, MarkinesPart]
    d_max: int = LINK_D_MAX
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_bundle(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            "format_version": FORMAT_VERSION,
            "parts": {mode: part.to_bundle() for mode, part in self.parts.items()},
            "features": {"d_max": self.d_max, "offsets": False, "tokenizer": "focused.learning.linkfeatures.tokenize"},
            "metadata": self.metadata,
        }

    def save(self, path: str | Path) -> Path:
        return save_model(self.to_bundle(), path)

    @classmethod
    def load(cls, path: str | Path) -> MarkinesModel:
        """Read a model written by :meth:`save`; one-line :class:`MarkinesModelError` otherwise."""
        bundle = read_model(path, {KIND: (FORMAT_VERSION,)}, what="Markines model", hint=HINT, error=MarkinesModelError)
        try:
            parts = {str(m): MarkinesPart.from_bundle(p) for m, p in bundle["parts"].items()}
            unknown = set(parts) - set(MODES)
            if unknown or not parts:
                raise ValueError(f"parts {sorted(parts)}, expected some of {MODES}")
            return cls(parts, int(bundle["features"]["d_max"]), dict(bundle.get("metadata") or {}))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise MarkinesModelError(f"{path}: incomplete or inconsistent Markines model ({exc!r}). {HINT}") from exc
