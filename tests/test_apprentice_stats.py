"""The apprentice's counting helpers give what the sorting ones in numpy would."""

from __future__ import annotations

import numpy as np

from focused.learning.apprentice.stats import add_counts, feature_ranks


def test_feature_ranks_give_numpy_unique() -> None:
    rng = np.random.default_rng(0)
    for size, n_features in ((0, 16), (1, 16), (5_000, 2**20), (50_000, 1024)):
        ids = (rng.zipf(1.3, size) % n_features).astype(np.int32)
        uniq, rank = feature_ranks(ids, n_features)
        inverse = rank[ids]
        want_uniq, want_inverse = np.unique(ids, return_inverse=True)
        assert np.array_equal(uniq, want_uniq) and np.array_equal(inverse, want_inverse)
        assert np.array_equal(uniq[inverse], ids)


def test_add_counts_tallies_every_occurrence_in_its_bucket() -> None:
    counts = np.zeros((2, 8))
    ids = np.array([3, 3, 5, 0, 3, 7], dtype=np.int32)
    high = np.array([True, True, False, False, False, True])
    add_counts(counts, ids, high, +1)
    assert counts[1].tolist() == [0, 0, 0, 2, 0, 0, 0, 1]
    assert counts[0].tolist() == [1, 0, 0, 1, 0, 1, 0, 0]
    add_counts(counts, ids[:2], high[:2], -1)  # forgetting: counts go back down
    assert counts[1].tolist() == [0, 0, 0, 0, 0, 0, 0, 1]
