"""The prior as a fixed offset: the penalised fit, and an apprentice that only corrects the critic's views."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.linear_model import LogisticRegression

from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.offset_fit import fit_offset_logistic
from focused.learning.apprentice.stats import add_counts, stacked_sigmoid

N_FEATURES = 2**14


def logistic_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    offset = rng.normal(0, 2, n)
    z = offset + X @ np.array([1.5, -0.5, 0.0]) - 0.7
    y = (rng.random(n) < 1 / (1 + np.exp(-z))).astype(float)
    return X, y, offset


@pytest.mark.parametrize("penalty", [0.0, 1.0, 25.0])
def test_the_fit_is_the_penalised_optimum(penalty):
    X, y, offset = logistic_data(400, seed=1)
    coef, b = fit_offset_logistic(X, y, offset, penalty)
    p = 1 / (1 + np.exp(-(offset + X @ coef + b)))
    np.testing.assert_allclose(X.T @ (p - y) + penalty * coef, 0, atol=1e-6)  # stationary in the weights
    assert abs(np.sum(p - y)) < 1e-6  # the intercept is not shrunk: predicted and observed HIGH agree


def test_without_offset_or_penalty_it_is_ordinary_logistic_regression():
    X, y, _ = logistic_data(500, seed=2)
    coef, b = fit_offset_logistic(X, y, np.zeros(len(y)), 0.0)
    ref = LogisticRegression(C=np.inf, solver="newton-cholesky", tol=1e-10).fit(X, y)
    np.testing.assert_allclose(coef, ref.coef_[0], atol=1e-4)
    assert b == pytest.approx(ref.intercept_[0], abs=1e-4)


def test_the_offset_is_kept_and_the_correction_shrinks_with_the_penalty():
    X, y, offset = logistic_data(300, seed=3)
    sizes = [np.abs(fit_offset_logistic(X, y, offset, lam)[0]).sum() for lam in (0.0, 10.0, 100.0, 1e6)]
    assert sizes == sorted(sizes, reverse=True)
    assert sizes[-1] < 1e-3 < sizes[0]
    # a huge penalty leaves the offset alone; the intercept still matches the base rate
    coef, b = fit_offset_logistic(X, y, offset, 1e9)
    assert np.sum(1 / (1 + np.exp(-(offset + b)))) == pytest.approx(y.sum(), abs=1e-4)
    # the data pull the correction towards the truth the offset lacks (+1.5 on the first column)
    coef, _ = fit_offset_logistic(X, y, offset, 1.0)
    assert 1.0 < coef[0] < 2.0 and abs(coef[2]) < 0.5


def test_rejects_inconsistent_input():
    X, y, offset = logistic_data(10, seed=4)
    with pytest.raises(ValueError, match="rows"):
        fit_offset_logistic(X, y[:5], offset, 1.0)
    with pytest.raises(ValueError, match="penalty"):
        fit_offset_logistic(X, y, offset, -1.0)


def links(n: int, seed: int, context_signal: float) -> tuple[list[list[str]], np.ndarray, np.ndarray]:
    """Links whose target relevance follows the critic's views; ``context_signal`` of them carry a true cue."""
    rng = np.random.default_rng(seed)
    prior = rng.normal(-1.0, 2.0, n)  # the prior's logit, informative
    high = rng.random(n) < 1 / (1 + np.exp(-prior))
    feats = []
    for h in high:
        words = [f"w{rng.integers(30)}@{rng.integers(-3, 4)}" for _ in range(rng.integers(3, 10))]
        if rng.random() < context_signal:
            words.append("good@0" if h else "bad@0")
        feats.append(words)
    side = np.column_stack([prior + rng.normal(0, 0.3, n), prior + rng.normal(0, 0.3, n)])
    rel = np.where(high, rng.uniform(0.6, 1.0, n), rng.uniform(0.0, 0.4, n))
    return feats, rel, side


def auc(y: np.ndarray, s: np.ndarray) -> float:
    pos, neg = s[y], s[~y]
    return float(np.mean(pos[:, None] > neg[None, :]) + 0.5 * np.mean(pos[:, None] == neg[None, :]))


