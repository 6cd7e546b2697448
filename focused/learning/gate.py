"""The switch-in gate: the apprentice serves links only while it predicts better than the prior.

Scrapy-free. Before the apprentice has a model, a link gets the critic's blended
views of the page and the anchor, ``z = (1 − w)·logit Pr(c*|u) + w·logit Pr(c*|anchor)``
(the *prior*). A fixed switch-in count cannot serve every web: switching in after
50 pages helps on WebKB and costs 14 points of harvest at 100 pages on the
Wikipedia track. The gate lets the data decide, by *progressive validation*:

1. When a model is fitted (threshold τ on the target's relevance), the prior is
   calibrated on the same instances: ``Pr(HIGH) = σ(a·z + b)`` by logistic
   regression against ``relevance ≥ τ``. Both predictors have then seen the
   same data.
2. The next batch of instances is scored by both *before* either trains on it
   (the model never saw these links), and each one's log-loss on the batch is
   added to a running, exponentially discounted sum (the last batch weighs
   as much as all earlier ones together, since the model improves as it learns).
3. The model serves links (and re-scores the frontier) only while its running
   log-loss is below the calibrated prior's; otherwise links keep the prior.

Because the prior is monotone in ``z``, "the prior serves" ranks the frontier
exactly as ``apprentice:prior`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["DISCOUNT", "SwitchGate", "fit_logistic_1d", "log_loss"]

#: Weight of the earlier batches' losses when a new batch is added.
DISCOUNT = 0.5
_EPS = 1e-6


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    """Mean binary log-loss of probabilities ``p`` for labels ``y`` (bool)."""
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1.0 - _EPS)
    return float(-np.mean(np.where(y, np.log(p), np.log1p(-p))))


def fit_logistic_1d(z: np.ndarray, y: np.ndarray, iterations: int = 25) -> tuple[float, float]:
    """``(a, b)`` of ``Pr(y) = σ(a·z + b)`` by Newton's method, with a weak ridge (1e-3) for separable data."""
    z = np.asarray(z, dtype=np.float64)
    t = np.asarray(y, dtype=np.float64)
    X = np.stack([z, np.ones_like(z)], axis=1)
    w = np.zeros(2)
    ridge = 1e-3 * np.eye(2)
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(X @ w)))
        grad = X.T @ (p - t) + ridge @ w
        hess = (X * (p * (1.0 - p))[:, None]).T @ X + ridge
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return float(w[0]), float(w[1])


class SwitchGate:
    """Running held-out log-loss of the model and of the calibrated prior (module docstring)."""

    def __init__(self) -> None:
        self.threshold: float | None = None  # τ of the model under test
        self.prior_fit: tuple[float, float] | None = None  # (a, b) fitted with it
        self.loss_model = 0.0
        self.loss_prior = 0.0
        self.batches = 0
        self.open = False
        self.opened_at_batch: int | None = None
        self._z: list[np.ndarray] = []  # the prior's logit and the relevance of every instance learned
        self._rel: list[np.ndarray] = []

    def remember(self, z: np.ndarray, relevances: np.ndarray) -> None:
        """Instances the learner is about to add (after :meth:`validate` scored them)."""
        self._z.append(np.asarray(z, dtype=np.float32))
        self._rel.append(np.asarray(relevances, dtype=np.float32))

    def calibrate(self, threshold: float) -> None:
        """A model with threshold τ was fitted on the instances so far: calibrate the prior on them too."""
        if not self._z:
            return
        z, relevances = np.concatenate(self._z), np.concatenate(self._rel)
        self._z, self._rel = [z], [relevances]
        y = relevances >= np.float32(threshold)
        if y.all() or not y.any():
            self.prior_fit = None
            return
        self.threshold = float(threshold)
        self.prior_fit = fit_logistic_1d(z.astype(np.float64), y)

    def validate(self, model_p: np.ndarray, z: np.ndarray, relevances: np.ndarray) -> bool:
        """Score a batch neither predictor trained on; whether the gate changed state."""
        if self.prior_fit is None or self.threshold is None or not len(relevances):
            return False
        y = np.asarray(relevances) >= self.threshold
        a, b = self.prior_fit
        prior_p = 1.0 / (1.0 + np.exp(-(a * np.asarray(z, dtype=np.float64) + b)))
        self.loss_model = DISCOUNT * self.loss_model + log_loss(model_p, y)
        self.loss_prior = DISCOUNT * self.loss_prior + log_loss(prior_p, y)
        self.batches += 1
        was = self.open
        self.open = self.loss_model < self.loss_prior
        if self.open and self.opened_at_batch is None:
            self.opened_at_batch = self.batches
        return self.open != was

    def state(self) -> dict[str, Any]:
        """JSON-ready state (for checkpoints and stats)."""
        return {
            "threshold": self.threshold,
            "prior_fit": list(self.prior_fit) if self.prior_fit else None,
            "loss_model": self.loss_model,
            "loss_prior": self.loss_prior,
            "batches": self.batches,
            "open": self.open,
            "opened_at_batch": self.opened_at_batch,
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        self.threshold = None if state.get("threshold") is None else float(state["threshold"])
        fit = state.get("prior_fit")
        self.prior_fit = (float(fit[0]), float(fit[1])) if fit else None
        self.loss_model = float(state.get("loss_model", 0.0))
        self.loss_prior = float(state.get("loss_prior", 0.0))
        self.batches = int(state.get("batches", 0))
        self.open = bool(state.get("open", False))
        opened = state.get("opened_at_batch")
        self.opened_at_batch = None if opened is None else int(opened)
