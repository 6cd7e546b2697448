"""The apprentice keeps its statistics and weights for the features it has seen only (slots), not one
float per hashed id; it must predict exactly what the dense layout predicted, fit after fit."""

from __future__ import annotations

import math

import numpy as np

from focused.learning.apprentice.countmatrix import from_compact
from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.model import ApprenticeModel
from focused.learning.apprentice.stats import (
    add_counts,
    equal_prob_threshold,
    nb_weights,
    normalize_evidence,
    sigmoid,
    stacked_sigmoid,
)

N_FEATURES = 2**20


def sample(rng: np.random.Generator, n: int) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Links with Zipf-distributed feature ids (a few frequent ones, a long tail), relevances, critic views."""
    ids = [np.sort(rng.zipf(1.2, rng.integers(5, 80)) % N_FEATURES).astype(np.int32) for _ in range(n)]
    return ids, rng.random(n) ** 2, np.clip(rng.normal(size=(n, 2)), -10, 10)


def dense_predict(
    ids: list[np.ndarray], rel: np.ndarray, side: np.ndarray, test: list[np.ndarray], test_side: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """What the apprentice computed with counts and weights over the whole id space (release 0.1.0's layout):
    counts (2, N_FEATURES), dense log ratios and a 0/1 vector, a CSR product with them. Its log ratios and
    the predictions of ``test``."""
    flat = np.concatenate(ids)
    lengths = np.array([len(a) for a in ids])
    threshold = equal_prob_threshold(rel)
    high = rel >= threshold
    counts = np.zeros((2, N_FEATURES))
    add_counts(counts, flat, np.repeat(high, lengths), +1)
    log_ratio, known = nb_weights(counts, 0.1)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    slope, intercept, side_weights = stacked_sigmoid(
        counts, rel, indptr, flat, high, side, alpha=0.1, normalize="length", folds=5, max_instances=20_000
    )
    n_high = int(np.count_nonzero(high))
    prior = math.log(n_high / (len(rel) - n_high))
    M = from_compact(test, N_FEATURES)
    score = normalize_evidence(M @ log_ratio, M @ known, "length", prior)
    return log_ratio, sigmoid(slope * score + intercept + test_side @ side_weights)


def test_compact_statistics_predict_what_dense_ones_did() -> None:
    rng = np.random.default_rng(3)
    batches = [sample(rng, 300) for _ in range(4)]
    test, _, test_side = sample(rng, 2000)
    app = Apprentice(n_features=N_FEATURES, binning="equal-prob", n_side=2, min_instances=10)
    models = []
    for k, (ids, rel, side) in enumerate(batches, start=1):
        app.add(ids, rel, side)
        model = app.fit()
        models.append((model, model.predict(test, test_side)))
        seen = [a for b in batches[:k] for a in b[0]]
        log_ratio, want = dense_predict(
            seen,
            np.concatenate([b[1] for b in batches[:k]]),
            np.concatenate([b[2] for b in batches[:k]]),
            test,
            test_side,
        )
        assert np.array_equal(model.predict(test, test_side), want)  # to the last bit
        # a page's few links: their known features counted without a vector over every slot, the same sums
        assert np.array_equal(model.predict(test[:3], test_side[:3]), want[:3])
        assert np.array_equal(model.log_ratio, log_ratio)
        assert model.n_known == np.unique(np.concatenate(seen)).size
    # an earlier model shares the learner's map of features, which grew since: it still predicts as it did
    for model, before in models:
        assert np.array_equal(model.predict(test, test_side), before)


def test_compact_model_is_smaller_than_the_id_space_and_survives_its_file(tmp_path) -> None:
    rng = np.random.default_rng(4)
    ids, rel, side = sample(rng, 500)
    app = Apprentice(n_features=N_FEATURES, n_side=2, min_instances=10)
    app.add(ids, rel, side)
    model = app.fit()
    held = model.weights.nbytes + model.feature_ids.nbytes
    assert held < 8 * N_FEATURES // 10  # a tenth of one dense float64 array over the ids
    assert app._features.counts.nbytes < 2 * 8 * N_FEATURES // 10
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = ApprenticeModel.load(path)
    test, _, test_side = sample(rng, 300)
    assert np.array_equal(loaded.predict(test, test_side), model.predict(test, test_side))
    assert np.array_equal(loaded.log_ratio, model.log_ratio)
    # features the model never saw carry no evidence: the calibrated value of zero evidence
    unseen = np.setdiff1d(np.arange(N_FEATURES, dtype=np.int32), model.feature_ids)[:50]
    got = model.predict([unseen], np.zeros((1, 2)))
    assert np.array_equal(got, sigmoid(np.array([model.intercept])))


def test_learner_resumed_from_its_file_predicts_the_same(tmp_path) -> None:
    rng = np.random.default_rng(5)
    ids, rel, side = sample(rng, 400)
    app = Apprentice(n_features=N_FEATURES, binning="equal-prob", n_side=2, min_instances=10)
    app.add(ids, rel, side)
    app.save(tmp_path / "learner.npz")
    resumed = Apprentice.load(tmp_path / "learner.npz")
    test, _, test_side = sample(rng, 300)
    assert np.array_equal(resumed.fit().predict(test, test_side), app.fit().predict(test, test_side))
