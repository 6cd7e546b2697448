"""The apprentice: an online naive Bayes learner of link promise (Chakrabarti et al. 2002, §2.2-2.3).

An instance is the ⟨t, d⟩ feature multiset of a link (u, v) together with the
critic's relevance Pr(c*|v) of the fetched target. Relevances go into two
buckets, LOW and HIGH (the two-bucket case of Torgo and Gama's regression by
classification, §2.3), and a multinomial naive Bayes model estimates
Pr(HIGH | features of (u, v)), the priority of an unfetched v.

Besides the hashed ⟨t, d⟩ features an instance may carry ``n_side`` dense
*side features*: the critic's own views of the link, the logit of Pr(c*|u)
and of Pr(c*|anchor text of (u, v)) (:func:`critic_views`). They do not enter
naive Bayes; they are stacked with its held-out evidence in the logistic
regression that calibrates it, so the data decide how far to trust the critic's
reading of the source page and of the anchor against the learned link context.

:class:`Apprentice` accumulates instances and their sufficient statistics;
:meth:`Apprentice.fit` returns an immutable :class:`ApprenticeModel`, so a
crawler can keep serving one model while the next one trains in another
thread, then swap the reference.
"""

from __future__ import annotations

import logging
import math
import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import Any, TypeAlias

import joblib
import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

from focused.learning.linkfeatures import N_FEATURES, compact_many, from_compact

logger = logging.getLogger(__name__)

FORMAT = "focused.apprentice"
FORMAT_VERSION = 2
#: Versions :func:`_load_bundle` still reads (1: no side features).
READABLE_VERSIONS = (1, 2)
#: Inverse L2 strength of the calibration/stacking logistic regression (standardised NB score, side
#: features in logit units): weak on thousands of instances, firm on the few dozen of an early model.
_STACK_C = 1.0
#: Side features are logits clipped to this magnitude (probabilities 4.5e-5 .. 1 - 4.5e-5).
LOGIT_CLIP = 10.0

BINNINGS = ("fixed", "equal-prob")
NORMALIZATIONS = ("none", "sqrt", "length")

#: What :meth:`Apprentice.add` and :meth:`ApprenticeModel.predict` accept: a
#: CSR count matrix, lists of feature strings, or :func:`~focused.learning.linkfeatures.compact`
#: id arrays (one per instance).
Features: TypeAlias = sp.spmatrix | sp.sparray | Sequence[Sequence[str]] | Sequence[np.ndarray]


class ModelFileError(ValueError):
    """A model file is missing, corrupt, or of another format or version."""


class NotReadyError(RuntimeError):
    """The apprentice has no instance in one of its buckets and cannot be fitted."""


def _check_params(params: Mapping[str, Any]) -> None:
    if params["n_features"] < 1:
        raise ValueError(f"n_features must be >= 1, got {params['n_features']}")
    if not params["alpha"] > 0:
        raise ValueError(f"alpha must be > 0, got {params['alpha']}")
    if params["binning"] not in BINNINGS:
        raise ValueError(f"binning must be one of {BINNINGS}, got {params['binning']!r}")
    if params["normalize"] not in NORMALIZATIONS:
        raise ValueError(f"normalize must be one of {NORMALIZATIONS}, got {params['normalize']!r}")
    if params["min_instances"] < 0:
        raise ValueError(f"min_instances must be >= 0, got {params['min_instances']}")
    if params["calibration_folds"] < 2:
        raise ValueError(f"calibration_folds must be >= 2, got {params['calibration_folds']}")
    if params.get("n_side", 0) < 0:
        raise ValueError(f"n_side must be >= 0, got {params['n_side']}")


def critic_views(parent_relevance: float | np.ndarray, anchor_relevance: np.ndarray) -> np.ndarray:
    """Side features of links: clipped logits of Pr(c*|u) and of Pr(c*|anchor), shape (n, 2).

    ``parent_relevance`` is one value (all links of one page) or one per link.
    """
    anchor = np.asarray(anchor_relevance, dtype=np.float64).ravel()
    parent = np.broadcast_to(np.asarray(parent_relevance, dtype=np.float64), anchor.shape)
    return np.column_stack([_logit(parent), _logit(anchor)])


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return np.clip(np.log(p) - np.log1p(-p), -LOGIT_CLIP, LOGIT_CLIP)


