"""The apprentice's arithmetic: naive Bayes weights, bucket counts, thresholds and the stacked sigmoid.

Plain numpy functions over the learner's flat instance buffers (feature ids of
all instances in one array, int32 or packed as 2-byte gaps (:mod:`~focused.learning.apprentice.packed`),
``indptr`` marking where each instance starts),
shared by :class:`~focused.learning.apprentice.learner.Apprentice`, which trains,
and :class:`~focused.learning.apprentice.model.ApprenticeModel`, which predicts.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from focused.learning.apprentice.packed import PackedIds, unpack
from focused.learning.logistic import fit_logistic

__all__ = [
    "add_counts",
    "equal_prob_threshold",
    "flat_sigmoid",
    "grown",
    "nb_weights",
    "normalize_evidence",
    "rebucket",
    "segments",
    "sigmoid",
    "stacked_sigmoid",
]

logger = logging.getLogger(__name__)

#: Inverse L2 strength (scikit-learn's ``C``) of the calibration/stacking logistic regression (standardised NB
#: score, side features in logit units): weak on thousands of instances, firm on the few dozen of an early model.
_STACK_C = 1.0
#: Occurrences mapped to slots at a time by :func:`feature_ranks` (4 MB of int32).
_CHUNK = 1 << 20
#: Calibration instances whose evidence is summed at a time (~130,000 occurrences).
_BLOCK = 1024


def segments(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in the id buffer of the given instances, and each instance's length.

    The positions are built in one array (a cumulative sum of steps of 1 that jumps at each instance's
    start), int32 while the buffer allows: the calibration takes the positions of millions of occurrences,
    and the three int64 temporaries of a repeat-plus-arange were the largest part of a retrain's peak."""
    starts = indptr[rows]
    lengths = indptr[rows + 1] - starts
    total = int(lengths.sum())
    dtype = np.int32 if len(indptr) and int(indptr[-1]) < 2**31 else np.int64
    pos = np.ones(total, dtype=dtype)
    if total:
        nonempty = lengths > 0
        s, n = starts[nonempty], lengths[nonempty]
        heads = np.cumsum(n) - n
        # each position but a start is the one before + 1; a start jumps from the previous instance's end
        pos[heads[1:]] = s[1:] - (s[:-1] + n[:-1]) + 1
        pos[0] = s[0]
        np.cumsum(pos, out=pos)
    return pos, lengths


def feature_ranks(
    ids: np.ndarray | PackedIds, indptr: np.ndarray, n_features: int, slot_of: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ids in ``[0, n_features)`` (ascending) of the instances ``indptr`` bounds (positions
    ``indptr[0]`` to ``indptr[-1]``) and, over the id space, each id's position among
    them: ``uniq, rank[ids]`` is ``np.unique(ids, return_inverse=True)``, by marking instead of sorting
    (linear in the occurrences and the id space; a sort of millions of ids was most of a retrain), and
    ``rank`` serves any subset of ``ids`` as well (each calibration fold). With ``slot_of``, the ranks are
    of ``slot_of[ids]``, mapped a chunk of whole instances at a time (not a copy of the millions of
    occurrences at once)."""
    present = np.zeros(n_features, dtype=bool)
    i, last = 0, len(indptr) - 1
    while i < last:
        j = min(last, max(i + 1, int(np.searchsorted(indptr, indptr[i] + _CHUNK, side="right")) - 1))
        chunk = unpack(ids, slice(int(indptr[i]), int(indptr[j])), np.diff(indptr[i : j + 1]))
        present[chunk if slot_of is None else slot_of[chunk]] = True
        i = j
    return np.flatnonzero(present), np.cumsum(present, dtype=np.int32) - 1  # ids are below 2^31


def add_counts(counts: np.ndarray, ids: np.ndarray, high: np.ndarray, sign: int) -> None:
    """counts[bucket, id] += sign for each id occurrence (``counts`` of integers, or floats holding integers).

    Unbuffered adds in place (``np.add.at``): a tally by ``np.bincount`` took an int64 array over the whole id
    space and an int64 copy of the ids, the crawl process's peak at a training batch's adds, and was slower
    (1.1 million ids: 22-31 ms, 15.4 MB against 15-17 ms, 3.2 MB)."""
    step = counts.dtype.type(1 if sign > 0 else -1)
    for bucket, mask in ((1, high), (0, ~high)):
        sel = ids[mask]
        if sel.size:
            np.add.at(counts[bucket], sel, step)


def nb_weights(counts: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature log θ_HIGH − log θ_LOW (Eq. 1, vocabulary = features seen) and the seen mask.

    Computed in place, over views when every column has been seen (the learner's counts per slot always
    have): the same operations in the same order as the expression over the seen columns, without a
    temporary array per operation (the learner has a slot per feature seen, up to the id space)."""
    total = counts[0] + counts[1]
    known = total > 0
    del total
    vocab = int(np.count_nonzero(known))
    n_low, n_high = counts[0].sum(), counts[1].sum()
    every = vocab == counts.shape[1]
    seen = None if every else np.flatnonzero(known)  # integer indexing: a boolean mask over the id space is slower
    ratio = counts[1] + alpha if every else counts[1, seen] + alpha
    ratio /= n_high + alpha * vocab
    np.log(ratio, out=ratio)
    low = counts[0] + alpha if every else counts[0, seen] + alpha
    low /= n_low + alpha * vocab
    np.log(low, out=low)
    ratio -= low
    del low
    if every:
        return ratio, known.astype(np.float64)
    log_ratio = np.zeros(counts.shape[1], dtype=np.float64)
    log_ratio[seen] = ratio
    return log_ratio, known.astype(np.float64)


def normalize_evidence(evidence: np.ndarray, n_known: np.ndarray, how: str, prior: float) -> np.ndarray:
    evidence = np.asarray(evidence, dtype=np.float64).ravel()
    n_known = np.asarray(n_known, dtype=np.float64).ravel()
    if how == "none":
        return prior + evidence
    denom = np.maximum(n_known, 1.0)
    return evidence / (np.sqrt(denom) if how == "sqrt" else denom)


def flat_sigmoid(y: np.ndarray) -> tuple[float, float]:
    """A sigmoid that keeps the evidence order but predicts about the base rate of ``y``."""
    rate = float(np.clip(np.mean(y), 1e-3, 1 - 1e-3))
    return 1e-6, math.log(rate / (1 - rate))


def sigmoid(z: np.ndarray) -> np.ndarray:
    # Clipped so that Pr(HIGH) stays strictly inside (0, 1) and distinct scores stay distinct.
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))


