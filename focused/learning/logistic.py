"""L2-penalised logistic regression with an unpenalised intercept, by Newton's method in NumPy.

The apprentice calibrates its scores with a logistic regression of a handful of columns (its standardised
naive Bayes score and the critic's side views) on a few thousand instances at each retrain. This small
solver fits that model without scikit-learn, whose import was the crawl process's largest holder of
memory that no crawl state needs (docs/results.md). It minimises the objective of scikit-learn's
``LogisticRegression(C=C)`` (L2 penalty, ``fit_intercept=True``):

    0.5 · ||w||² + C · Σᵢ [log(1 + exp(zᵢ)) − yᵢ·zᵢ],   zᵢ = xᵢ·w + b,

which is strictly convex in ``w`` and, given both classes, has one minimiser; Newton's method (iteratively
reweighted least squares, with a backtracking line search) reaches it to a tight tolerance in a few
iterations, so the coefficients are scikit-learn's up to the tolerance scikit-learn itself stops at.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fit_logistic"]

#: Newton iterations at most (a calibration fit takes a handful).
MAX_ITER = 100
#: Converged when no coefficient moves by more than this (relative to the coefficients' size).
STEP_TOL = 1e-12


def _log_loss(z: np.ndarray, y: np.ndarray) -> float:
    """Σ log(1 + exp(z)) − y·z, without overflow."""
    return float(np.sum(np.logaddexp(0.0, z) - y * z))


def _expit(z: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(−z)), without overflow."""
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def fit_logistic(X: np.ndarray, y: np.ndarray, C: float = 1.0) -> tuple[np.ndarray, float]:
    """The weights and the intercept that minimise ``0.5·||w||² + C·Σ log-loss`` (the intercept unpenalised).

    Parameters
    ----------
    X
        ``(n_samples, n_features)`` float array (any number of features, none included).
    y
        ``n_samples`` labels, true/1 for the positive class.
    C
        Inverse L2 strength, as scikit-learn's ``C``.

    With one class only, the intercept has no finite optimum: it stops where the line search does (a
    large magnitude of the class's sign), as scikit-learn returns whatever its iterations reached.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    t = np.asarray(y, dtype=np.float64).ravel()
    n, d = X.shape
    A = np.column_stack([X, np.ones(n)])  # the intercept is the last coefficient
    penalty = np.ones(d + 1)
    penalty[d] = 0.0
    beta = np.zeros(d + 1)
    z = A @ beta

    def objective(b: np.ndarray, zz: np.ndarray) -> float:
        return 0.5 * float(np.dot(b[:d], b[:d])) + C * _log_loss(zz, t)

    f = objective(beta, z)
    for _ in range(MAX_ITER):
        p = _expit(z)
        grad = penalty * beta + C * (A.T @ (p - t))
        hess = (A.T * (C * p * (1.0 - p))) @ A
        hess[np.diag_indices_from(hess)] += penalty
        try:
            step = np.linalg.solve(hess, -grad)
        except np.linalg.LinAlgError:  # a singular Hessian: only with one class and saturated predictions
            step = np.linalg.lstsq(hess, -grad, rcond=None)[0]
        slope = float(np.dot(grad, step))
        if slope >= 0:  # no descent left in floating point
            break
        # Backtracking (Armijo): a full Newton step near the optimum, shorter ones far from it.
        rate = 1.0
        while True:
            trial = beta + rate * step
            z_trial = A @ trial
            f_trial = objective(trial, z_trial)
            # Near the optimum the objective cannot tell the steps apart (its changes fall under its
            # rounding) while the Newton step is exact: taken whole once the decrement is that small.
            if f_trial <= f + 1e-4 * rate * slope or -slope <= 1e-12 * max(1.0, abs(f)):
                break
            rate *= 0.5
            if rate < 1e-10:  # no decrease left in floating point: beta is the optimum to its precision
                return beta[:d].copy(), float(beta[d])
        beta, z, f = trial, z_trial, f_trial
        if rate * float(np.max(np.abs(step))) <= STEP_TOL * max(1.0, float(np.max(np.abs(beta)))):
            break
    return beta[:d].copy(), float(beta[d])
