"""The apprentice's learner: collects link instances and fits frozen models (Chakrabarti et al. 2002, §2.3).

See :mod:`focused.learning.apprentice` for the method; :class:`Apprentice` keeps
the instances and their per-bucket sufficient statistics, and :meth:`Apprentice.fit`
returns an immutable :class:`~focused.learning.apprentice.model.ApprenticeModel`.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from typing import Any

import numpy as np
import scipy.sparse as sp

from focused.learning.apprentice.features import N_FEATURES
from focused.learning.apprentice.instances import InstanceBuffer, SlotCounts, kept_past_bound
from focused.learning.apprentice.model import (
    FORMAT_VERSION,
    LEARNER_KIND,
    MAX_SIDE,
    ApprenticeModel,
    Features,
    as_compact,
    check_bundle,
    check_n_features,
    check_params,
    read_apprentice_file,
)
from focused.learning.apprentice.stats import equal_prob_threshold, nb_weights, rebucket, stacked_sigmoid
from focused.learning.modelfile import ModelFileError, save_model

__all__ = ["Apprentice", "NotReadyError"]

logger = logging.getLogger(__name__)


class NotReadyError(RuntimeError):
    """The apprentice has no instance in one of its buckets and cannot be fitted."""


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
    max_instances
        The most instances kept (0: no bound; else at least ``min_instances``): past it the oldest are
        dropped, their counts taken back, down to nine tenths of it (:attr:`dropped` counts them), so a long
        crawl's learner stops growing; the equal-prob threshold is then the median of the instances kept.
        A bound on this process's memory, not a parameter of the model: files do not store it.

    Memory: the per-bucket counts are kept for the features seen only
    (:class:`~focused.learning.apprentice.instances.SlotCounts`); the raw instances as ids of about 2 bytes
    (gaps, :class:`~focused.learning.apprentice.instances.InstanceBuffer`; ~13 MB for 100k links of 60
    features): they let equal-prob binning move instances between buckets, feed the calibration, and
    make :meth:`save` resumable. :meth:`add` and :meth:`fit` may run in different threads.
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
        max_instances: int = 0,
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
        check_params(self.get_params())
        self.max_instances = 0
        self.limit(max_instances)
        #: instances dropped by the bound so far
        self.dropped = 0

        self._lock = threading.Lock()
        self._instances = InstanceBuffer(self.n_side)
        self._features = SlotCounts(self.n_features)  # the counts are of the buckets at _bucket_threshold
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
        return self._instances.n

    @property
    def version(self) -> int:
        """Version of the last fitted model (0 before the first :meth:`fit`)."""
        return self._version

    @property
    def ready(self) -> bool:
        """True once there are ``min_instances`` instances and both buckets can be non-empty."""
        return self.n_instances >= self.min_instances and self._has_both_buckets()

    def _has_both_buckets(self) -> bool:
        if self.binning == "fixed":
            return 0 < self._n_high_fixed < self.n_instances
        return self._rel_max > self._rel_min

    def add(self, features: Features, relevances: Any, side: np.ndarray | None = None) -> None:
        """Add instances: the features of links (u, v) and the relevance Pr(c*|v) of their targets.

        ``features`` is a CSR count matrix, lists of feature strings, or compact
        id arrays; ``relevances`` are in [0, 1]; ``side`` (n, ``n_side``) holds
        the side features, required when ``n_side > 0``. Only the new instances
        are touched: the per-bucket counts are updated in place.
        """
        rel = np.asarray(relevances, dtype=np.float64).ravel()
        arrays = as_compact(features, self.n_features)
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
            self._instances.append(ids, lengths, rel, side if self.n_side else None)
            self._features.add(ids, np.repeat(rel >= self._bucket_threshold, lengths), +1)
            self._n_high_fixed += int(np.count_nonzero(rel >= self.threshold))
            self._rel_min = min(self._rel_min, float(rel.min()))
            self._rel_max = max(self._rel_max, float(rel.max()))
            n = self._instances.n
            if self.max_instances and n > self.max_instances:
                self._drop_oldest(n - max(1, self.min_instances, kept_past_bound(self.max_instances)))

    def limit(self, max_instances: int) -> None:
        """Keep at most ``max_instances`` instances from the next :meth:`add` on (0: no bound)."""
        least = max(1, self.min_instances)
        if max_instances < 0 or 0 < max_instances < least:
            raise ValueError(f"max_instances must be 0 (no bound) or at least {least}, got {max_instances}")
        self.max_instances = int(max_instances)

    def _drop_oldest(self, d: int) -> None:
        """Forget the ``d`` oldest instances (under the lock): their counts taken back from their buckets, the
        slots of the features no instance has any more given up."""
        ids, lengths, rel = self._instances.drop_oldest(d)
        self._features.add(ids, np.repeat(rel >= self._bucket_threshold, lengths), -1)
        self._features.retire()
        self._n_high_fixed -= int(np.count_nonzero(rel >= self.threshold))
        kept = self._instances.rel[: self._instances.n]
        self._rel_min, self._rel_max = float(kept.min()), float(kept.max())
        self.dropped += d

    def current_threshold(self) -> float:
        """The relevance at or above which an instance is HIGH, given the data so far."""
        if self.binning == "fixed":
            return self.threshold
        return equal_prob_threshold(self._instances.rel[: self._instances.n])

    def fit(self) -> ApprenticeModel:
        """Return a new frozen model from all instances so far (the apprentice itself keeps learning).

        Raises :class:`NotReadyError` if a bucket is empty. Fitting below
        ``min_instances`` is allowed (offline use); online callers check :attr:`ready`.
        """
        with self._lock:
            instances = self._instances
            n = instances.n
            rel, indptr, ids = instances.rel[:n], instances.indptr[: n + 1], instances.ids
            side = instances.side[:n]
            threshold = self.current_threshold()
            high = rel >= threshold
            n_high = int(np.count_nonzero(high))
            if n_high == 0 or n_high == n:
                raise NotReadyError(f"need instances in both buckets (have {n_high} HIGH of {n})")
            if threshold != self._bucket_threshold:
                features = self._features
                rebucket(features.counts, indptr, ids, rel, self._bucket_threshold, threshold, features.slot_of)
                self._bucket_threshold = threshold
            counts, feature_ids, slot_of = self._features.snapshot()
            self._version += 1
            version = self._version

        prior = math.log(n_high / (n - n_high))
        # the calibration first: its temporaries are a fit's peak, and the weights need not be held meanwhile
        slope, intercept, side_weights = stacked_sigmoid(
            counts,
            rel,
            indptr,
            ids,
            high,
            side,
            alpha=self.alpha,
            normalize=self.normalize,
            folds=self.calibration_folds,
            max_instances=self.calibration_max,
            slot_of=slot_of,
        )
        log_ratio, known = nb_weights(counts, self.alpha)
        n_known = int(known.sum())
        del known, counts  # a float per slot, for the log line
        model = ApprenticeModel(
            weights=log_ratio,
            feature_ids=feature_ids,
            slot_of=slot_of,
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
            version, n, 100 * n_high / n, threshold, n_known, slope, intercept, np.round(side_weights, 3),
        )  # fmt: skip
        return model

    # ------------------------------------------------------------------ files

    def to_bundle(self) -> dict[str, Any]:
        """Parameters and instances as plain arrays and builtins; what :meth:`save` writes."""
        with self._lock:
            instances = self._instances
            n = instances.n
            return {
                "kind": LEARNER_KIND,
                "format_version": FORMAT_VERSION,
                "params": self.get_params(),
                "feature_params": dict(self.feature_params),
                "stats": {
                    "ids": instances.all_ids(),
                    "indptr": instances.indptr[: n + 1].copy(),
                    "relevances": instances.rel[:n].copy(),
                    "side": instances.side[:n].copy(),
                    "version": self._version,
                },
            }

    @classmethod
    def from_bundle(cls, bundle: Mapping[str, Any]) -> Apprentice:
        """Rebuild a learner from :meth:`to_bundle` output; :class:`ModelFileError` if it is not one.

        The per-bucket counts are rebuilt from the stored instances.
        """
        check_bundle(bundle, LEARNER_KIND)
        try:
            params = dict(bundle["params"])
            check_n_features(params.get("n_features", N_FEATURES))
            if not 0 <= int(params.get("n_side", 0)) <= MAX_SIDE:
                raise ValueError(f"n_side outside 0..{MAX_SIDE}")
            app = cls(**params, feature_params=dict(bundle["feature_params"]))
            stats = bundle["stats"]
            ids = np.asarray(stats["ids"], dtype=np.int32)
            indptr = np.asarray(stats["indptr"], dtype=np.int64)
            rel = np.asarray(stats["relevances"], dtype=np.float64)
            if indptr.ndim != 1 or len(indptr) != len(rel) + 1 or indptr[0] != 0 or indptr[-1] != len(ids):
                raise ValueError("inconsistent instance arrays")
            if np.any(np.diff(indptr) < 0):
                raise ValueError("inconsistent instance arrays")
            arrays = [ids[indptr[i] : indptr[i + 1]] for i in range(len(rel))]
            side = np.asarray(stats["side"], dtype=np.float64) if app.n_side else None
            app.add(arrays, rel, side)
            app._version = int(stats["version"])
            return app
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise ModelFileError(f"corrupt apprentice state ({exc})") from exc

    def save(self, path: str | PathLike[str]) -> None:
        """Write parameters and instances to ``path`` as one model file (``.npz`` whatever the name), atomically.

        :meth:`load` resumes training from it.
        """
        save_model(self.to_bundle(), path)

    @classmethod
    def load(cls, path: str | PathLike[str]) -> Apprentice:
        """Read a learner written by :meth:`save`; :class:`ModelFileError` (one line) if it is not one."""
        return read_apprentice_file(path, LEARNER_KIND, cls.from_bundle)


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
