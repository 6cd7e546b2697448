"""The naive Bayes apprentice: readiness, binning, ranking, frozen snapshots, files."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from focused.learning.apprentice.features import compact_many, hash_features
from focused.learning.apprentice.learner import Apprentice, NotReadyError, train_from_instances
from focused.learning.apprentice.model import ApprenticeModel
from focused.learning.modelfile import ModelFileError, save_model

N_FEATURES = 2**16


def synthetic(n: int, seed: int = 0, high_rate: float = 0.3) -> tuple[list[list[str]], np.ndarray]:
    """Links whose target is HIGH when ``good@0`` is near them, LOW when ``bad@0`` is, among noise words."""
    rng = np.random.default_rng(seed)
    feats, rel = [], []
    for _ in range(n):
        high = rng.random() < high_rate
        words = [f"w{rng.integers(40)}@{rng.integers(-5, 6)}" for _ in range(rng.integers(3, 20))]
        words.append("good@0" if high else "bad@0")
        if rng.random() < 0.1:  # label noise: the other cue too
            words.append("bad@0" if high else "good@0")
        feats.append(words)
        rel.append(rng.uniform(0.6, 1.0) if high else rng.uniform(0.0, 0.3))
    return feats, np.asarray(rel)


def auc(y: np.ndarray, s: np.ndarray) -> float:
    """Mann-Whitney AUC with ties counted half."""
    pos, neg = s[y], s[~y]
    return float(
        (np.sum(pos[:, None] > neg[None, :]) + 0.5 * np.sum(pos[:, None] == neg[None, :])) / (len(pos) * len(neg))
    )


@pytest.fixture(scope="module")
def data():
    return synthetic(2000, seed=1), synthetic(500, seed=2)


def test_good_cue_ranks_above_bad_cue(data):
    (F, R), (Ft, Rt) = data
    model = train_from_instances(F, R, n_features=N_FEATURES)
    p_good, p_bad, p_none = model.predict([["good@0"], ["bad@0"], ["never-seen@3"]])
    assert p_good > p_none > p_bad
    p = model.predict(Ft)
    assert auc(Rt >= 0.5, p) > 0.9
    assert np.all((p > 0) & (p < 1))


@pytest.mark.parametrize("normalize", ["none", "sqrt", "length"])
def test_calibrated_probabilities_match_the_high_rate(data, normalize):
    (F, R), (Ft, Rt) = data
    model = train_from_instances(F, R, n_features=N_FEATURES, normalize=normalize)
    p = model.predict(Ft)
    assert abs(p.mean() - np.mean(Rt >= 0.5)) < 0.03
    assert len(np.unique(p)) > 0.9 * len(set(map(tuple, map(sorted, Ft))))  # no saturation ties


def test_length_normalisation_makes_scores_independent_of_link_length(data):
    # The same mix of evidence, once or ten times over: raw NB log-odds scale with the count, the
    # length-normalised score does not (a long list of links must not outrank a short one by size alone).
    (F, R), _ = data
    short = ["good@0", "w1@1", "w2@-1"]
    long = short * 10
    length = train_from_instances(F, R, n_features=N_FEATURES, normalize="length")
    lo_short, lo_long = length.log_odds([short, long]) - length.prior_log_odds
    assert lo_long == pytest.approx(10 * lo_short)
    p_short, p_long = length.predict([short, long])
    assert p_short == pytest.approx(p_long)
    raw = train_from_instances(F, R, n_features=N_FEATURES, normalize="none")
    p_short, p_long = raw.predict([short, long])
    assert p_long > p_short + 0.01


def test_not_ready_before_min_instances_and_both_buckets():
    F, R = synthetic(300, seed=3)
    app = Apprentice(n_features=N_FEATURES, min_instances=100)
    assert not app.ready
    app.add(F[:99], R[:99])
    assert not app.ready and app.n_instances == 99
    app.add(F[99:100], R[99:100])
    assert app.ready

    only_low = Apprentice(n_features=N_FEATURES, min_instances=10)
    only_low.add(F[:200], np.full(200, 0.1))
    assert not only_low.ready
    with pytest.raises(NotReadyError):
        only_low.fit()
    only_low.add(F[200:201], [0.9])
    assert only_low.ready
    model = only_low.fit()
    assert model.n_instances == 201 and model.version == 1  # the failed fit did not count


def test_equal_prob_binning_splits_small_relevances():
    F, R = synthetic(400, seed=4)
    small = R * 0.01  # the critic never says "relevant"
    fixed = Apprentice(n_features=N_FEATURES, min_instances=50)
    fixed.add(F, small)
    assert not fixed.ready

    eq = Apprentice(n_features=N_FEATURES, min_instances=50, binning="equal-prob")
    eq.add(F, small)
    assert eq.ready
    model = eq.fit()
    assert 0 < model.threshold <= 0.01
    assert model.threshold == pytest.approx(np.median(small), rel=0.05)
    assert 0.45 <= model.high_rate <= 0.55
    assert model.predict([["good@0"]])[0] > model.predict([["bad@0"]])[0]


def test_equal_prob_with_ties_at_the_median_still_has_two_buckets():
    F, _ = synthetic(100, seed=5)
    rel = np.r_[np.zeros(80), np.full(20, 0.2)]
    eq = Apprentice(n_features=N_FEATURES, min_instances=10, binning="equal-prob")
    eq.add(F, rel)
    assert eq.ready
    model = eq.fit()
    assert model.threshold == 0.2 and model.high_rate == pytest.approx(0.2)

    same = Apprentice(n_features=N_FEATURES, min_instances=10, binning="equal-prob")
    same.add(F, np.full(100, 0.3))
    assert not same.ready


def test_equal_prob_rebucketing_matches_training_from_scratch():
    # The threshold moves between fits; the incrementally updated statistics must equal a fresh fit.
    F, R = synthetic(600, seed=6)
    R = R**3  # skewed so that the median moves as data arrive
    online = Apprentice(n_features=N_FEATURES, min_instances=10, binning="equal-prob")
    for lo in range(0, 600, 150):
        online.add(F[lo : lo + 150], R[lo : lo + 150])
        m_online = online.fit()
    fresh = train_from_instances(F, R, n_features=N_FEATURES, min_instances=10, binning="equal-prob")
    assert m_online.threshold == fresh.threshold
    np.testing.assert_allclose(m_online.log_ratio, fresh.log_ratio, atol=1e-9)
    np.testing.assert_allclose(m_online.predict(F[:50]), fresh.predict(F[:50]), atol=1e-9)


def test_input_forms_are_equivalent(data):
    (F, R), (Ft, _) = data
    from_strings = train_from_instances(F, R, n_features=N_FEATURES)
    from_csr = train_from_instances(hash_features(F, N_FEATURES), R, n_features=N_FEATURES)
    from_ids = train_from_instances(compact_many(F, N_FEATURES), R, n_features=N_FEATURES)
    from_iter = train_from_instances(iter(F), R, n_features=N_FEATURES)
    expected = from_strings.predict(Ft)
    for model in (from_csr, from_ids, from_iter):
        np.testing.assert_allclose(model.predict(Ft), expected, atol=1e-12)
    for X in (hash_features(Ft, N_FEATURES), compact_many(Ft, N_FEATURES)):
        np.testing.assert_allclose(from_strings.predict(X), expected, atol=1e-12)


def test_frozen_model_does_not_change_when_apprentice_learns_more(data):
    (F, R), (Ft, _) = data
    app = Apprentice(n_features=N_FEATURES)
    app.add(F[:1000], R[:1000])
    first = app.fit()
    before = first.predict(Ft).copy()
    flipped = np.where(R[1000:] >= 0.5, 0.0, 1.0)  # the world changes: cues now mean the opposite
    app.add(F[1000:], flipped)
    second = app.fit()
    np.testing.assert_array_equal(first.predict(Ft), before)
    assert (first.version, second.version) == (1, 2)
    assert (first.n_instances, second.n_instances) == (1000, 2000)
    assert not np.allclose(second.predict(Ft), before)
    with pytest.raises(ValueError):
        first.log_ratio[0] = 1.0
    with pytest.raises(AttributeError):
        first.slope = 2.0  # type: ignore[misc]


def test_training_in_a_thread_while_adding():
    F, R = synthetic(3000, seed=7)
    app = Apprentice(n_features=N_FEATURES)
    app.add(F[:500], R[:500])
    models: list[ApprenticeModel] = []
    trainer = threading.Thread(target=lambda: models.extend(app.fit() for _ in range(5)))
    trainer.start()
    for lo in range(500, 3000, 50):
        app.add(F[lo : lo + 50], R[lo : lo + 50])
    trainer.join(120)
    assert not trainer.is_alive()
    final = app.fit()
    assert final.n_instances == 3000 and len(models) == 5
    fresh = train_from_instances(F, R, n_features=N_FEATURES)
    np.testing.assert_allclose(final.log_ratio, fresh.log_ratio, atol=1e-9)


def test_model_save_load_round_trip(tmp_path, data):
    (F, R), (Ft, _) = data
    model = train_from_instances(F, R, n_features=N_FEATURES, feature_params={"d_max": 5, "offsets": True})
    path = tmp_path / "apprentice.npz"
    model.save(path)
    loaded = ApprenticeModel.load(path)
    np.testing.assert_allclose(loaded.predict(Ft), model.predict(Ft), rtol=1e-12)
    assert loaded.feature_params == {"d_max": 5, "offsets": True}
    assert (loaded.version, loaded.n_instances, loaded.high_rate) == (
        model.version,
        model.n_instances,
        model.high_rate,
    )


def test_apprentice_save_load_resumes_training(tmp_path, data):
    (F, R), (Ft, _) = data
    app = Apprentice(n_features=N_FEATURES, binning="equal-prob")
    app.add(F[:1500], R[:1500])
    app.fit()
    path = tmp_path / "state.npz"
    app.save(path)
    resumed = Apprentice.load(path)
    assert resumed.get_params() == app.get_params() and resumed.version == 1
    for a in (app, resumed):
        a.add(F[1500:], R[1500:])
    m1, m2 = app.fit(), resumed.fit()
    assert m2.version == 2
    np.testing.assert_allclose(m2.predict(Ft), m1.predict(Ft), atol=1e-9)


def test_bad_files_raise_model_file_error(tmp_path, data):
    (F, R), _ = data
    with pytest.raises(ModelFileError, match="not found"):
        ApprenticeModel.load(tmp_path / "missing.npz")
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"\x00not a model at all" * 10)
    with pytest.raises(ModelFileError, match="not a model file"):
        ApprenticeModel.load(garbage)
    other = tmp_path / "other.npz"
    with other.open("wb") as fh:
        np.savez(fh, something=np.arange(3))
    with pytest.raises(ModelFileError, match="not a focused model file"):
        ApprenticeModel.load(other)
    app = Apprentice(n_features=N_FEATURES)
    app.add(F, R)
    state = tmp_path / "state.npz"
    app.save(state)
    with pytest.raises(ModelFileError, match=r"holds an apprentice learner.*not a frozen apprentice model"):
        ApprenticeModel.load(state)  # an apprentice state is not a model
    future = save_model({**app.to_bundle(), "format_version": 999}, tmp_path / "future.npz")
    with pytest.raises(ModelFileError, match="version 999"):
        Apprentice.load(future)
    bundle = app.to_bundle()
    del bundle["stats"]["indptr"]
    broken = save_model(bundle, tmp_path / "broken.npz")
    with pytest.raises(ModelFileError, match="corrupt apprentice state"):
        Apprentice.load(broken)
    assert issubclass(ModelFileError, ValueError)


def test_rejects_bad_input():
    app = Apprentice(n_features=N_FEATURES)
    with pytest.raises(ValueError):
        app.add([["a"], ["b"]], [0.5])
    with pytest.raises(ValueError):
        app.add([["a"]], [float("nan")])
    with pytest.raises(ValueError):
        app.add(hash_features([["a"]], 2**10), [0.5])
    with pytest.raises(ValueError):
        Apprentice(binning="quantiles")
    with pytest.raises(ValueError):
        Apprentice(alpha=0)
    app.add([], [])
    assert app.n_instances == 0


def test_a_retrain_at_the_default_width_takes_in_what_was_added():
    """10,000 instances at the default 2**20 hashed features (the retrain ``focused bench-speed`` times): the
    retrain after 100 more instances learns their new cue, and the model ranks held-out links."""
    F, R = synthetic(10_000, seed=8)
    app = Apprentice()  # the default 2**20 hashed features
    app.add(F, R)
    before = app.fit()
    app.add([["fresh@0", *words] for words in F[:100]], np.full(100, 0.95))
    after = app.fit()
    assert (before.n_instances, after.n_instances) == (10_000, 10_100)
    assert after.predict([["fresh@0"]])[0] > before.predict([["fresh@0"]])[0]
    Ft, Rt = synthetic(500, seed=9)
    assert auc(Rt >= 0.5, after.predict(Ft)) > 0.9


def side_data(n: int, seed: int) -> tuple[list[list[str]], np.ndarray, np.ndarray]:
    """Links whose ⟨t,d⟩ context is noise; a side feature (an 'anchor critic' logit) carries the label."""
    rng = np.random.default_rng(seed)
    feats = [[f"w{rng.integers(40)}@{rng.integers(-5, 6)}" for _ in range(8)] for _ in range(n)]
    high = rng.random(n) < 0.4
    side = np.column_stack([rng.normal(size=n), np.where(high, 2.0, -2.0) + rng.normal(size=n)])
    rel = np.where(high, rng.uniform(0.6, 1.0, n), rng.uniform(0.0, 0.3, n))
    return feats, rel, side


def test_side_features_are_stacked_with_the_link_context():
    F, R, S = side_data(1500, seed=3)
    Ft, Rt, St = side_data(500, seed=4)
    app = Apprentice(n_features=N_FEATURES, n_side=2)
    app.add(F, R, S)
    model = app.fit()
    assert model.n_side == 2
    assert model.side_weights[1] > 1.0 > abs(model.side_weights[0])  # the informative view wins
    assert auc(Rt >= 0.5, model.predict(Ft, St)) > 0.9
    with pytest.raises(ValueError, match="side features"):
        model.predict(Ft)
    with pytest.raises(ValueError, match="side features"):
        app.add(F[:2], R[:2])  # an apprentice with side features needs them
    with pytest.raises(ValueError, match="side features"):
        app.add(F[:2], R[:2], np.zeros((2, 3)))


def test_side_features_survive_save_and_load(tmp_path):
    F, R, S = side_data(600, seed=5)
    Ft, _, St = side_data(100, seed=6)
    app = Apprentice(n_features=N_FEATURES, n_side=2)
    app.add(F, R, S)
    model = app.fit()
    model.save(tmp_path / "model.npz")
    np.testing.assert_allclose(ApprenticeModel.load(tmp_path / "model.npz").predict(Ft, St), model.predict(Ft, St))
    app.save(tmp_path / "state.npz")
    resumed = Apprentice.load(tmp_path / "state.npz")
    assert resumed.n_side == 2
    np.testing.assert_allclose(resumed.fit().predict(Ft, St), app.fit().predict(Ft, St), atol=1e-9)


def test_reads_version_1_files_without_side_features(tmp_path, data):
    (F, R), (Ft, _) = data
    app = Apprentice(n_features=N_FEATURES)
    app.add(F, R)
    model = app.fit()
    for obj, name in ((app, "state"), (model, "model")):
        bundle = obj.to_bundle()
        bundle["format_version"] = 1
        bundle["params"].pop("n_side")
        bundle.get("stats", {}).pop("side", None)
        bundle.get("model", {}).pop("side_weights", None)
        save_model(bundle, tmp_path / f"{name}.npz")
    assert Apprentice.load(tmp_path / "state.npz").n_side == 0
    old = ApprenticeModel.load(tmp_path / "model.npz")
    assert old.n_side == 0
    np.testing.assert_allclose(old.predict(Ft), model.predict(Ft))


def test_compact_rows_with_an_id_out_of_range_are_refused() -> None:
    import numpy as np
    import pytest

    from focused.learning.apprentice.learner import Apprentice

    learner = Apprentice(n_features=16)
    good = [np.array([1, 2, 2], np.int32), np.zeros(0, np.int32)]
    for bad in (np.array([3, 16]), np.array([-1, 4])):
        with pytest.raises(ValueError, match="out of range"):
            learner.add([*good, bad], [0.5, 0.5, 0.5])
    assert learner.n_instances == 0
    learner.add(good, [0.9, 0.1])
    assert learner.n_instances == 2
