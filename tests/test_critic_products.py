"""A page is judged by its counts times the critic's weights (:mod:`focused.learning.critic.products`): the same
sums, to the last bit, as SciPy's sparse product, which the critic used before and still uses for many texts at
once. Same bits matter: a page's relevance sets its links' priorities, and so the crawl's order."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from focused.learning.critic.naive_bayes import Critic
from focused.learning.critic.products import page_times


def _scipy(indices: np.ndarray, data: np.ndarray, weights: sp.csr_matrix) -> np.ndarray:
    x = sp.csr_matrix((data, indices, [0, len(indices)]), shape=(1, weights.shape[0]))
    return (x @ weights).toarray()[0]


def _weights(rng: np.random.Generator, n_features: int, n_classes: int, dtype: type) -> sp.csr_matrix:
    """Weights of every magnitude and sign, frequent features in every class and rare ones in a few."""
    dense = rng.normal(0, 1, (n_features, n_classes)) * 10.0 ** rng.integers(-6, 4, (n_features, n_classes))
    dense[rng.random((n_features, n_classes)) < np.linspace(0.0, 0.95, n_features)[:, None]] = 0.0
    return sp.csr_matrix(dense.astype(dtype))


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_pages_product_is_scipys_to_the_last_bit(dtype: type) -> None:
    rng = np.random.default_rng(7)
    n_features = 3000
    weights = _weights(rng, n_features, 105, dtype)
    for trial in range(60):
        n = int(rng.integers(0, 900)) if trial else 0  # the first an empty page
        indices = rng.choice(n_features, size=n, replace=trial % 3 == 2).astype(np.int32)  # repeats in a third
        if trial % 3 == 0:
            indices.sort()  # a canonical page, as the critic's counts are; the others in any order
        data = (rng.integers(1, 9, n) if dtype is np.float64 else rng.random(n)).astype(dtype)
        got = page_times(indices, data, weights)
        assert _same_bits(got, _scipy(indices, data, weights)), trial


def test_a_sum_in_another_order_differs() -> None:
    """What the test above would see of a product that adds the terms in another order (a dense dot)."""
    rng = np.random.default_rng(7)
    weights = _weights(rng, 3000, 105, np.float64)
    indices = np.sort(rng.choice(3000, size=800, replace=False)).astype(np.int32)
    data = rng.integers(1, 9, 800).astype(np.float64)
    other = data @ weights[indices].toarray()
    assert not _same_bits(other, _scipy(indices, data, weights))


def test_a_critic_judges_a_page_alone_as_among_others() -> None:
    """One page's naive Bayes likelihoods and verdict-head posteriors (the one-page product) are its row of the
    same pages judged together (SciPy's product), to the last bit."""
    rng = np.random.default_rng(3)
    vocabulary = [f"w{i}" for i in range(400)]
    texts, labels = [], []
    for i in range(240):
        label = ("alpha", "beta", "gamma")[i % 3]
        words = rng.choice(vocabulary, size=int(rng.integers(20, 120)), p=_zipf(len(vocabulary), i % 3))
        texts.append(" ".join(words))
        labels.append(label)
    critic = Critic.train(texts, labels, n_features=2**12, verdict_head=True)
    assert critic.head is not None
    X = critic.transform(texts[:50])
    together = critic._log_likelihood(X)[0]
    heads = critic.head.posteriors(X)
    for i in range(50):
        alone = critic._log_likelihood(X[i])[0]
        assert _same_bits(alone, together[i : i + 1]), i
        assert _same_bits(critic.head.posteriors(X[i]), heads[i : i + 1]), i


def _zipf(n: int, shift: int) -> np.ndarray:
    p = 1.0 / np.roll(np.arange(1, n + 1), 37 * shift)
    return p / p.sum()