@dataclass(frozen=True, eq=False)
class ApprenticeModel:
    """A frozen apprentice: naive Bayes weights plus a fitted sigmoid, returning Pr(HIGH | features).

    Attributes
    ----------
    log_ratio
        Per hashed feature, ``log θ_HIGH,t − log θ_LOW,t``; 0 for features
        never seen in training.
    known
        Per hashed feature, 1 if seen in training, else 0. Unseen features
        carry no evidence and do not count in the length normalisation.
    prior_log_odds
        ``log(n_HIGH / n_LOW)`` over the training instances.
    slope, intercept, side_weights
        The logistic ``Pr(HIGH) = σ(slope · score + side · side_weights + intercept)``
        fitted on held-out scores (see :meth:`score`) and the instances' side
        features; ``side_weights`` is empty for a model without side features.

    Why not the raw NB posterior: summed log-likelihood ratios grow with the
    number of features of a link (NB counts correlated words near a link as
    independent evidence), so long link contexts get extreme posteriors that
    saturate to 0 or 1 and tie in the frontier. Dividing the evidence by the
    number of known features makes scores comparable across links, and the
    sigmoid fitted by held-out log-loss turns them back into probabilities.
    On WebKB (links between pages of the corpus, leave-one-university-out,
    targets student/course/faculty/project) the mean AUC was 0.851 with
    ``"length"`` against 0.798 for the raw log-odds (α = 0.1, d_max = 5).
    """

    log_ratio: np.ndarray = field(repr=False)
    known: np.ndarray = field(repr=False)
    prior_log_odds: float
    slope: float
    intercept: float
    normalize: str
    n_features: int
    version: int
    n_instances: int
    high_rate: float
    threshold: float
    params: Mapping[str, Any] = field(repr=False)
    feature_params: Mapping[str, Any] = field(repr=False)
    side_weights: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        for name in ("log_ratio", "known", "side_weights"):
            arr = np.asarray(getattr(self, name), dtype=np.float64)  # float64: no conversion per predict
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        # Copies, so that the apprentice's later changes cannot reach a served model.
        object.__setattr__(self, "params", dict(self.params))
        object.__setattr__(self, "feature_params", dict(self.feature_params))

    def _evidence(self, X: Features) -> tuple[np.ndarray, np.ndarray]:
        """Summed log-likelihood ratio and number of known features of each instance."""
        M = _as_matrix(X, self.n_features)
        return np.asarray(M @ self.log_ratio, dtype=np.float64), np.asarray(M @ self.known, dtype=np.float64)

    def log_odds(self, X: Features) -> np.ndarray:
        """Raw naive Bayes log-odds ``log Pr(HIGH|x) − log Pr(LOW|x)`` (the paper's score, uncalibrated)."""
        evidence, _ = self._evidence(X)
        return self.prior_log_odds + evidence

    def score(self, X: Features) -> np.ndarray:
        """Evidence of each instance, normalised as ``self.normalize`` says; what the sigmoid maps.

        ``"length"`` divides the summed log-likelihood ratio by the number of
        known features of the instance, ``"sqrt"`` by its square root,
        ``"none"`` keeps the raw log-odds.
        """
        evidence, n_known = self._evidence(X)
        return _normalize(evidence, n_known, self.normalize, self.prior_log_odds)

    @property
    def n_side(self) -> int:
        """Number of side features the model expects (0: none)."""
        return int(self.side_weights.size)

    def predict(self, X: Features, side: np.ndarray | None = None) -> np.ndarray:
        """Pr(HIGH | features, side features) of each instance, strictly inside (0, 1).

        ``side`` (n, :attr:`n_side`) is required when the model has side
        features and ignored otherwise. An instance without any feature seen in
        training gets the calibrated value of zero evidence.
        """
        z = self.slope * self.score(X) + self.intercept
        if self.n_side:
            if side is None:
                raise ValueError(f"this model needs {self.n_side} side features per instance")
            side = np.asarray(side, dtype=np.float64).reshape(len(z), self.n_side)
            z = z + side @ self.side_weights
        return _sigmoid(z)

    def save(self, path: str | PathLike[str]) -> None:
        """Write the model as one joblib bundle (weights stored sparse)."""
        nz = np.flatnonzero(self.known)
        bundle = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "kind": "model",
            "params": dict(self.params),
            "feature_params": dict(self.feature_params),
            "model": {
                "indices": nz.astype(np.int32),
                "log_ratio": self.log_ratio[nz].copy(),
                "prior_log_odds": self.prior_log_odds,
                "slope": self.slope,
                "intercept": self.intercept,
                "side_weights": self.side_weights.copy(),
                "normalize": self.normalize,
                "n_features": self.n_features,
                "version": self.version,
                "n_instances": self.n_instances,
                "high_rate": self.high_rate,
                "threshold": self.threshold,
            },
        }
        joblib.dump(bundle, path, compress=3)

    @classmethod
    def load(cls, path: str | PathLike[str]) -> ApprenticeModel:
        """Read a bundle written by :meth:`save`; :class:`ModelFileError` if it is not one.

        Joblib files are pickles: load only files you trust.
        """
        bundle = _load_bundle(path, "model")
        try:
            m = bundle["model"]
            n_features = int(m["n_features"])
            indices = np.asarray(m["indices"], dtype=np.int64)
            if indices.size and (indices.min() < 0 or indices.max() >= n_features):
                raise ValueError("feature index out of range")
            log_ratio = np.zeros(n_features, dtype=np.float64)
            log_ratio[indices] = m["log_ratio"]
            known = np.zeros(n_features, dtype=np.float64)
            known[indices] = 1.0
            return cls(
                log_ratio=log_ratio,
                known=known,
                prior_log_odds=float(m["prior_log_odds"]),
                slope=float(m["slope"]),
                intercept=float(m["intercept"]),
                side_weights=np.asarray(m.get("side_weights", np.zeros(0)), dtype=np.float64).ravel(),
                normalize=str(m["normalize"]),
                n_features=n_features,
                version=int(m["version"]),
                n_instances=int(m["n_instances"]),
                high_rate=float(m["high_rate"]),
                threshold=float(m["threshold"]),
                params=bundle["params"],
                feature_params=bundle["feature_params"],
            )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ModelFileError(f"{path}: corrupt apprentice model ({exc})") from exc


