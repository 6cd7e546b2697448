"""One page's counts times a critic's weights: the product a page is judged by, in fewer passes than SciPy's.

A critic scores a page as its (1, n_features) counts times an (n_features, n_classes) CSR weight matrix.
SciPy's sparse product makes two passes over every weight of the page's features (one to bound the
result's size, one to add), then builds a sparse result to turn dense. :func:`page_times` takes the
weight rows of the page's features (one gather) and adds them as a matrix-vector product: each class's
terms in the same order (the page's features in their stored order, each row's weights in theirs), the
same multiplications, so the same sums to the last bit (``tests/test_critic_products.py``), in less CPU where
a page's frequent words have weights in most classes (docs/results.md, "CPU per page"). Scrapy-free.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["page_times", "times"]


def page_times(indices: np.ndarray, data: np.ndarray, weights: sp.csr_matrix) -> np.ndarray:
    """``x @ weights`` as a dense (n_classes,) array, for the one-row sparse ``x`` of ``indices`` and ``data``
    (any order, repeats allowed: each entry is a term, as in SciPy's product); the dtype SciPy's product
    would have (float32 times float32 stays float32)."""
    rows = weights[np.asarray(indices)]  # the page's features' weight rows, in the page's order
    return np.asarray(rows.T @ np.asarray(data))


def times(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, weights: sp.csr_matrix) -> np.ndarray:
    """The CSR rows of ``data``, ``indices`` and ``indptr`` times ``weights``, dense (n_rows, n_classes): one page by
    :func:`page_times`, many texts (a page's anchors, training) by SciPy's product; the same sums either way."""
    if len(indptr) == 2:
        return page_times(indices, data, weights)[None, :]
    shape = (len(indptr) - 1, weights.shape[0])
    return np.asarray((sp.csr_matrix((data, indices, indptr), shape=shape) @ weights).toarray())
