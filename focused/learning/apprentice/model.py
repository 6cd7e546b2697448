"""The frozen apprentice model, what a crawler serves, and the apprentice's model files.

:class:`ApprenticeModel` maps the ⟨t, d⟩ features of a link (and the critic's
views of it, :func:`critic_views`) to Pr(HIGH), the promise of its target. It is
immutable, so a crawler can serve one while the learner
(:class:`~focused.learning.apprentice.learner.Apprentice`) fits the next.

Both the model and the learner are saved as model files
(:mod:`focused.learning.modelfile`: plain arrays and a JSON header, never a
pickle) of kinds ``"apprentice-model"`` and ``"apprentice"``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import Any, TypeAlias, TypeVar

import numpy as np
import scipy.sparse as sp

from focused.learning.apprentice.countmatrix import from_compact
from focused.learning.apprentice.features import compact_many
from focused.learning.apprentice.stats import normalize_evidence, sigmoid
from focused.learning.modelfile import ModelFileError, read_model, save_model

__all__ = [
    "BINNINGS",
    "FORMAT_VERSION",
    "LEARNER_KIND",
    "LOGIT_CLIP",
    "MAX_FEATURES",
    "MAX_SIDE",
    "MODEL_KIND",
    "NORMALIZATIONS",
    "READABLE_VERSIONS",
    "ApprenticeModel",
    "Features",
    "as_compact",
    "as_matrix",
    "check_bundle",
    "check_n_features",
    "check_params",
    "critic_views",
    "read_apprentice_file",
]

#: Version of the apprentice bundles (2: side features).
FORMAT_VERSION = 2
#: Versions the readers accept (1: no side features, kept for files converted by ``focused convert-model``).
READABLE_VERSIONS = (1, 2)
#: Model file kinds: the frozen model and the learner with its instances.
MODEL_KIND = "apprentice-model"
LEARNER_KIND = "apprentice"
#: Largest hashed feature space a file may declare: a crafted file must not make us allocate terabytes.
MAX_FEATURES = 2**24
#: Side features are logits clipped to this magnitude (probabilities 4.5e-5 .. 1 - 4.5e-5).
LOGIT_CLIP = 10.0

#: What :meth:`Apprentice.add` and :meth:`ApprenticeModel.predict` accept: a
#: CSR count matrix, lists of feature strings, or :func:`~focused.learning.apprentice.features.compact`
#: id arrays (one per instance).
Features: TypeAlias = sp.spmatrix | sp.sparray | Sequence[Sequence[str]] | Sequence[np.ndarray]
_T = TypeVar("_T")

BINNINGS = ("fixed", "equal-prob")
NORMALIZATIONS = ("none", "sqrt", "length")
#: Most side features a file may declare (the crawler computes 0 or 2).
MAX_SIDE = 64


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
    weights
        Per feature seen in training (a *slot*), ``log θ_HIGH,t − log θ_LOW,t``.
    feature_ids
        The hashed feature id of each slot.
    slot_of
        Over the hashed feature space, each feature's slot (int32; −1, or a slot at or past
        ``len(weights)``, for a feature this model never saw). The learner's own map, shared by every
        model it fits: it only ever gains features, which an older model does not count as seen.
        Features never seen carry no evidence and do not count in the length normalisation.
    prior_log_odds
        ``log(n_HIGH / n_LOW)`` over the training instances.
    slope, intercept, side_weights
        The logistic ``Pr(HIGH) = σ(slope · score + side · side_weights + intercept)``
        fitted on held-out scores (see :meth:`score`) and the instances' side
        features; ``side_weights`` is empty for a model without side features.

    Memory: the weights of the features seen only (8 bytes each, plus 4 for their ids), not one
    float per hashed id (two dense float64 arrays over 2^20 ids were 16 MB a model, and a crawl
    holds several models). :attr:`log_ratio` and :attr:`known` give the dense view when asked.

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

    weights: np.ndarray = field(repr=False)
    feature_ids: np.ndarray = field(repr=False)
    slot_of: np.ndarray = field(repr=False)
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
    # derived in __post_init__: the weights with a last 0.0, the column of every feature the model never saw
    _padded: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        weights = np.asarray(self.weights, dtype=np.float64).ravel()  # float64: no conversion per predict
        ids = np.asarray(self.feature_ids, dtype=np.int32).ravel()
        slot_of = np.asarray(self.slot_of)
        if ids.shape != weights.shape or slot_of.shape != (self.n_features,) or slot_of.dtype != np.int32:
            raise ValueError("apprentice model arrays disagree in length or type")
        padded = np.append(weights, 0.0)
        view = slot_of.view()  # the learner's map stays writable for the learner only
        for name, arr in (("_padded", padded), ("slot_of", view), ("feature_ids", ids.copy())):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "weights", padded[:-1])
        side = np.asarray(self.side_weights, dtype=np.float64).copy()
        side.setflags(write=False)
        object.__setattr__(self, "side_weights", side)
        # Copies, so that the apprentice's later changes cannot reach a served model.
        object.__setattr__(self, "params", dict(self.params))
        object.__setattr__(self, "feature_params", dict(self.feature_params))

    @classmethod
    def from_sparse(cls, n_features: int, indices: np.ndarray, log_ratio: np.ndarray, **fields: Any) -> ApprenticeModel:
        """A model of the distinct feature ids ``indices`` (each in ``[0, n_features)``) and their weights,
        with its own map of the feature space."""
        ids = np.asarray(indices, dtype=np.int64).ravel()
        slot_of = np.full(n_features, -1, dtype=np.int32)
        slot_of[ids] = np.arange(len(ids), dtype=np.int32)
        return cls(
            weights=log_ratio, feature_ids=ids.astype(np.int32), slot_of=slot_of, n_features=n_features, **fields
        )

    @property
    def n_known(self) -> int:
        """Number of distinct features seen in training."""
        return int(self.weights.size)

    @property
    def log_ratio(self) -> np.ndarray:
        """Dense per hashed id log ratio (0 for features never seen); built on demand, read-only."""
        dense = np.zeros(self.n_features, dtype=np.float64)
        dense[self.feature_ids] = self.weights
        dense.setflags(write=False)
        return dense

    @property
    def known(self) -> np.ndarray:
        """Dense per hashed id 1.0 if seen in training, else 0.0; built on demand, read-only."""
        dense = np.zeros(self.n_features, dtype=np.float64)
        dense[self.feature_ids] = 1.0
        dense.setflags(write=False)
        return dense

    def _evidence(self, X: Features) -> tuple[np.ndarray, np.ndarray]:
        """Summed log-likelihood ratio and number of known features of each instance.

        The count matrix's columns are renumbered to slots (a feature the model never saw goes to the
        padding column, whose weight is 0.0), keeping each row's entries in their order: the product
        adds the same terms in the same order as one with a dense weight per hashed id did, so the
        evidence is the same to the last bit.
        """
        M = as_matrix(X, self.n_features)
        n_slots = self.weights.size
        # np.take: faster than indexing with millions of ids (docs/results.md, re-scoring)
        slots = np.asarray(np.take(self.slot_of, M.indices), dtype=np.int32).view(np.uint32)
        np.minimum(slots, n_slots, out=slots)  # unseen (-1 wraps past 2**31) and later slots: the padding column
        S = sp.csr_matrix((M.data, slots.view(np.int32), M.indptr), shape=(M.shape[0], n_slots + 1))
        evidence = np.asarray(S @ self._padded, dtype=np.float64)
        # the known features' counts: the product with 1 for each slot and 0 for the padding; for a few
        # links (a page's) their counts summed per row in the same order, without a vector over every slot
        # (~10^6 cells to fill for 45 links). The same sums to the last bit either way.
        if 4 * M.nnz < n_slots:
            known = np.where(slots < n_slots, M.data, 0.0)
            rows = np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))
            return evidence, np.bincount(rows, weights=known, minlength=M.shape[0]).astype(np.float64, copy=False)
        ones = np.ones(n_slots + 1)
        ones[n_slots] = 0.0
        return evidence, np.asarray(S @ ones, dtype=np.float64)

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
        return normalize_evidence(evidence, n_known, self.normalize, self.prior_log_odds)

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
        return sigmoid(z)

    # ------------------------------------------------------------------ files

    def to_bundle(self) -> dict[str, Any]:
        """The model as plain arrays and builtins (weights stored sparse); what :meth:`save` writes."""
        order = np.argsort(self.feature_ids, kind="stable")  # ascending ids, as the dense layout stored them
        return {
            "kind": MODEL_KIND,
            "format_version": FORMAT_VERSION,
            "params": dict(self.params),
            "feature_params": dict(self.feature_params),
            "model": {
                "indices": self.feature_ids[order].astype(np.int32),
                "log_ratio": self.weights[order].copy(),
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

    @classmethod
    def from_bundle(cls, bundle: Mapping[str, Any]) -> ApprenticeModel:
        """Rebuild a model from :meth:`to_bundle` output; :class:`ModelFileError` if it is not one."""
        check_bundle(bundle, MODEL_KIND)
        try:
            m = bundle["model"]
            n_features = check_n_features(m["n_features"])
            indices = np.asarray(m["indices"], dtype=np.int64)
            if indices.size and (indices.min() < 0 or indices.max() >= n_features):
                raise ValueError("feature index out of range")
            values = np.asarray(m["log_ratio"], dtype=np.float64).ravel()
            if values.shape != indices.shape:
                raise ValueError("feature indices and weights disagree in length")
            if indices.size > 1 and np.any(np.diff(indices) <= 0):  # not as written: the last weight of an id
                indices, last = np.unique(indices[::-1], return_index=True)
                values = values[::-1][last]
            return cls.from_sparse(
                n_features,
                indices,
                values,
                prior_log_odds=float(m["prior_log_odds"]),
                slope=float(m["slope"]),
                intercept=float(m["intercept"]),
                side_weights=np.asarray(m.get("side_weights", np.zeros(0)), dtype=np.float64).ravel(),
                normalize=str(m["normalize"]),
                version=int(m["version"]),
                n_instances=int(m["n_instances"]),
                high_rate=float(m["high_rate"]),
                threshold=float(m["threshold"]),
                params=dict(bundle["params"]),
                feature_params=dict(bundle["feature_params"]),
            )
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise ModelFileError(f"corrupt apprentice model ({exc})") from exc

    def save(self, path: str | PathLike[str]) -> None:
        """Write the model to ``path`` as one model file (``.npz`` whatever the name), atomically."""
        save_model(self.to_bundle(), path)

    @classmethod
    def load(cls, path: str | PathLike[str]) -> ApprenticeModel:
        """Read a model written by :meth:`save`; :class:`ModelFileError` (one line) if it is not one."""
        return read_apprentice_file(path, MODEL_KIND, cls.from_bundle)


def read_apprentice_file(path: str | PathLike[str], kind: str, build: Callable[[dict[str, Any]], _T]) -> _T:
    """Read an apprentice file of ``kind`` and ``build(bundle)`` it; every error is a one-line ModelFileError."""
    what = "apprentice model" if kind == MODEL_KIND else "apprentice"
    bundle = read_model(path, {kind: READABLE_VERSIONS}, what=what)
    try:
        return build(bundle)
    except ModelFileError as exc:
        raise ModelFileError(f"{path}: {exc}") from exc


def check_bundle(bundle: Mapping[str, Any], kind: str) -> None:
    """Raise :class:`ModelFileError` unless ``bundle`` is an apprentice bundle of ``kind`` and a readable version."""
    if not isinstance(bundle, Mapping) or bundle.get("kind") != kind:
        found = bundle.get("kind") if isinstance(bundle, Mapping) else type(bundle).__name__
        raise ModelFileError(f"holds an apprentice bundle of kind {found!r}, expected {kind!r}")
    version = bundle.get("format_version")
    if version not in READABLE_VERSIONS:
        raise ModelFileError(f"apprentice format version {version!r}, this code reads {READABLE_VERSIONS}")


def check_params(params: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` unless ``params`` are valid learner (``Apprentice``) parameters."""
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


def check_n_features(value: Any) -> int:
    """A file's declared ``n_features``, checked to be plausible."""
    n = int(value)
    if not 1 <= n <= MAX_FEATURES:
        raise ValueError(f"n_features {n} outside 1..{MAX_FEATURES}")
    return n


def as_matrix(X: Features, n_features: int) -> sp.csr_matrix:
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


def as_compact(X: Features, n_features: int) -> list[np.ndarray]:
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
        every = np.concatenate(out)  # one range check for all rows (a batch holds thousands)
        if every.size and (every.min() < 0 or every.max() >= n_features):
            raise ValueError(f"feature ids out of range for n_features={n_features}")
        return out
    return compact_many(rows, n_features)