class Apprentice:
    """Collects (link features, target relevance) instances and fits :class:`ApprenticeModel` snapshots.

    Parameters
    ----------
    n_features
        Dimension of the hashed feature space; must match the features given.
    alpha
        Additive smoothing of the per-bucket feature rates. The paper's Eq. 1
        uses 1; ⟨t, d⟩ features are sparse and 1 flattens them: on WebKB the
        mean AUC was 0.78 with α = 1 and 0.85 with α = 0.05-0.1. The
        vocabulary size in the denominator is the number of hashed features
        seen in training, not ``n_features``.
    threshold
        With ``binning="fixed"``, a relevance ``>= threshold`` is HIGH.
    binning
        ``"fixed"``: the threshold above. ``"equal-prob"``: Torgo and Gama's
        equally probable intervals; at every :meth:`fit` the threshold becomes
        the relevance value that splits all instances seen so far closest to
        half/half (the median, moved to the next distinct value when ties at the
        median would leave a bucket empty), so both buckets get instances as
        soon as two distinct relevances have been seen. The threshold moves as
        data arrive and instances that cross it change bucket; the sufficient
        statistics are updated for those instances only.
    min_instances
        :attr:`ready` is false until this many instances, and at least one per
        bucket, have been added; callers then fall back to the baseline's
        Pr(c*|u).
    normalize
        How the naive Bayes evidence is normalised before the sigmoid, see
        :meth:`ApprenticeModel.score`. The default ``"length"`` ranks best in
        our measurements: raw NB log-odds grow with the number of features of a
        link and saturate posteriors to 0/1 (ties in the frontier), while the
        mean log-likelihood ratio per known feature is comparable across links.
    calibration_folds, calibration_max
        The sigmoid mapping the score to Pr(HIGH) is fitted by logistic
        regression on *held-out* scores (cross-fitting on the most recent
        ``calibration_max`` instances in ``calibration_folds`` folds), because
        in-sample NB scores are over-confident. Its cost is bounded by
        ``calibration_max`` whatever the history.
    feature_params
        Opaque description of the features (``d_max``, families, ...) stored with
        the model, so that serving code can check that it computes the same ones.
    n_side
        Dense side features per instance (0: none; 2 for :func:`critic_views`),
        fitted with the calibration, not by naive Bayes.

    Memory: besides the per-bucket counts (2 × ``n_features`` float64), the
    raw instances are kept as int32 ids (about 4 bytes per feature occurrence,
    ~25 MB for 100k links of 60 features): they let equal-prob binning move
    instances between buckets, feed the calibration, and make :meth:`save`
    resumable. :meth:`add` and :meth:`fit` may run in different threads.
    """

    def __init__(
        self,
        *,
        n_features: int = N_FEATURES,
        alpha: float = 0.1,
        threshold: float = 0.5,
        binning: str = "fixed",
        min_instances: int = 100,
        normalize: str = "length",
        calibration_folds: int = 5,
        calibration_max: int = 20_000,
        feature_params: Mapping[str, Any] | None = None,
        n_side: int = 0,
    ) -> None:
        self.n_features = int(n_features)
        self.alpha = float(alpha)
        self.threshold = float(threshold)
        self.binning = binning
        self.min_instances = int(min_instances)
        self.normalize = normalize
        self.calibration_folds = int(calibration_folds)
        self.calibration_max = int(calibration_max)
        self.feature_params = dict(feature_params or {})
        self.n_side = int(n_side)
        _check_params(self.get_params())

        self._lock = threading.Lock()
        self._ids = np.zeros(1024, dtype=np.int32)
        self._n_ids = 0
        self._indptr = np.zeros(129, dtype=np.int64)
        self._rel = np.zeros(128, dtype=np.float64)
        self._side = np.zeros((128, self.n_side), dtype=np.float64)
        self._n = 0
        self._counts = np.zeros((2, self.n_features), dtype=np.float64)  # [LOW, HIGH] x feature
        self._bucket_threshold = self.threshold if binning == "fixed" else math.inf
        self._n_high_fixed = 0
        self._rel_min = math.inf
        self._rel_max = -math.inf
        self._version = 0

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (stored in saved files)."""
        return {
            "n_features": self.n_features,
            "alpha": self.alpha,
            "threshold": self.threshold,
            "binning": self.binning,
            "min_instances": self.min_instances,
            "normalize": self.normalize,
            "calibration_folds": self.calibration_folds,
            "calibration_max": self.calibration_max,
            "n_side": self.n_side,
        }

    @property
    def n_instances(self) -> int:
        """Number of instances added so far."""
        return self._n

    @property
    def version(self) -> int:
        """Version of the last fitted model (0 before the first :meth:`fit`)."""
        return self._version

    @property
    def ready(self) -> bool:
        """True once there are ``min_instances`` instances and both buckets can be non-empty."""
        return self._n >= self.min_instances and self._has_both_buckets()

    def _has_both_buckets(self) -> bool:
        if self.binning == "fixed":
            return 0 < self._n_high_fixed < self._n
        return self._rel_max > self._rel_min

    def add(self, features: Features, relevances: Sequence[float] | np.ndarray, side: np.ndarray | None = None) -> None:
        """Add instances: the features of links (u, v) and the relevance Pr(c*|v) of their targets.

        ``features`` is a CSR count matrix, lists of feature strings, or compact
        id arrays; ``relevances`` are in [0, 1]; ``side`` (n, ``n_side``) holds
        the side features, required when ``n_side > 0``. Only the new instances
        are touched: the per-bucket counts are updated in place.
        """
        rel = np.asarray(relevances, dtype=np.float64).ravel()
        arrays = _as_compact(features, self.n_features)
        if len(arrays) != len(rel):
            raise ValueError(f"{len(arrays)} feature rows but {len(rel)} relevances")
        if not np.all(np.isfinite(rel)):
            raise ValueError("relevances must be finite")
        if self.n_side:
            if side is None:
                raise ValueError(f"this apprentice needs {self.n_side} side features per instance")
            side = np.asarray(side, dtype=np.float64)
            if side.shape != (len(rel), self.n_side) or not np.all(np.isfinite(side)):
                raise ValueError(f"side features must be a finite ({len(rel)}, {self.n_side}) array")
        if len(rel) == 0:
            return
        lengths = np.fromiter((len(a) for a in arrays), dtype=np.int64, count=len(arrays))
        ids = np.concatenate(arrays).astype(np.int32, copy=False) if lengths.sum() else np.zeros(0, np.int32)
        with self._lock:
            n, k = self._n, len(rel)
            self._reserve(n + k, self._n_ids + len(ids))
            self._ids[self._n_ids : self._n_ids + len(ids)] = ids
            self._indptr[n + 1 : n + k + 1] = self._n_ids + np.cumsum(lengths)
            self._rel[n : n + k] = rel
            if self.n_side:
                self._side[n : n + k] = side
            self._n_ids += len(ids)
            self._n += k
            high = rel >= self._bucket_threshold
            _add_counts(self._counts, ids, np.repeat(high, lengths), +1)
            self._n_high_fixed += int(np.count_nonzero(rel >= self.threshold))
            self._rel_min = min(self._rel_min, float(rel.min()))
            self._rel_max = max(self._rel_max, float(rel.max()))

    def _reserve(self, n: int, n_ids: int) -> None:
        """Grow the buffers geometrically; old arrays stay valid for a concurrent :meth:`fit`."""
        if n > len(self._rel):
            size = max(n, 2 * len(self._rel))
            rel = np.zeros(size, dtype=np.float64)
            rel[: self._n] = self._rel[: self._n]
            indptr = np.zeros(size + 1, dtype=np.int64)
            indptr[: self._n + 1] = self._indptr[: self._n + 1]
            side = np.zeros((size, self.n_side), dtype=np.float64)
            side[: self._n] = self._side[: self._n]
            self._rel, self._indptr, self._side = rel, indptr, side
        if n_ids > len(self._ids):
            ids = np.zeros(max(n_ids, 2 * len(self._ids)), dtype=np.int32)
            ids[: self._n_ids] = self._ids[: self._n_ids]
            self._ids = ids

    def current_threshold(self) -> float:
        """The relevance at or above which an instance is HIGH, given the data so far."""
        if self.binning == "fixed":
            return self.threshold
        return _equal_prob_threshold(self._rel[: self._n])

    def fit(self) -> ApprenticeModel:
        """Return a new frozen model from all instances so far (the apprentice itself keeps learning).

        Raises :class:`NotReadyError` if a bucket is empty. Fitting below
        ``min_instances`` is allowed (offline use); online callers check :attr:`ready`.
        """
        with self._lock:
            n = self._n
            rel, indptr, ids = self._rel[:n], self._indptr[: n + 1], self._ids[: self._n_ids]
            side = self._side[:n]
            threshold = self.current_threshold()
            high = rel >= threshold
            n_high = int(np.count_nonzero(high))
            if n_high == 0 or n_high == n:
                raise NotReadyError(f"need instances in both buckets (have {n_high} HIGH of {n})")
            if threshold != self._bucket_threshold:
                self._rebucket(threshold)
            counts = self._counts.copy()
            self._version += 1
            version = self._version

        log_ratio, known = _nb_weights(counts, self.alpha)
        prior = math.log(n_high / (n - n_high))
        slope, intercept, side_weights = self._calibrate(counts, rel, indptr, ids, high, side)
        model = ApprenticeModel(
            log_ratio=log_ratio,
            known=known,
            prior_log_odds=prior,
            slope=slope,
            intercept=intercept,
            side_weights=side_weights,
            normalize=self.normalize,
            n_features=self.n_features,
            version=version,
            n_instances=n,
            high_rate=n_high / n,
            threshold=threshold,
            params=self.get_params(),
            feature_params=self.feature_params,
        )
        logger.debug(
            "Apprentice v%d: %d instances, %.1f%% HIGH (threshold %.3g), %d features, sigmoid %.3g*s%+.3g, side %s",
            version, n, 100 * n_high / n, threshold, int(known.sum()), slope, intercept, np.round(side_weights, 3),
        )  # fmt: skip
        return model

    def _rebucket(self, threshold: float) -> None:
        """Move the instances whose bucket changes with the new threshold (lock held)."""
        n = self._n
        rel = self._rel[:n]
        old = rel >= self._bucket_threshold
        new = rel >= threshold
        moved = np.flatnonzero(old != new)
        if moved.size:
            pos, lengths = _segments(self._indptr, moved)
            ids = self._ids[pos]
            to_high = np.repeat(new[moved], lengths)
            _add_counts(self._counts, ids, to_high, +1)
            _add_counts(self._counts, ids, ~to_high, -1)
        self._bucket_threshold = threshold

    def _calibrate(
        self,
        counts: np.ndarray,
        rel: np.ndarray,
        indptr: np.ndarray,
        ids: np.ndarray,
        high: np.ndarray,
        side: np.ndarray,
    ) -> tuple[float, float, np.ndarray]:
        """Fit σ(a·score + side·w + b) to held-out scores of the most recent instances (cross-fitting).

        The model of fold k is the full counts minus fold k's own counts, so
        each fold costs time in its own size only, whatever the history. The
        side features are already out-of-sample (the critic never saw the link),
        so they enter the logistic regression as they are: it learns how much
        each view of the critic adds to the link context (stacking).
        """
        n = len(rel)
        sample = np.arange(max(0, n - self.calibration_max), n)
        k = self.calibration_folds if len(sample) >= 2 * self.calibration_folds else 1
        scores = np.zeros(len(sample))
        y = high[sample]
        n_high = int(np.count_nonzero(high))
        totals = counts.sum(axis=1)
        vocab = int(np.count_nonzero(counts[0] + counts[1]))
        for fold in range(k):
            rows = sample[fold::k]
            pos, lengths = _segments(indptr, rows)
            uniq, inv = np.unique(ids[pos], return_inverse=True)
            row_of = np.repeat(np.arange(rows.size), lengths)
            fold_high = np.repeat(high[rows], lengths)
            c = counts[:, uniq].copy()
            fh = int(np.count_nonzero(high[rows]))
            if k > 1:  # held out: remove the fold's own occurrences
                c[1] -= np.bincount(inv[fold_high], minlength=uniq.size)
                c[0] -= np.bincount(inv[~fold_high], minlength=uniq.size)
                n_l = totals[0] - np.count_nonzero(~fold_high)
                n_h = totals[1] - np.count_nonzero(fold_high)
                was_known = counts[0, uniq] + counts[1, uniq] > 0
                v = vocab - int(np.count_nonzero(was_known & (c[0] + c[1] <= 0)))
                prior = math.log((n_high - fh + 0.5) / (n - n_high - (rows.size - fh) + 0.5))
            else:
                n_l, n_h, v = totals[0], totals[1], vocab
                prior = math.log((n_high + 0.5) / (n - n_high + 0.5))
            known = c[0] + c[1] > 0
            a = self.alpha
            lr = np.where(known, np.log((c[1] + a) / (n_h + a * v)) - np.log((c[0] + a) / (n_l + a * v)), 0.0)
            evidence = np.bincount(row_of, weights=lr[inv], minlength=rows.size)
            n_known = np.bincount(row_of, weights=known[inv].astype(np.float64), minlength=rows.size)
            scores[fold::k] = _normalize(evidence, n_known, self.normalize, prior)
        no_side = np.zeros(self.n_side)
        if y.all() or not y.any():
            logger.debug("Apprentice calibration sample is degenerate; predicting the base rate")
            return (*_flat(y), no_side)
        # The NB score is standardised (its scale is arbitrary); side features stay in logit units, so that
        # the L2 penalty keeps a view that barely varies in the sample (one page's logit, say) from getting
        # a huge weight that swings on the next page.
        scale = float(np.std(scores)) or 1.0
        S = side[sample]
        lr_model = LogisticRegression(C=_STACK_C, solver="newton-cholesky", max_iter=100)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence chatter on separable samples
            lr_model.fit(np.column_stack([scores / scale, S]), y)
        slope = float(lr_model.coef_[0, 0]) / scale
        side_weights = lr_model.coef_[0, 1:].copy()
        if slope <= 0:
            # Held-out evidence does not rank HIGH above LOW: keep NB's order with a
            # negligible slope rather than invert it.
            logger.info("Apprentice link-context evidence is not predictive on held-out data (slope %.3g)", slope)
            if not self.n_side:
                return (*_flat(y), no_side)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lr_model.fit(S, y)
            return 1e-6, float(lr_model.intercept_[0]), lr_model.coef_[0].copy()
        return slope, float(lr_model.intercept_[0]), side_weights

    def save(self, path: str | PathLike[str]) -> None:
        """Write parameters, statistics and instances as one joblib bundle, to resume training later."""
        with self._lock:
            n = self._n
            bundle = {
                "format": FORMAT,
                "format_version": FORMAT_VERSION,
                "kind": "apprentice",
                "params": self.get_params(),
                "feature_params": dict(self.feature_params),
                "stats": {
                    "ids": self._ids[: self._n_ids].copy(),
                    "indptr": self._indptr[: n + 1].copy(),
                    "relevances": self._rel[:n].copy(),
                    "side": self._side[:n].copy(),
                    "version": self._version,
                },
            }
        joblib.dump(bundle, path, compress=3)

    @classmethod
    def load(cls, path: str | PathLike[str]) -> Apprentice:
        """Read a bundle written by :meth:`save`; :class:`ModelFileError` if it is not one.

        The per-bucket counts are rebuilt from the stored instances. Joblib files
        are pickles: load only files you trust.
        """
        bundle = _load_bundle(path, "apprentice")
        try:
            app = cls(**bundle["params"], feature_params=bundle["feature_params"])
            stats = bundle["stats"]
            ids = np.asarray(stats["ids"], dtype=np.int32)
            indptr = np.asarray(stats["indptr"], dtype=np.int64)
            rel = np.asarray(stats["relevances"], dtype=np.float64)
            if len(indptr) != len(rel) + 1 or indptr[0] != 0 or indptr[-1] != len(ids):
                raise ValueError("inconsistent instance arrays")
            if np.any(np.diff(indptr) < 0):
                raise ValueError("inconsistent instance arrays")
            arrays = [ids[indptr[i] : indptr[i + 1]] for i in range(len(rel))]
            side = np.asarray(stats["side"], dtype=np.float64) if app.n_side else None
            app.add(arrays, rel, side)
            app._version = int(stats["version"])
            return app
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFileError(f"{path}: corrupt apprentice state ({exc})") from exc


def train_from_instances(
    features_iter: Iterable[Sequence[str]] | Features,
    relevances: Sequence[float] | np.ndarray,
    **params: Any,
) -> ApprenticeModel:
    """Fit a model offline from (link features, target relevance) instances (the paper's §3.5).

    ``params`` are :class:`Apprentice` parameters.
    """
    app = Apprentice(**params)
    if not sp.issparse(features_iter) and not isinstance(features_iter, Sequence):
        features_iter = list(features_iter)
    app.add(features_iter, relevances)
    return app.fit()


def _load_bundle(path: str | PathLike[str], kind: str) -> dict[str, Any]:
    try:
        bundle = joblib.load(path)
    except FileNotFoundError as exc:
        raise ModelFileError(f"{path}: no such apprentice file") from exc
    except Exception as exc:  # unpickling garbage fails in many ways
        raise ModelFileError(f"{path}: not a readable joblib file ({exc!r})") from exc
    if not isinstance(bundle, dict) or bundle.get("format") != FORMAT:
        raise ModelFileError(f"{path}: not an apprentice file")
    version = bundle.get("format_version")
    if version not in READABLE_VERSIONS:
        raise ModelFileError(f"{path}: format version {version!r}, this code reads {READABLE_VERSIONS}")
    if bundle.get("kind") != kind:
        raise ModelFileError(f"{path}: holds an apprentice {bundle.get('kind')!r}, expected {kind!r}")
    return bundle


def _as_matrix(X: Features, n_features: int) -> sp.csr_matrix:
    """CSR count matrix of any accepted feature input, checked against ``n_features``."""
    if sp.issparse(X):
        M = sp.csr_matrix(X)
        if M.shape[1] != n_features:
            raise ValueError(f"features have {M.shape[1]} columns, the model {n_features}")
        return M
    rows = list(X)
    if rows and isinstance(rows[0], np.ndarray):
        return from_compact(rows, n_features)
    return from_compact(compact_many(rows, n_features), n_features)


def _as_compact(X: Features, n_features: int) -> list[np.ndarray]:
    """Compact id arrays (repeats for counts) of any accepted feature input."""
    if sp.issparse(X):
        M = sp.csr_matrix(X)
        if M.shape[1] != n_features:
            raise ValueError(f"features have {M.shape[1]} columns, the apprentice {n_features}")
        if M.nnz and M.data.min() < 0:
            raise ValueError("feature counts must be non-negative")
        reps = np.rint(M.data).astype(np.int64)
        ids = np.repeat(M.indices.astype(np.int32), reps)
        lengths = np.add.reduceat(reps, M.indptr[:-1]) if M.nnz else np.zeros(M.shape[0], np.int64)
        lengths[np.diff(M.indptr) == 0] = 0
        return np.split(ids, np.cumsum(lengths)[:-1])
    rows = list(X)
    if rows and isinstance(rows[0], np.ndarray):
        out = [np.asarray(r, dtype=np.int32) for r in rows]
        for r in out:
            if r.size and (r.min() < 0 or r.max() >= n_features):
                raise ValueError(f"feature ids out of range for n_features={n_features}")
        return out
    return compact_many(rows, n_features)


def _segments(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in the id buffer of the given instances, and each instance's length."""
    starts = indptr[rows]
    lengths = indptr[rows + 1] - starts
    total = int(lengths.sum())
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return offsets + np.arange(total), lengths


def _add_counts(counts: np.ndarray, ids: np.ndarray, high: np.ndarray, sign: int) -> None:
    """counts[bucket, id] += sign for each id occurrence."""
    for bucket, mask in ((1, high), (0, ~high)):
        sel = ids[mask]
        if sel.size:
            u, c = np.unique(sel, return_counts=True)
            counts[bucket, u] += sign * c


def _nb_weights(counts: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature log θ_HIGH − log θ_LOW (Eq. 1, vocabulary = features seen) and the seen mask."""
    total = counts[0] + counts[1]
    known = total > 0
    vocab = int(np.count_nonzero(known))
    n_low, n_high = counts[0].sum(), counts[1].sum()
    log_ratio = np.zeros(counts.shape[1], dtype=np.float64)
    cl, ch = counts[0, known], counts[1, known]
    log_ratio[known] = np.log((ch + alpha) / (n_high + alpha * vocab)) - np.log((cl + alpha) / (n_low + alpha * vocab))
    return log_ratio, known.astype(np.float64)


def _normalize(evidence: np.ndarray, n_known: np.ndarray, how: str, prior: float) -> np.ndarray:
    evidence = np.asarray(evidence, dtype=np.float64).ravel()
    n_known = np.asarray(n_known, dtype=np.float64).ravel()
    if how == "none":
        return prior + evidence
    denom = np.maximum(n_known, 1.0)
    return evidence / (np.sqrt(denom) if how == "sqrt" else denom)


def _flat(y: np.ndarray) -> tuple[float, float]:
    """A sigmoid that keeps the evidence order but predicts about the base rate of ``y``."""
    rate = float(np.clip(np.mean(y), 1e-3, 1 - 1e-3))
    return 1e-6, math.log(rate / (1 - rate))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    # Clipped so that Pr(HIGH) stays strictly inside (0, 1) and distinct scores stay distinct.
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))


def _equal_prob_threshold(rel: np.ndarray) -> float:
    """The distinct relevance value t such that ``rel >= t`` is closest to half of ``rel``.

    The smallest value is never chosen (it would leave LOW empty); with a
    single distinct value, ``inf`` (everything LOW, not ready).
    """
    values = np.unique(rel)
    if values.size < 2:
        return math.inf
    s = np.sort(rel)
    frac_high = 1.0 - np.searchsorted(s, values[1:], side="left") / len(s)
    return float(values[1:][np.argmin(np.abs(frac_high - 0.5))])
