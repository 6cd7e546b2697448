import numpy as np
import pytest

from focused.frontier.heap import Frontier
from focused.priority import PRIORITY_SCALE, SEED_PRIORITY, priority_to_score, score_to_priority, scores_to_priorities


def drain(frontier):
    out = []
    while (entry := frontier.pop()) is not None:
        out.append(entry.key)
    return out


def test_scores_to_priorities_is_score_to_priority_of_each():
    halves = (np.arange(1000) + 0.5) / PRIORITY_SCALE  # x.5 after scaling: rounded half to even by both
    scores = np.concatenate([np.random.default_rng(0).random(10_000), halves, [np.nan, -1, 0, 1, 7, np.inf, -np.inf]])
    priorities = scores_to_priorities(scores)
    assert priorities == [score_to_priority(s) for s in scores.tolist()]
    assert all(type(p) is int for p in priorities)


def test_score_to_priority_is_int_monotone_and_clipped():
    values = [score_to_priority(s) for s in (-1.0, 0.0, 0.1, 0.5, 0.9, 1.0, 7.0)]
    assert all(type(v) is int for v in values)
    assert values == sorted(values)
    assert values[0] == 0 and values[-1] == PRIORITY_SCALE
    assert score_to_priority(float("nan")) == 0
    assert score_to_priority(0.1234567) != score_to_priority(0.1234557)
    assert SEED_PRIORITY > PRIORITY_SCALE
    assert priority_to_score(score_to_priority(0.25)) == pytest.approx(0.25)


def test_best_first_with_fifo_ties():
    f = Frontier(tiebreak="fifo")
    for key, prio in [("a", 1), ("b", 5), ("c", 5), ("d", 3)]:
        f.push(key, key, prio)
    assert drain(f) == ["b", "c", "d", "a"]


def test_random_tiebreak_is_seeded():
    orders = []
    for seed in (1, 1, 2):
        f = Frontier(tiebreak="random", seed=seed)
        for i in range(20):
            f.push(str(i), i, 7)
        orders.append(drain(f))
    assert orders[0] == orders[1]
    assert orders[0] != orders[2]
    assert sorted(orders[2], key=int) == [str(i) for i in range(20)]


@pytest.mark.parametrize(
    ("aggregation", "expected"),
    [("first", 10), ("max", 90), ("mean", 50)],
)
def test_parent_aggregation(aggregation, expected):
    f = Frontier(aggregation=aggregation)
    assert f.push("x", "x", 10) is True
    assert f.push("x", "x", 90) is False
    assert f.push("x", "x", 50) is False
    f.push("y", "y", 49)
    entry = next(e for e in f if e.key == "x")
    assert entry.priority == expected
    assert f.peek().key == ("x" if expected > 49 else "y")
    assert (entry.first, entry.n, entry.total, entry.best) == (10, 3, 150, 90)
    assert len(f) == 2
    assert f.merged == 2


def test_merge_moves_a_waiting_url_up():
    f = Frontier(aggregation="max")
    f.push("low", "low", 1)
    f.push("mid", "mid", 5)
    f.push("low", "low", 9)
    assert drain(f) == ["low", "mid"]


def test_rescore_changes_pop_order_and_keeps_payloads():
    f = Frontier()
    for i, key in enumerate("abcd"):
        f.push(key, key, i, payload={"feat": key})
    assert f.peek().key == "d"
    changed = f.rescore(lambda entries: [{"a": 100, "b": None}.get(e.key, 0) for e in entries])
    assert changed == 3  # a: 0->100, c: 2->0, d: 3->0; b kept
    assert drain(f) == ["a", "b", "c", "d"]


def test_bad_options_are_rejected():
    with pytest.raises(ValueError, match="aggregation"):
        Frontier(aggregation="median")
    with pytest.raises(ValueError, match="tiebreak"):
        Frontier(tiebreak="lifo")