def equal_prob_threshold(rel: np.ndarray) -> float:
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


def grown(a: np.ndarray, size: int, n: int) -> np.ndarray:
    """A zeroed array of ``size`` rows (``a``'s other dimensions and dtype) holding ``a``'s first ``n`` rows."""
    out = np.zeros((size, *a.shape[1:]), dtype=a.dtype)
    out[:n] = a[:n]
    return out


def rebucket(
    counts: np.ndarray,
    indptr: np.ndarray,
    ids: np.ndarray | PackedIds,
    rel: np.ndarray,
    old: float,
    new: float,
    slot_of: np.ndarray | None = None,
) -> None:
    """Move the counts of the instances whose bucket changes from threshold ``old`` to ``new``, in place.

    With ``slot_of``, ``counts`` has a column per slot (feature seen) and ``slot_of[id]`` is each id's.
    """
    was_high, is_high = rel >= old, rel >= new
    moved = np.flatnonzero(was_high != is_high)
    if moved.size:
        pos, lengths = segments(indptr, moved)
        to_high = np.repeat(is_high[moved], lengths)
        picked = unpack(ids, pos, lengths)
        cols = picked if slot_of is None else slot_of[picked]
        add_counts(counts, cols, to_high, +1)
        add_counts(counts, cols, ~to_high, -1)


