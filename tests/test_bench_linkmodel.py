"""The ceiling study's cross-case link model: topic-free link features, learned on other groups only."""

from __future__ import annotations

import numpy as np

from focused.bench.studies.linkmodel import STRATEGIES, cross_case_scores, link_features


def test_link_features_read_the_views_the_page_size_and_the_link_position():
    # page 0 links to 1, 2, 3 (in that order); page 1 links to 3; pages 2 and 3 have no links
    page_view = np.array([0.9, 0.1, 0.5, 0.5])
    src = np.array([0, 0, 1, 0])
    anchor_view = np.array([0.5, 0.8, 0.2, 0.1])
    X = link_features(page_view, anchor_view, src)
    assert X.shape == (4, 4)
    assert X[0, 0] > 0 > X[2, 0]  # the page view's logit: page 0 relevant, page 1 not
    assert X[1, 1] > X[0, 1] == 0 > X[3, 1]  # the anchor view's logit
    assert np.allclose(X[:, 2], np.log1p([3, 3, 1, 3]))
    assert X[:, 3].tolist() == [0.0, 0.5, 0.0, 1.0]  # page 0's links first to last; a lone link is first


def _case(rng: np.random.Generator, sign: float, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    X = rng.normal(size=(n, 4))
    return X, (sign * X[:, 1] > 0)


def test_each_case_learns_from_the_other_groups_only():
    rng = np.random.default_rng(1)
    # group "a": a high anchor view means on topic; group "b" has the opposite rule
    cases = [_case(rng, +1.0), _case(rng, +1.0), _case(rng, -1.0)]
    groups = ["a", "a", "b"]
    scores = cross_case_scores(groups, [X for X, _ in cases], [y for _, y in cases])
    assert all(set(s) == set(STRATEGIES) for s in scores)
    for (X, _), s, expected in zip(cases, scores, (-1.0, -1.0, +1.0), strict=True):
        for strategy in STRATEGIES:
            # a case of group a follows b's inverted rule, b's case follows a's: neither saw its own labels
            agreement = np.corrcoef(s[strategy], X[:, 1])[0, 1]
            assert expected * agreement > 0.5, (strategy, agreement)


def test_a_case_with_no_other_group_gets_no_link_model():
    rng = np.random.default_rng(2)
    cases = [_case(rng, +1.0), _case(rng, +1.0)]
    assert cross_case_scores(["a", "a"], [X for X, _ in cases], [y for _, y in cases]) == [{}, {}]
