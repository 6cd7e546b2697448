"""The Redis re-score's new waiting scores in array steps equal those of one Python step an entry."""

import numpy as np
import pytest

from focused.frontier.redis_lua import MAX_PRIORITY, SHIFT, priority_of, score
from focused.frontier.rescore_redis import new_scores


def one_by_one(ids, priorities, touched):
    return {
        member: score(int(p), old % SHIFT)
        for (member, old), p in zip(ids, priorities, strict=True)
        if p is not None and int(p) != priority_of(old) and member not in touched
    }


def test_new_scores_in_array_steps_are_those_of_a_step_an_entry():
    rng = np.random.default_rng(5)
    for _ in range(50):
        n = int(rng.integers(0, 300))
        old_priorities = rng.integers(-MAX_PRIORITY, MAX_PRIORITY + 1, size=n)
        ranks = rng.integers(0, SHIFT, size=n)
        ids = [
            (f"u{i}".encode(), score(int(p), int(r)))
            for i, (p, r) in enumerate(zip(old_priorities, ranks, strict=True))
        ]
        new = rng.integers(-2 * MAX_PRIORITY, 2 * MAX_PRIORITY, size=n)  # some beyond the clip
        same = rng.random(n) < 0.3
        new[same] = old_priorities[same]  # unchanged: no update
        priorities = [int(p) for p in new]
        got = new_scores(ids, priorities, set())
        assert got == one_by_one(ids, priorities, set())
        assert all(type(v) is int for v in got.values())
        if n:  # the general way: a priority left out, a member merged since the start
            partial = [None, *priorities[1:]]
            touched = {ids[-1][0]}
            assert new_scores(ids, partial, touched) == one_by_one(ids, partial, touched)
    huge = [(b"a", score(5, 7))]
    assert new_scores(huge, [2**70], set()) == {b"a": score(MAX_PRIORITY, 7)}  # beyond int64: clipped all the same
    with pytest.raises(ValueError):
        new_scores(huge * 3, [4], set())  # one priority for three entries: refused, not broadcast
