"""The switch-in gate: the apprentice serves links only while it predicts better than the prior.

Scrapy-free. Before the apprentice has a model, a link gets the critic's blended
views of the page and the anchor, ``z = (1 − w)·logit Pr(c*|u) + w·logit Pr(c*|anchor)``
(the *prior*). A fixed switch-in count cannot serve every web: switching in after
50 pages helps on WebKB and costs 14 points of harvest at 100 pages on the
Wikipedia track. The gate lets the data decide, by *progressive validation*:

1. Each batch of new instances is scored by the current model and by the prior
   *before* the model trains on it. Only links found while their target was
   still unknown count (the frontier's decisions); a link to a page fetched
   before is easy for a model that has learned other links to the same page.
2. The question is the crawler's: is the target on topic (the critic's
   relevance ≥ 1/2)? Neither score is a probability of that, so each is
   calibrated, ``σ(a·s + b)``, on the *earlier* batches' held-out scores, then
   its log-loss on the new batch is added to a running, exponentially
   discounted sum (at each new batch the earlier losses are multiplied by
   DISCOUNT, since the model improves as it learns).
3. The model serves links (and re-scores the frontier) only while its running
   log-loss is below the prior's, once the earlier held-out batches hold at least
   MIN_EACH on-topic and MIN_EACH off-topic targets; otherwise links keep the prior.

Because the prior is monotone in ``z``, "the prior serves" ranks the frontier
exactly as ``apprentice:prior`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["DISCOUNT", "MIN_EACH", "ON_TOPIC", "SwitchGate", "fit_logistic_1d", "log_loss"]

#: Weight of the earlier batches' losses when a new batch is added.
DISCOUNT = 0.75
#: On-topic and off-topic targets the held-out batches must hold before the gate may open.
MIN_EACH = 20
#: A target whose relevance (the critic's Pr(c*|v)) reaches this is on topic.
ON_TOPIC = 0.5
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
    """Running held-out log-loss of the model and of the prior, both calibrated (module docstring)."""

    def __init__(self) -> None:
        self.model_fit: tuple[float, float] | None = None  # (a, b) of the model's logit
        self.prior_fit: tuple[float, float] | None = None  # (a, b) of the prior's logit
        self.loss_model = 0.0
        self.loss_prior = 0.0
        self.batches = 0
        self.open = False
        self.opened_at_batch: int | None = None
        self._m: list[np.ndarray] = []  # held-out model logits, prior logits and labels so far
        self._z: list[np.ndarray] = []
        self._y: list[np.ndarray] = []

    def validate(self, model_p: np.ndarray, z: np.ndarray, relevances: np.ndarray) -> bool:
        """Score a batch the model did not train on; whether the gate changed state."""
        if not len(relevances):
            return False
        p = np.clip(np.asarray(model_p, dtype=np.float64), _EPS, 1.0 - _EPS)
        m = np.log(p) - np.log1p(-p)
        z = np.asarray(z, dtype=np.float64)
        y = np.asarray(relevances) >= ON_TOPIC
        was = self.open
        if self.model_fit is not None and self.prior_fit is not None:
            self.loss_model = DISCOUNT * self.loss_model + log_loss(_sigmoid(self.model_fit, m), y)
            self.loss_prior = DISCOUNT * self.loss_prior + log_loss(_sigmoid(self.prior_fit, z), y)
            self.batches += 1
            n_on = int(sum(int(np.count_nonzero(b)) for b in self._y))
            n_off = int(sum(b.size for b in self._y)) - n_on
            self.open = self.loss_model < self.loss_prior and min(n_on, n_off) >= MIN_EACH
            if self.open and self.opened_at_batch is None:
                self.opened_at_batch = self.batches
        self._m.append(m)
        self._z.append(z)
        self._y.append(y)
        labels = np.concatenate(self._y)
        self.model_fit = fit_logistic_1d(np.concatenate(self._m), labels)
        self.prior_fit = fit_logistic_1d(np.concatenate(self._z), labels)
        return self.open != was

    def state(self) -> dict[str, Any]:
        """JSON-ready state (for checkpoints and stats; the held-out scores are not kept)."""
        return {
            "model_fit": list(self.model_fit) if self.model_fit else None,
            "prior_fit": list(self.prior_fit) if self.prior_fit else None,
            "loss_model": self.loss_model,
            "loss_prior": self.loss_prior,
            "batches": self.batches,
            "open": self.open,
            "opened_at_batch": self.opened_at_batch,
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        fits = [state.get("model_fit"), state.get("prior_fit")]
        self.model_fit, self.prior_fit = ((float(f[0]), float(f[1])) if f else None for f in fits)
        self.loss_model = float(state.get("loss_model", 0.0))
        self.loss_prior = float(state.get("loss_prior", 0.0))
        self.batches = int(state.get("batches", 0))
        self.open = bool(state.get("open", False))
        opened = state.get("opened_at_batch")
        self.opened_at_batch = None if opened is None else int(opened)


def _sigmoid(fit: tuple[float, float], s: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(fit[0] * s + fit[1])))
