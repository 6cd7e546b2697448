"""Calibration folds grouped by target page: all the links to one page are held out together."""

from __future__ import annotations

import numpy as np
import pytest

from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.online import OnlineApprentice
from focused.learning.apprentice.payload import LinkPayload, page_key, target_group
from focused.learning.apprentice.stats import fold_of


def test_round_robin_without_groups():
    assert fold_of(7, 3).tolist() == [0, 1, 2, 0, 1, 2, 0]


def test_grouped_folds_put_all_instances_of_a_target_in_one_fold():
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 10**9, size=12).repeat(5)  # 12 targets, 5 links each, adjacent
    rng.shuffle(groups)
    folds = fold_of(len(groups), 5, groups)
    for g in np.unique(groups):
        assert np.unique(folds[groups == g]).size == 1
    assert np.unique(folds).size > 1
    # round robin splits a target's links across folds
    assert any(np.unique(fold_of(len(groups), 5)[groups == g]).size > 1 for g in np.unique(groups))


def test_unknown_targets_fall_back_to_round_robin_and_shapes_are_checked():
    assert fold_of(4, 2, np.array([-1, -1, 7, 7])).tolist() == [0, 1, 1, 1]
    with pytest.raises(ValueError):
        fold_of(3, 2, np.array([1, 2]))


def _target_words(grouped: bool) -> Apprentice:
    """40 targets, 6 links each; every link to a target carries only that target's own anchor word."""
    rng = np.random.default_rng(3)
    app = Apprentice(
        n_features=1024,
        binning="fixed",
        min_instances=0,
        n_side=2,
        side_offset=(0.3, 0.7),
        offset_penalty=1.0,
        grouped_folds=grouped,
    )
    targets = np.arange(40).repeat(6)
    rng.shuffle(targets)
    high = rng.random(40) < 0.5
    rel = np.where(high[targets], 0.9, 0.1)
    side = rng.normal(0, 1, (len(targets), 2))  # the views know nothing
    app.add([np.array([t + 1], np.int32) for t in targets], rel, side, groups=targets * 7919)
    return app


def test_grouped_folds_do_not_leak_a_targets_anchor_words_into_held_out_evidence():
    # Round robin: a target's word is in the training folds with the target's label, so the held-out
    # evidence looks perfect and the correction trusts it. Grouped: the word is never seen outside its
    # fold, the held-out evidence is nil, and the link context corrects nothing.
    leaky = _target_words(grouped=False).fit()
    grouped = _target_words(grouped=True).fit()
    assert leaky.slope > 0.1
    assert grouped.slope <= 1e-6


def test_groups_are_saved_and_checked(tmp_path):
    app = _target_words(grouped=True)
    app.save(tmp_path / "a.npz")
    loaded = Apprentice.load(tmp_path / "a.npz")
    assert loaded.get_params()["grouped_folds"] is True
    assert loaded.fit().slope == pytest.approx(app.fit().slope)
    assert "grouped_folds" not in Apprentice().get_params()  # old files unchanged
    with pytest.raises(ValueError):
        app.add([np.array([1], np.int32)], [0.5], np.zeros((1, 2)), groups=[1, 2])


def test_the_online_apprentice_labels_instances_with_their_target():
    online = OnlineApprentice(Apprentice(n_features=64), batch_size=10)
    payload = LinkPayload(np.array([1], np.int32))
    online.observe_links(["http://a/x", "http://a/y", "http://a/x#top"], [payload] * 3)
    online.observe_page(["http://a/x", "http://a/x/index.html"], 0.9)
    online.observe_page(["http://a/y"], 0.1)
    online.observe_links(["http://a/y"], [payload])  # found after its target was fetched
    payloads, rel = online.take_batch()
    x, y = target_group(page_key("http://a/x")), target_group(page_key("http://a/y"))
    assert online.batch_groups.tolist() == [x, x, y, y]
    assert rel.tolist() == [0.9, 0.9, 0.1, 0.1]
    online.train(payloads, rel)
    assert online.learner._group[:4].tolist() == [x, x, y, y]
