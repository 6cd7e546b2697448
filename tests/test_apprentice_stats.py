"""The apprentice's counting helpers give what the sorting ones in numpy would."""

from __future__ import annotations

import numpy as np

from focused.learning.apprentice.packed import PackedIds, pack
from focused.learning.apprentice.stats import add_counts, feature_ranks, normalize_evidence, stacked_sigmoid
from focused.learning.logistic import fit_logistic


def test_feature_ranks_give_numpy_unique() -> None:
    rng = np.random.default_rng(0)
    for size, n_features in ((0, 16), (1, 16), (5_000, 2**20), (50_000, 1024), (2_500_000, 2**20)):
        ids = (rng.zipf(1.3, size) % n_features).astype(np.int32)
        lengths = _split(rng, size)
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        uniq, rank = feature_ranks(ids, indptr, n_features)
        inverse = rank[ids]
        want_uniq, want_inverse = np.unique(ids, return_inverse=True)
        assert np.array_equal(uniq, want_uniq) and np.array_equal(inverse, want_inverse)
        assert np.array_equal(uniq[inverse], ids)
        slot_of = rng.permutation(n_features).astype(np.int32)  # through a map, from packed ids
        uniq, rank = feature_ranks(PackedIds(*pack(ids, lengths)), indptr, n_features, slot_of)
        want_uniq, want_inverse = np.unique(slot_of[ids], return_inverse=True)
        assert np.array_equal(uniq, want_uniq) and np.array_equal(rank[slot_of[ids]], want_inverse)


def test_add_counts_tallies_every_occurrence_in_its_bucket() -> None:
    counts = np.zeros((2, 8))
    ids = np.array([3, 3, 5, 0, 3, 7], dtype=np.int32)
    high = np.array([True, True, False, False, False, True])
    add_counts(counts, ids, high, +1)
    assert counts[1].tolist() == [0, 0, 0, 2, 0, 0, 0, 1]
    assert counts[0].tolist() == [1, 0, 0, 1, 0, 1, 0, 0]
    add_counts(counts, ids[:2], high[:2], -1)  # forgetting: counts go back down
    assert counts[1].tolist() == [0, 0, 0, 0, 0, 0, 0, 1]


def test_the_calibration_reads_only_its_sample_of_the_latest_instances() -> None:
    # stacked_sigmoid fits on the last max_instances instances: given all of them, or only those (their ids
    # re-based), it must fit the same sigmoid, from packed ids through a slot map as from plain ids
    rng = np.random.default_rng(11)
    n, m, n_features = 700, 400, 4096
    ids, indptr, rel, high, side, counts = _instances(rng, n, n_features, max_ids=40, zipf=1.3, cut=0.5)
    kw = {"alpha": 0.1, "normalize": "length", "folds": 5}
    whole = stacked_sigmoid(counts, rel, indptr, ids, high, side, max_instances=m, **kw)
    first = int(indptr[n - m])
    suffix = stacked_sigmoid(
        counts, rel[-m:], indptr[-m - 1 :] - first, ids[first:], high[-m:], side[-m:], max_instances=m, **kw
    )
    slot_of = rng.permutation(n_features).astype(np.int32)  # slot s holds the feature whose slot_of is s
    by_slot = np.zeros_like(counts)
    by_slot[:, slot_of] = counts
    packed = PackedIds(*pack(ids, np.diff(indptr)))
    slotted = stacked_sigmoid(by_slot, rel, indptr, packed, high, side, max_instances=m, slot_of=slot_of, **kw)
    for got in (suffix, slotted):
        assert got[0] == whole[0] and got[1] == whole[1] and np.array_equal(got[2], whole[2])


def test_the_calibration_fits_the_held_out_scores_of_plain_naive_bayes_folds() -> None:
    # the folds written out plainly: each fold's model counts every instance but the fold's own (older ones
    # outside the sample included), over the whole id space; each sample instance gets its fold's evidence
    rng = np.random.default_rng(12)
    n, m, n_features, folds, alpha = 600, 450, 512, 5, 0.1
    ids, indptr, rel, high, side, counts = _instances(rng, n, n_features, max_ids=30, zipf=1.4, cut=0.4)
    for normalize, dtype in (("length", np.int32), ("none", np.int64)):  # plain ids of either width
        got = stacked_sigmoid(
            counts, rel, indptr, ids.astype(dtype), high, side, alpha=alpha, normalize=normalize, folds=folds,
            max_instances=m,
        )  # fmt: skip
        sample = np.arange(n - m, n)
        scores = np.zeros(m)
        for fold in range(folds):
            held = sample[np.arange(m) % folds == fold]
            train = np.setdiff1d(np.arange(n), held)
            c = np.zeros((2, n_features))
            for i in train:
                for t in ids[indptr[i] : indptr[i + 1]]:
                    c[int(high[i]), t] += 1.0
            known = c[0] + c[1] > 0
            v = int(known.sum())
            n_h, n_l = c[1].sum(), c[0].sum()
            log_high = np.log((c[1] + alpha) / (n_h + alpha * v))
            lr = np.where(known, log_high - np.log((c[0] + alpha) / (n_l + alpha * v)), 0.0)
            n_high = int(high[train].sum())
            prior = np.log((n_high + 0.5) / (len(train) - n_high + 0.5))
            for j, i in zip(np.flatnonzero(np.arange(m) % folds == fold), held, strict=True):
                row = ids[indptr[i] : indptr[i + 1]]
                evidence = 0.0
                for t in row:
                    evidence += lr[t]
                scores[j] = normalize_evidence(
                    np.array([evidence]), np.array([float(known[row].sum())]), normalize, prior
                )[0]
        scale = float(np.std(scores)) or 1.0
        coef, intercept = fit_logistic(np.column_stack([scores / scale, side[sample]]), high[sample], C=1.0)
        assert np.isclose(got[0], coef[0] / scale, rtol=1e-9, atol=0) and np.isclose(got[1], intercept, rtol=1e-9)
        assert np.allclose(got[2], coef[1:], rtol=1e-9, atol=0)


def _split(rng: np.random.Generator, size: int) -> np.ndarray:
    """Lengths of instances that share ``size`` ids: mostly short, one now and then longer than a chunk of
    :func:`feature_ranks`."""
    lengths = []
    while size:
        n = min(size, int(rng.integers(0, 2_000_000 if rng.random() < 0.01 else 300)))
        lengths.append(n)
        size -= n
    return np.array(lengths, dtype=np.int64)


def _instances(
    rng: np.random.Generator, n: int, n_features: int, *, max_ids: int, zipf: float, cut: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``n`` instances of up to ``max_ids`` Zipf-drawn ids (int32, flat with row pointers), their relevances
    (HIGH at ``cut`` or above), two side views each, and the per-bucket counts of their ids."""
    lengths = rng.integers(0, max_ids, n)
    ids = (rng.zipf(zipf, int(lengths.sum())) % n_features).astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    rel = rng.random(n)
    high = rel >= cut
    side = rng.normal(size=(n, 2))
    counts = np.zeros((2, n_features))
    add_counts(counts, ids, np.repeat(high, lengths), +1)
    return ids, indptr, rel, high, side, counts
