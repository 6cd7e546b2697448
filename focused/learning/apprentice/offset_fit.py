"""The apprentice as a correction of the critic's views: logistic regression with a fixed offset.

Stacking (:func:`focused.learning.apprentice.stats.stacked_sigmoid`) fits every
weight of ``σ(a·score + w·views + b)`` with an L2 penalty towards 0, so an
apprentice fitted on the few dozen instances of an early batch shrinks the
critic's views, which the crawl ranked by until then, as much as the link
context it knows little about: an early switch-in can throw the prior's
ranking away. Here the prior is a fixed offset and only a correction is
learned::

    z = o + a·score + Δw·views + b,    o = w₀·views   (the prior's logit, w₀ fixed)

minimising the log-loss plus ``λ/2 · (a² + |Δw|²)`` (``b`` unpenalised: the
base rate of HIGH is not the prior's). With little evidence ``a`` and ``Δw``
stay near 0 and the links rank as the prior ranks them (``b`` moves every
link alike); the data must outweigh λ to move them. The served model is an
ordinary :class:`~focused.learning.apprentice.model.ApprenticeModel` with side
weights ``w₀ + Δw``, so model files do not change.

Plain numpy (Newton's method on a convex objective in a handful of
parameters); no scikit-learn estimator takes an offset.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fit_offset_logistic"]

#: Newton iterations at most; the objective is smooth and strictly convex in the penalised
#: coordinates, so a few suffice (tests check convergence to the gradient's zero).
MAX_ITER = 50
#: Stop when the largest Newton step is below this.
TOL = 1e-9
#: Ridge on the intercept, only so that the Hessian stays invertible on a one-class sample.
_INTERCEPT_RIDGE = 1e-8


def _loss(X: np.ndarray, y: np.ndarray, offset: np.ndarray, beta: np.ndarray, ridge: np.ndarray) -> float:
    z = offset + X @ beta
    # log(1 + e^z) − y·z, computed without overflow
    return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * np.sum(ridge * beta * beta))


def fit_offset_logistic(
    X: np.ndarray,
    y: np.ndarray,
    offset: np.ndarray,
    penalty: float,
) -> tuple[np.ndarray, float]:
    """Coefficients and intercept minimising ``Σ logloss(y, offset + X·c + b) + penalty/2·|c|²``.

    Parameters
    ----------
    X
        (n, k) features of the correction (the standardised link-context
        score and the critic's views).
    y
        (n,) 0/1 targets.
    offset
        (n,) fixed logit each instance starts from (the prior's).
    penalty
        λ ≥ 0, the strength of the shrinkage of ``c`` towards 0 (a Gaussian
        prior of variance 1/λ on each coefficient); the intercept is not
        shrunk.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).ravel()
    offset = np.asarray(offset, dtype=np.float64).ravel()
    n, k = X.shape
    if len(y) != n or len(offset) != n:
        raise ValueError(f"X has {n} rows, y {len(y)}, offset {len(offset)}")
    if not penalty >= 0:
        raise ValueError(f"penalty must be >= 0, got {penalty}")
    A = np.column_stack([X, np.ones(n)])
    ridge = np.concatenate([np.full(k, float(penalty)), [_INTERCEPT_RIDGE]])
    beta = np.zeros(k + 1)
    loss = _loss(A, y, offset, beta, ridge)
    for _ in range(MAX_ITER):
        p = 1.0 / (1.0 + np.exp(-np.clip(offset + A @ beta, -500.0, 500.0)))
        grad = A.T @ (p - y) + ridge * beta
        hess = (A * (p * (1.0 - p))[:, None]).T @ A + np.diag(ridge)
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while True:  # backtracking: Newton's full step can overshoot on a nearly separable sample
            candidate = beta - t * step
            new_loss = _loss(A, y, offset, candidate, ridge)
            if new_loss <= loss + 1e-12 or t < 1e-10:
                break
            t *= 0.5
        beta, loss = candidate, new_loss
        if float(np.max(np.abs(t * step))) < TOL:
            break
    return beta[:k].copy(), float(beta[k])
