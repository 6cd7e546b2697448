"""The verdict head scores pages with its weights feature by feature (a sparse matrix derived from them, built
when first needed and left out of the worker's pickle): the same scores, to the last bit, as the dense block of
the weighted features' weights it replaced, in a fraction of its memory."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from focused.learning.critic.verdict_head import VerdictHead, train_head


def _block_scores(head: VerdictHead, X: sp.csr_matrix) -> np.ndarray:
    """The replaced computation: every feature with a weight has a row of all its classes' weights in one dense
    float32 block, and a page's weighted counts of those features times the block are its scores."""
    used = np.unique(head.coef.indices)
    slot = np.full(head.coef.shape[1], -1, dtype=np.int32)
    slot[used] = np.arange(len(used), dtype=np.int32)
    block = np.ascontiguousarray(head.coef[:, used].T.toarray(), dtype=np.float32)
    n = X.shape[0]
    rows = np.repeat(np.arange(n), np.diff(X.indptr))
    weights = head._weights(X, rows)
    slots = np.take(slot, X.indices)
    keep = slots >= 0
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows[keep], minlength=n))])
    weighted = sp.csr_matrix((weights[keep].astype(np.float32), slots[keep], indptr), shape=(n, len(block)))
    return np.asarray(weighted @ block, dtype=np.float64) + head.intercept[None, :]


def _scores(head: VerdictHead, X: sp.csr_matrix) -> np.ndarray:
    """The scores :meth:`VerdictHead.posteriors` takes its sigmoids of."""
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    weighted = sp.csr_matrix((head._weights(X, rows).astype(np.float32), X.indices, X.indptr), shape=X.shape)
    return (weighted @ head._by_feature()).toarray().astype(np.float64) + head.intercept[None, :]


@pytest.mark.parametrize(("n_classes", "max_weights", "density"), [(2, 300, 0.02), (5, 200, 0.02), (40, 60, 0.05)])
def test_the_same_scores_as_the_dense_block_to_the_last_bit(n_classes: int, max_weights: int, density: float) -> None:
    rng = np.random.default_rng(n_classes)
    n_features = 4096
    X = sp.random(400, n_features, density=density, format="csr", random_state=n_classes, dtype=np.float64)
    X.data = rng.integers(1, 6, X.nnz).astype(np.float64)
    head = train_head(X, rng.integers(0, n_classes, 400), n_classes, max_weights=max_weights)
    pages = X[:60]
    want = _block_scores(head, pages)
    assert np.array_equal(_scores(head, pages), want)  # pages together
    for i in range(pages.shape[0]):  # and one by one, as the crawl judges them
        assert np.array_equal(_scores(head, pages[i]), want[i : i + 1])
    # the posteriors are taken from those scores
    prob = 1.0 / (1.0 + np.exp(-np.clip(want, -500, 500)))
    assert np.array_equal(head.posteriors(pages), prob / prob.sum(axis=1, keepdims=True))


def test_the_matrix_is_about_the_size_of_the_weights_and_stays_out_of_the_pickle() -> None:
    rng = np.random.default_rng(0)
    n_features, n_classes = 1 << 14, 50
    X = sp.random(600, n_features, density=0.02, format="csr", random_state=1, dtype=np.float64)
    X.data = rng.integers(1, 4, X.nnz).astype(np.float64)
    head = train_head(X, rng.integers(0, n_classes, 600), n_classes, max_weights=200)
    pages = X[:40]
    want = head.posteriors(pages)
    by_feature = head._scoring
    assert by_feature is not None
    held = by_feature.data.nbytes + by_feature.indices.nbytes + by_feature.indptr.nbytes
    weights = head.coef.data.nbytes + head.coef.indices.nbytes
    used = len(np.unique(head.coef.indices))
    assert held <= weights + 4 * (n_features + 1)  # the weights once more, and a row pointer per feature
    assert held < used * n_classes * 4  # less than the dense block of the weighted features
    built = pickle.dumps(head)
    copy = pickle.loads(built)
    assert copy._scoring is None
    assert np.array_equal(copy.posteriors(pages), want)
    assert len(built) < len(pickle.dumps(dict(head.__dict__)))