def test_an_early_model_ranks_as_the_prior_when_the_link_context_is_noise():
    Ft, Rt, St = links(1000, seed=6, context_signal=0.0)
    prior = St @ np.array([0.3, 0.7])
    taus: dict[str, list[float]] = {"offset": [], "stacked": []}
    aucs = []
    for seed in (5, 15, 25, 35):
        F, R, S = links(40, seed=seed, context_signal=0.0)  # one early batch: the context says nothing
        for name, side_offset in (("offset", (0.3, 0.7)), ("stacked", None)):
            app = Apprentice(n_features=N_FEATURES, n_side=2, side_offset=side_offset, offset_penalty=10.0)
            app.add(F, R, S)
            scores = app.fit().predict(Ft, St)
            taus[name].append(kendalltau(scores, prior).statistic)
            if name == "offset":
                aucs.append(auc(Rt >= 0.5, scores))
    # the offset keeps the prior's order closer than stacking, which shrinks the views towards 0
    assert np.mean(taus["offset"]) > 0.93
    assert np.mean(taus["offset"]) > np.mean(taus["stacked"]) + 0.02
    assert np.mean(aucs) > auc(Rt >= 0.5, prior) - 0.01


def test_with_evidence_the_correction_learns_the_link_context():
    F, R, S = links(3000, seed=7, context_signal=0.8)
    Ft, Rt, St = links(1000, seed=8, context_signal=0.8)
    app = Apprentice(n_features=N_FEATURES, n_side=2, side_offset=(0.3, 0.7), offset_penalty=10.0)
    app.add(F, R, S)
    model = app.fit()
    assert model.slope > 0.1
    prior = St @ np.array([0.3, 0.7])
    assert auc(Rt >= 0.5, model.predict(Ft, St)) > auc(Rt >= 0.5, prior) + 0.05


def test_the_views_keep_the_prior_weights_unless_their_correction_is_asked_for():
    rng = np.random.default_rng(12)
    n = 2000
    truth = rng.normal(0, 2, n)
    side = np.column_stack([rng.normal(0, 2, n), truth])  # the first view is noise, the second the truth
    high = rng.random(n) < 1 / (1 + np.exp(-truth))
    feats = [[f"w{rng.integers(30)}@1"] for _ in range(n)]
    rel = np.where(high, 0.9, 0.1)
    weights = {}
    for views in (False, True):
        app = Apprentice(
            n_features=N_FEATURES, n_side=2, side_offset=(0.5, 0.5), offset_penalty=1.0, correct_views=views
        )
        app.add(feats, rel, side)
        weights[views] = app.fit().side_weights
    np.testing.assert_array_equal(weights[False], [0.5, 0.5])
    assert weights[True][0] < 0.2 and weights[True][1] > 0.8  # the data re-weigh the views


def test_a_one_bucket_calibration_sample_keeps_the_prior_weights():
    rel = np.r_[np.full(10, 0.1), np.full(20, 0.9)]  # the recent 20 instances are all HIGH
    high = rel >= 0.5
    ids = np.arange(30, dtype=np.int32) % 4
    counts = np.zeros((2, 4))
    add_counts(counts, ids, high, +1)
    side = np.random.default_rng(9).normal(size=(30, 2))
    slope, _, weights = stacked_sigmoid(
        counts, rel, np.arange(31, dtype=np.int64), ids, high, side,
        alpha=0.1, normalize="length", folds=5, max_instances=20, side_offset=np.array([0.3, 0.7]),
    )  # fmt: skip
    assert slope < 1e-3
    np.testing.assert_allclose(weights, [0.3, 0.7])


def test_offset_parameters_are_checked_and_saved(tmp_path):
    with pytest.raises(ValueError, match="side_offset"):
        Apprentice(n_features=N_FEATURES, n_side=2, side_offset=(1.0,))
    with pytest.raises(ValueError, match="offset_penalty"):
        Apprentice(n_features=N_FEATURES, n_side=2, side_offset=(0.3, 0.7), offset_penalty=-1.0)
    assert "side_offset" not in Apprentice(n_features=N_FEATURES, n_side=2).get_params()
    F, R, S = links(300, seed=10, context_signal=0.5)
    app = Apprentice(n_features=N_FEATURES, n_side=2, side_offset=(0.3, 0.7), offset_penalty=4.0)
    app.add(F, R, S)
    app.save(tmp_path / "learner.npz")
    resumed = Apprentice.load(tmp_path / "learner.npz")
    assert resumed.side_offset == [0.3, 0.7] and resumed.offset_penalty == 4.0
    Ft, _, St = links(50, seed=11, context_signal=0.5)
    np.testing.assert_allclose(resumed.fit().predict(Ft, St), app.fit().predict(Ft, St), atol=1e-9)
