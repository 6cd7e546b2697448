"""The critic's discriminative verdict: a logistic regression on the naive Bayes critic's own features.

Scrapy-free. The naive Bayes critic answers two questions with one posterior:
*is this page on topic* (its verdict: the page's label, the harvest estimate,
the apprentice's and the sibling feedback's evidence) and *do this page's links
lead to the topic* (the parent view of its links' priors). It is good at the
second and poor at the first where the classes share a vocabulary: on the
WebKB track's held-out universities its page verdicts have an average
precision of 0.30 against the true labels (staff pages taken for faculty,
course lists for courses), and a department page that names many professors
gets a fair Pr(faculty), which is what makes its links worth following.

A :class:`VerdictHead` answers the first question alone: a one-vs-rest logistic
regression (scikit-learn's ``SGDClassifier``, log loss) on the same hashed
counts, sublinear tf-idf weighted and L2-normalised, trained on the critic's
own training pages. On the same held-out universities its verdicts have an
average precision of 0.66. As the parent view of a link's prior it is worse
(its probabilities are sharp and blend badly with the anchor view: the
ceiling study in docs/results.md), so a critic with a head keeps the naive Bayes
posterior for that (:attr:`~focused.learning.critic.topics.Verdict.link_relevance`).

Scoring needs numpy and scipy only: the weights are stored as a sparse matrix
over the features seen in training (plain arrays in the model file), and the
probabilities are computed as scikit-learn's ``predict_proba`` computes them
for one-vs-rest (each class's sigmoid, normalised over the classes).

A two-class head may be a positive-unlabelled learner's (:mod:`focused.learning.critic.examples`):
its regression tells the labelled positives from unlabelled pages, and with ``pu_c`` (Elkan and
Noto's c, the mean score of held-out positives) the topic class ``pu_class`` gets
Pr(topic | page) = min(1, g(page) / c), the background the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from focused.learning.critic.products import times

__all__ = ["HEAD_FORMAT", "VerdictHead", "train_head"]

#: The head's layout in a model file (its ``verdict_head`` entry); bumped when it changes (2: ``pu_c``).
HEAD_FORMAT = 2
#: The layouts this code reads.
READABLE_HEAD_FORMATS = (1, 2)
#: L2 penalty of the regression (scikit-learn's ``alpha``) and its passes over the pages.
DEFAULT_ALPHA = 1e-5
EPOCHS = 30
#: Weights kept per class, the largest in magnitude: the L2 fit gives every seen feature a weight, most of
#: them tiny (105 classes of the Wikipedia critic, 5 folds: 287 MB unpruned). On the WebKB track's held-out
#: universities, keeping 2% of the weights (about 1,100 per class) leaves the verdicts' average precision
#: within 0.01 (0.606 / 0.767 / 0.671 → 0.611 / 0.760 / 0.676).
MAX_WEIGHTS = 2000


@dataclass(frozen=True, eq=False)
class VerdictHead:
    """A fitted head: ``coef`` (n_classes, n_features) sparse, ``intercept`` (n_classes,), and the
    inverse document frequency of each feature (``idf``, sparse: 0 where unseen) with ``idf_unseen``
    for the features no training page had (they still weigh in a page's norm)."""

    coef: sp.csr_matrix  # float32
    intercept: np.ndarray
    idf: np.ndarray  # (n_features,) float64, 0 for a feature no training page had
    idf_unseen: float
    alpha: float = DEFAULT_ALPHA
    #: positive-unlabelled scaling: Pr(class ``pu_class``) = min(1, g / ``pu_c``) (None: a plain head)
    pu_c: float | None = None
    pu_class: int = 0
    # derived from ``coef`` when first needed (:meth:`_by_feature`): the weights feature by feature
    _scoring: sp.csr_matrix | None = field(init=False, repr=False, default=None)

    def _by_feature(self) -> sp.csr_matrix:
        """The weights as an (n_features, n_classes) CSR matrix (``coef`` transposed, float32), built once.

        A page's scores are its weighted counts times this matrix: a sparse product that adds each class's
        terms page feature by page feature, in the page's order, as the dense block of the weighted features'
        weights that it replaced did, to the last bit (``tests/test_verdict_head_memory.py``), in a tenth of
        the memory for the Wikipedia critic, whose frequent words have weights in every class (so the terms
        are about as many) and rare ones in a few. Built from ``coef`` as it is stored (n_classes, n_features),
        the product converted it on every call. Figures: docs/results.md, "Memory of the 3,000-page default
        crawl"."""
        scoring = self._scoring
        if scoring is None:
            scoring = sp.csr_matrix(self.coef.T, dtype=np.float32)
            scoring.sort_indices()
            object.__setattr__(self, "_scoring", scoring)
        return scoring

    def __getstate__(self) -> dict[str, Any]:
        """What a pickle holds (the page-analysis worker's copy): the weights, not the matrix derived from them."""
        return {**self.__dict__, "_scoring": None}

    def tfidf(self, X: sp.csr_matrix) -> sp.csr_matrix:
        """Sublinear tf (1 + log n), times idf, L2-normalised per row."""
        X = sp.csr_matrix(X)
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        weights = self._weights(X, rows)
        return sp.csr_matrix((weights, X.indices.copy(), X.indptr.copy()), shape=X.shape)

    def _weights(self, X: sp.csr_matrix, rows: np.ndarray) -> np.ndarray:
        idf = np.take(self.idf, X.indices)
        idf = np.where(idf > 0, idf, self.idf_unseen)
        weights = (1.0 + np.log(np.maximum(X.data.astype(np.float64), 1.0))) * idf
        norms = np.sqrt(np.bincount(rows, weights=weights**2, minlength=X.shape[0]))
        return weights / np.maximum(norms, 1e-12)[rows]

    def posteriors(self, X: sp.csr_matrix) -> np.ndarray:
        """Pr(c | page) of hashed counts ``X`` (n, n_features): rows sum to 1."""
        X = sp.csr_matrix(X)
        n, k = X.shape[0], len(self.intercept)
        rows = np.repeat(np.arange(n), np.diff(X.indptr))
        weights = self._weights(X, rows)  # over every feature of the page: the norm counts them all
        # float32 as the weights: a float64 page would make scipy copy the weights to float64 every call
        product = times(weights.astype(np.float32), X.indices, X.indptr, self._by_feature())
        scores = product.astype(np.float64) + self.intercept[None, :]
        prob = 1.0 / (1.0 + np.exp(-np.clip(scores, -500, 500)))
        total = prob.sum(axis=1, keepdims=True)
        post = np.where(total > 0, prob / np.maximum(total, 1e-300), 1.0 / k)
        if self.pu_c is not None:  # two classes: the topic's g / c, the background the rest
            topic = np.clip(post[:, self.pu_class] / self.pu_c, 0.0, 1.0)
            post[:, 1 - self.pu_class] = 1.0 - topic
            post[:, self.pu_class] = topic
        return post

    # ------------------------------------------------------------------ model files

    def to_bundle(self) -> dict[str, Any]:
        """Plain arrays and numbers (a model file's ``verdict_head`` entry)."""
        seen = np.flatnonzero(self.idf > 0)
        return {
            "format": HEAD_FORMAT,
            "coef": {
                "data": self.coef.data.astype(np.float32),
                "indices": self.coef.indices.astype(np.int32),
                "indptr": self.coef.indptr.astype(np.int64),
                "shape": tuple(int(n) for n in self.coef.shape),
            },
            "intercept": self.intercept.astype(np.float64),
            "idf_indices": seen.astype(np.int32),
            "idf_values": self.idf[seen].astype(np.float64),
            "idf_unseen": float(self.idf_unseen),
            "alpha": float(self.alpha),
            "pu_c": None if self.pu_c is None else float(self.pu_c),
            "pu_class": int(self.pu_class),
        }

    @classmethod
    def from_bundle(cls, bundle: dict[str, Any], n_classes: int, n_features: int) -> VerdictHead:
        """Rebuild from :meth:`to_bundle` output; ``ValueError`` for another layout or inconsistent arrays."""
        if not isinstance(bundle, dict) or bundle.get("format") not in READABLE_HEAD_FORMATS:
            got = bundle.get("format") if isinstance(bundle, dict) else type(bundle).__name__
            raise ValueError(
                f"verdict head format {got!r} is not supported "
                f"(this code reads {', '.join(map(str, READABLE_HEAD_FORMATS))})"
            )
        parts = bundle["coef"]
        coef = sp.csr_matrix((parts["data"], parts["indices"], parts["indptr"]), shape=tuple(parts["shape"]))
        coef.check_format(full_check=True)  # indices in range: a file is not trusted
        if coef.shape != (n_classes, n_features):
            raise ValueError(f"verdict head has shape {coef.shape}, expected ({n_classes}, {n_features})")
        intercept = np.asarray(bundle["intercept"], dtype=np.float64).ravel()
        indices = np.asarray(bundle["idf_indices"], dtype=np.int64).ravel()
        values = np.asarray(bundle["idf_values"], dtype=np.float64).ravel()
        if intercept.shape != (n_classes,) or indices.shape != values.shape:
            raise ValueError("verdict head arrays disagree in length")
        if len(indices) and (indices.min() < 0 or indices.max() >= n_features):
            raise ValueError("verdict head idf indices out of range")
        if not (np.isfinite(values).all() and np.isfinite(intercept).all() and np.isfinite(coef.data).all()):
            raise ValueError("verdict head holds non-finite numbers")
        idf = np.zeros(n_features, dtype=np.float64)
        idf[indices] = values
        pu_c, pu_class = bundle.get("pu_c"), int(bundle.get("pu_class") or 0)
        if pu_c is not None and not (n_classes == 2 and 0.0 < float(pu_c) <= 1.0 and pu_class in (0, 1)):
            raise ValueError(f"verdict head scaling c={pu_c!r} of class {pu_class} is not a two-class head's")
        return cls(
            coef.astype(np.float32),
            intercept,
            idf,
            float(bundle["idf_unseen"]),
            float(bundle["alpha"]),
            None if pu_c is None else float(pu_c),
            pu_class,
        )


def train_head(
    X: sp.csr_matrix,
    y: np.ndarray,
    n_classes: int,
    *,
    alpha: float = DEFAULT_ALPHA,
    seed: int = 0,
    max_weights: int | None = MAX_WEIGHTS,
) -> VerdictHead:
    """Fit a head on hashed counts ``X`` (n, n_features) of pages of classes ``y`` (0 … n_classes − 1),
    keeping the ``max_weights`` largest weights of each class (``None``: all)."""
    from sklearn.linear_model import SGDClassifier

    n, n_features = X.shape
    df = np.bincount(sp.csr_matrix(X).indices, minlength=n_features)
    idf_unseen = float(np.log(1.0 + n) + 1.0)
    idf = np.where(df > 0, np.log((1.0 + n) / (1.0 + df)) + 1.0, 0.0)
    head = VerdictHead(sp.csr_matrix((n_classes, n_features)), np.zeros(n_classes), idf, idf_unseen, alpha)
    model = SGDClassifier(loss="log_loss", alpha=alpha, max_iter=EPOCHS, tol=None, random_state=seed)
    model.fit(head.tfidf(X), y)
    coef = np.zeros((n_classes, n_features))
    intercept = np.full(n_classes, -30.0)  # a class no page had: never predicted
    rows = [int(c) for c in model.classes_]
    if len(rows) == 2:  # scikit-learn keeps one weight vector for two classes: the second class's
        coef[rows[1]], intercept[rows[1]] = model.coef_[0], model.intercept_[0]
        coef[rows[0]], intercept[rows[0]] = -model.coef_[0], -model.intercept_[0]
    else:
        coef[rows], intercept[rows] = model.coef_, model.intercept_
    coef[:, df == 0] = 0.0  # unseen features carry no weight (the solver leaves them at 0 anyway)
    if max_weights is not None and max_weights < n_features:
        small = np.argsort(-np.abs(coef), axis=1, kind="stable")[:, max_weights:]
        np.put_along_axis(coef, small, 0.0, axis=1)
    # float32, as the model file keeps it: a loaded head computes what the trained one did
    return VerdictHead(sp.csr_matrix(coef, dtype=np.float32), intercept, idf, idf_unseen, alpha)
