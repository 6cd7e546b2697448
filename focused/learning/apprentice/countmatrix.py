"""Count matrices of hashed link-feature ids: the apprentice's model input, built from compact id arrays.

A link's features are kept as their hashed ids (:func:`~focused.learning.apprentice.features.compact`,
repeated for counts); the model reads them as a CSR count matrix, one row per link. A re-scoring
builds one from millions of ids at once, so these build it in as few array passes as they can, and
:func:`product_matrix` builds one that is only good for products with a vector (the model's scores),
in fewer passes still. Scrapy-free.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from focused.learning.apprentice.features import N_FEATURES


def from_compact(arrays: Sequence[np.ndarray], n_features: int = N_FEATURES) -> sp.csr_matrix:
    """CSR count matrix from :func:`~focused.learning.apprentice.features.compact` arrays; equal to
    :func:`~focused.learning.apprentice.features.hash_features` of the original lists."""
    lengths = np.fromiter((len(a) for a in arrays), dtype=np.int64, count=len(arrays))
    indices = np.concatenate(arrays).astype(np.int32) if len(arrays) else np.zeros(0, np.int32)
    return csr_from_flat(lengths, indices, n_features)


#: From this many ids on, sorted rows are counted by their runs (a re-scoring's millions), not by SciPy.
RUNS_MIN_IDS = 20_000


def csr_from_flat(lengths: np.ndarray, ids: np.ndarray, n_features: int = N_FEATURES) -> sp.csr_matrix:
    """:func:`from_compact` of rows given as their lengths and their ids concatenated (int32).

    Rows whose ids rise strictly (as the crawler's payloads mostly do: sorted,
    each id once) are the matrix as they are, with counts of 1; rows sorted with
    repeated ids are counted in one pass over the runs of equal ids; otherwise,
    or for fewer than :data:`RUNS_MIN_IDS` ids (where the passes cost more than
    they save), SciPy sorts and sums them. The matrix is the same either way
    (canonical: sorted, no duplicates).
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    ids = np.asarray(ids, dtype=np.int32)
    if ids.size and int(ids.view(np.uint32).max()) >= n_features:  # one pass: a negative id wraps past 2**31
        raise ValueError(f"feature ids out of range for n_features={n_features}")
    shape = (len(lengths), n_features)
    if ids.size >= RUNS_MIN_IDS:
        inner = indptr[1:-1]
        row_ends = inner[(inner > 0) & (inner < ids.size)] - 1  # a row starts after these positions
        rising = ids[1:] > ids[:-1]
        rising[row_ends] = True
        if rising.all():  # every row strictly rising: each id once, in order
            X = sp.csr_matrix((np.ones(ids.size), ids, indptr), shape=shape)
            X.has_sorted_indices = True
            X.has_canonical_format = True
            return X
        del rising
        boundary = np.zeros(ids.size - 1, dtype=bool)
        boundary[row_ends] = True
        if np.all((ids[1:] >= ids[:-1]) | boundary):  # sorted within every row
            new_run = np.empty(ids.size, dtype=bool)  # where a run of equal ids (one column of a row) starts
            new_run[0] = True
            np.logical_or(ids[1:] != ids[:-1], boundary, out=new_run[1:])
            starts = np.flatnonzero(new_run)
            counts = np.empty(starts.size, dtype=np.float64)  # each run's length: one pass, no int64 copy
            np.subtract(starts[1:], starts[:-1], out=counts[:-1])
            counts[-1] = ids.size - starts[-1]
            # a row's first run: the runs that start before the row (no running count over every id)
            X = sp.csr_matrix((counts, ids[starts], np.searchsorted(starts, indptr)), shape=shape, dtype=np.float64)
            X.has_sorted_indices = True
            X.has_canonical_format = True
            return X
    X = sp.csr_matrix((np.ones(len(ids)), ids, indptr), shape=shape, dtype=np.float64)
    X.sum_duplicates()
    return X


def product_matrix(lengths: np.ndarray, ids: np.ndarray, n_features: int = N_FEATURES) -> sp.csr_matrix:
    """:func:`csr_from_flat` for products with a vector only (a re-scoring's model step), in fewer passes.

    Rows sorted with repeated ids keep every position: a run of equal ids has its count on its first
    position and 0.0 on the others. ``M @ v`` then adds, row by row, the same terms in the same order as
    the canonical matrix's product, with zeros between them that change no sum (``s + 0.0 * w == s`` for a
    finite ``w``): the same products to the last bit. The matrix is not canonical (a column repeats
    within a row), so it is for products only. Rows not sorted, or fewer than :data:`RUNS_MIN_IDS` ids:
    :func:`csr_from_flat`.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    ids = np.asarray(ids, dtype=np.int32)
    if ids.size < RUNS_MIN_IDS:
        return csr_from_flat(lengths, ids, n_features)
    if int(ids.view(np.uint32).max()) >= n_features:  # one pass: a negative id wraps past 2**31
        raise ValueError(f"feature ids out of range for n_features={n_features}")
    indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    inner = indptr[1:-1]
    row_ends = inner[(inner > 0) & (inner < ids.size)] - 1  # a row starts after these positions
    same = ids[1:] == ids[:-1]  # same[i]: ids[i + 1] repeats ids[i]
    same[row_ends] = False
    sorted_rows = ids[1:] > ids[:-1]
    sorted_rows |= same
    sorted_rows[row_ends] = True
    if not sorted_rows.all():
        return csr_from_flat(lengths, ids, n_features)
    del sorted_rows
    data = np.empty(ids.size)  # 0.0 where a position repeats the id before it, else 1.0
    data[0] = 1.0
    np.subtract(1.0, same, out=data[1:], dtype=np.float64)
    repeats = np.flatnonzero(same) + 1  # the positions that repeat the id before them
    if repeats.size:
        first = np.ones(repeats.size, dtype=bool)  # the first repeat of each run
        np.not_equal(repeats[1:], repeats[:-1] + 1, out=first[1:])
        firsts = np.flatnonzero(first)
        # the run's count on its first position (which repeats nothing: it held 1.0)
        data[repeats[firsts] - 1] = np.diff(np.append(firsts, repeats.size)) + 1.0
    return sp.csr_matrix((data, ids, indptr), shape=(len(lengths), n_features))