def stacked_sigmoid(
    counts: np.ndarray,
    rel: np.ndarray,
    indptr: np.ndarray,
    ids: np.ndarray | PackedIds,
    high: np.ndarray,
    side: np.ndarray,
    *,
    alpha: float,
    normalize: str,
    folds: int,
    max_instances: int,
    slot_of: np.ndarray | None = None,
) -> tuple[float, float, np.ndarray]:
    """Fit σ(a·score + side·w + b) to held-out scores of the most recent instances (cross-fitting).

    The model of fold k is the full counts minus fold k's own counts, so
    each fold costs time in its own size only, whatever the history. The
    side features are already out-of-sample (the critic never saw the link),
    so they enter the logistic regression as they are: it learns how much
    each view of the critic adds to the link context (stacking). The folds are
    a round robin over the sample (instance i in fold ``i mod folds``). With ``slot_of``, ``counts`` has a
    column per slot (feature seen) and ``slot_of[id]`` is each id's.
    """
    n, n_side = len(rel), side.shape[1]
    sample = np.arange(max(0, n - max_instances), n)
    k = folds if len(sample) >= 2 * folds else 1
    scores = np.zeros(len(sample))
    fold_ids = np.arange(len(sample)) % k
    y = high[sample]
    n_high = int(np.count_nonzero(high))
    totals = counts.sum(axis=1)
    vocab = int(np.count_nonzero(counts[0] + counts[1]))
    # The features of the sample, ranked once (not a pass over the whole id space per fold): each fold's
    # held-out counts are the sample features' counts minus the fold's own occurrences.
    uniq, rank = feature_ranks(ids, indptr[n - len(sample) : n + 1], counts.shape[1], slot_of)
    c_all = counts[:, uniq]
    was_known = c_all[0] + c_all[1] > 0
    a = alpha
    for fold in range(k):
        in_fold = fold_ids == fold
        rows = sample[in_fold]
        if rows.size == 0:
            continue
        pos, lengths = segments(indptr, rows)
        # the fold's ids, then their slots, then their ranks: one int32 array, mapped in place
        inv = unpack(ids, pos, lengths).astype(np.int32, copy=False)
        del pos
        if slot_of is not None:
            np.take(slot_of, inv, out=inv, mode="clip")  # "clip": unbuffered (ids are in range)
        np.take(rank, inv, out=inv, mode="clip")
        fold_high = np.repeat(high[rows], lengths)
        fh = int(np.count_nonzero(high[rows]))
        if k > 1:  # held out: remove the fold's own occurrences
            c = c_all.copy()
            add_counts(c, inv, fold_high, -1)  # in place, exact: the counts are integers
            n_l = totals[0] - np.count_nonzero(~fold_high)
            n_h = totals[1] - np.count_nonzero(fold_high)
            v = vocab - int(np.count_nonzero(was_known & (c[0] + c[1] <= 0)))
            prior = math.log((n_high - fh + 0.5) / (n - n_high - (rows.size - fh) + 0.5))
        else:
            c = c_all
            n_l, n_h, v = totals[0], totals[1], vocab
            prior = math.log((n_high + 0.5) / (n - n_high + 0.5))
        known = c[0] + c[1] > 0
        # log((c1 + a) / (n_h + a v)) − log((c0 + a) / (n_l + a v)) where known, else 0, in place (a fit's peak)
        lr = c[1] + a
        lr /= n_h + a * v
        np.log(lr, out=lr)
        low = c[0] + a
        del c
        low /= n_l + a * v
        np.log(low, out=low)
        lr -= low
        del low
        lr[~known] = 0.0
        del fold_high
        # each instance's evidence and known features, _BLOCK instances at a time (a row's sum in its order)
        evidence = np.empty(rows.size)
        n_known = np.empty(rows.size)
        ends = np.cumsum(lengths)
        for first in range(0, rows.size, _BLOCK):
            last = min(first + _BLOCK, rows.size)
            seg = inv[(int(ends[first - 1]) if first else 0) : int(ends[last - 1])]
            row_of = np.repeat(np.arange(last - first), lengths[first:last])
            evidence[first:last] = np.bincount(row_of, weights=lr[seg], minlength=last - first)
            unknown = ~known[seg]  # rare: the features only this fold has
            n_known[first:last] = lengths[first:last] - np.bincount(row_of[unknown], minlength=last - first)
        scores[in_fold] = normalize_evidence(evidence, n_known, normalize, prior)
        del inv, lr, known  # not held while the next fold builds its own
    no_side = np.zeros(n_side)
    if y.all() or not y.any():
        logger.debug("Apprentice calibration sample is degenerate; predicting the base rate")
        return (*flat_sigmoid(y), no_side)
    # The NB score is standardised (its scale is arbitrary); side features stay in logit units, so that
    # the L2 penalty keeps a view that barely varies in the sample (one page's logit, say) from getting
    # a huge weight that swings on the next page.
    scale = float(np.std(scores)) or 1.0
    S = side[sample]
    coef, intercept = fit_logistic(np.column_stack([scores / scale, S]), y, C=_STACK_C)
    slope = float(coef[0]) / scale
    if slope <= 0:
        # Held-out evidence does not rank HIGH above LOW: keep NB's order with a
        # negligible slope rather than invert it.
        logger.info("Apprentice link-context evidence is not predictive on held-out data (slope %.3g)", slope)
        if not n_side:
            return (*flat_sigmoid(y), no_side)
        side_coef, side_intercept = fit_logistic(S, y, C=_STACK_C)
        return 1e-6, side_intercept, side_coef
    return slope, intercept, coef[1:].copy()
