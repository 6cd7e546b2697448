"""The NumPy logistic regression of the apprentice's calibration against scikit-learn's ``LogisticRegression``
(L2, ``C``, intercept unpenalised, ``newton-cholesky``), which it replaces in the crawl process: the same
coefficients on ordinary, separable, degenerate and tiny samples."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from focused.learning.logistic import fit_logistic


def _samples() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    out = {}
    X = rng.normal(size=(3000, 4))
    out["noisy"] = (X, rng.random(3000) < 1 / (1 + np.exp(-(X @ [1.5, -0.5, 0.2, 0.0] - 1))))
    X = rng.normal(size=(200, 2))
    out["separable"] = (X, X[:, 0] > 0.1)
    out["constant and zero columns"] = (
        np.column_stack([rng.normal(size=100), np.zeros(100), np.full(100, 3.0)]),
        rng.random(100) < 0.3,
    )
    X = rng.normal(size=(100, 2))
    out["collinear"] = (np.column_stack([X[:, 0], X[:, 0]]), rng.random(100) < 0.5)
    out["tiny"] = (np.array([[0.5], [-1.0], [2.0]]), np.array([True, False, True]))
    out["two instances"] = (np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([True, False]))
    out["rare and badly scaled"] = (rng.normal(size=(500, 3)) * [1, 30, 0.01], rng.random(500) < 0.05)
    out["one feature of huge scale"] = (rng.normal(size=(300, 1)) * 1e4, rng.random(300) < 0.4)
    return out


def _sklearn(X: np.ndarray, y: np.ndarray, C: float, tol: float) -> tuple[np.ndarray, float]:
    model = LogisticRegression(C=C, solver="newton-cholesky", max_iter=1000, tol=tol)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    return model.coef_[0], float(model.intercept_[0])


@pytest.mark.parametrize("C", [1.0, 0.05, 20.0])
@pytest.mark.parametrize("name", list(_samples()))
def test_same_coefficients_as_scikit_learn(name: str, C: float) -> None:
    X, y = _samples()[name]
    w, b = fit_logistic(X, y, C=C)
    assert w.shape == (X.shape[1],) and isinstance(b, float)
    # scikit-learn iterated to a tight tolerance: the same minimiser
    sk_w, sk_b = _sklearn(X, y, C, tol=1e-12)
    assert np.allclose(w, sk_w, rtol=1e-6, atol=1e-7), (w, sk_w)
    assert b == pytest.approx(sk_b, rel=1e-6, abs=1e-7)
    # and with its default tolerance (what the calibration used): as close as that tolerance gives
    sk_w, sk_b = _sklearn(X, y, C, tol=1e-4)
    assert np.allclose(w, sk_w, rtol=1e-3, atol=1e-3)
    assert b == pytest.approx(sk_b, rel=1e-3, abs=1e-3)


def test_no_features_fits_the_log_odds() -> None:
    """Only the intercept (unpenalised): the sample's log odds."""
    y = np.array([True] * 3 + [False] * 7)
    w, b = fit_logistic(np.zeros((10, 0)), y, C=1.0)
    assert w.shape == (0,)
    assert b == pytest.approx(np.log(3 / 7), abs=1e-12)


def test_the_penalty_shrinks_and_the_intercept_is_free() -> None:
    """A small C pulls the weight to 0 but leaves the intercept at the base rate's log odds."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 1))
    y = (X[:, 0] + rng.normal(size=400) * 0.5) > 1.0
    strong, b = fit_logistic(X, y, C=1e-9)
    assert abs(strong[0]) < 1e-6
    assert b == pytest.approx(np.log(y.mean() / (1 - y.mean())), abs=1e-5)
    assert fit_logistic(X, y, C=1.0)[0][0] > 1.0


def test_the_apprentice_trains_without_scikit_learn() -> None:
    """The apprentice's calibration (the stacked sigmoid of every retrain) runs in a process that never
    imports scikit-learn: the crawl process does not pay its ~70 MB."""
    code = """
import sys
import numpy as np
from focused.learning.apprentice import stats
rng = np.random.default_rng(0)
n, per = 400, 12
ids = rng.integers(0, 1000, size=n * per).astype(np.int32)
indptr = np.arange(0, n * per + 1, per)
rel = rng.random(n)
high = rel >= 0.5
counts = np.zeros((2, 1000))
stats.add_counts(counts, ids, np.repeat(high, per), +1)
side = rng.normal(size=(n, 2))
a, b, w = stats.stacked_sigmoid(counts, rel, indptr, ids, high, side, alpha=1.0, normalize="sqrt", folds=5,
                                 max_instances=300)
assert np.isfinite([a, b, *w]).all()
print(sorted(m for m in sys.modules if m == "sklearn" or m.startswith("sklearn.")))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "[]"
