"""The apprentice's memory savings give the numbers they replaced: ids packed as 2-byte gaps read back exactly,
instance positions and naive Bayes weights computed with fewer temporaries equal the plain expressions, and
the learner stores about 2 bytes a feature occurrence and writes its files as before (int32 ids)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from focused.learning.apprentice.instances import InstanceBuffer
from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.packed import PackedIds, pack, unpack
from focused.learning.apprentice.stats import nb_weights, segments


def _rows(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """Instances as the crawler makes them (sorted ids of a 2**20 space, repeats, some gaps of 2**16 or
    more), empty ones, and a few out of order over the whole int32 range."""
    rows = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.1:
            rows.append(np.zeros(0, dtype=np.int32))
        elif kind < 0.2:
            rows.append(rng.integers(-(2**31), 2**31 - 1, int(rng.integers(1, 6))).astype(np.int32))
        else:
            rows.append(np.sort(rng.integers(0, 2**20, int(rng.integers(1, 60)))).astype(np.int32))
    rows.append(np.array([0, 65535, 65535 + 65536, 2**31 - 1, 0, -1, -(2**31)], dtype=np.int32))
    return rows


def test_packed_ids_read_back_exactly() -> None:
    rng = np.random.default_rng(5)
    rows = _rows(rng, 400)
    lengths = np.array([len(r) for r in rows], dtype=np.int64)
    ids = np.concatenate(rows)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    low, wide_at, wide_high = pack(ids, lengths)
    assert low.dtype == np.uint16 and len(low) == len(ids) and 0 < len(wide_at) < len(ids) // 4
    packed = PackedIds(low, wide_at, wide_high)
    assert np.array_equal(unpack(packed, slice(0, len(ids)), lengths), ids)
    for _ in range(50):  # any set of whole instances, by position, and any run of them, by slice
        rows_wanted = np.flatnonzero(rng.random(len(rows)) < rng.random())
        pos, got_lengths = segments(indptr, rows_wanted)
        got = unpack(packed, pos, got_lengths)
        assert got.dtype == np.int32 and np.array_equal(got, ids[pos])
        a, b = sorted(rng.integers(0, len(rows) + 1, 2))
        span = slice(int(indptr[a]), int(indptr[b]))
        assert np.array_equal(unpack(packed, span, lengths[a:b]), ids[span])
    assert np.array_equal(unpack(ids, pos, got_lengths), ids[pos])  # plain ids pass through
    assert unpack(packed, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)).shape == (0,)


def test_the_instance_buffer_keeps_its_ids_through_growth_and_drops() -> None:
    rng = np.random.default_rng(6)
    buffer, kept = InstanceBuffer(n_side=0), []
    for step in range(30):
        rows = _rows(rng, int(rng.integers(0, 40)))
        lengths = np.array([len(r) for r in rows], dtype=np.int64)
        before = buffer.ids  # a fit's view: the buffer grows into new arrays, this one stays as it was
        before_ids = unpack(before, slice(0, len(before)), np.diff(buffer.indptr[: buffer.n + 1]))
        buffer.append(np.concatenate(rows), lengths, np.zeros(len(rows)), None)
        kept += rows
        assert np.array_equal(
            unpack(before, slice(0, len(before)), np.diff(buffer.indptr[: len(kept) - len(rows) + 1])), before_ids
        )
        if step % 4 == 3:
            d = int(rng.integers(1, buffer.n + 1))
            dropped, dropped_lengths, _ = buffer.drop_oldest(d)
            assert np.array_equal(dropped, np.concatenate(kept[:d]))
            assert dropped_lengths.tolist() == [len(r) for r in kept[:d]]
            kept = kept[d:]
        assert np.array_equal(buffer.all_ids(), np.concatenate([np.zeros(0, np.int32), *kept]))
    assert buffer.low.dtype == np.uint16


def test_segments_are_the_repeat_plus_arange_positions() -> None:
    rng = np.random.default_rng(2)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        lengths = rng.integers(0, 7, n) * (rng.random(n) < 0.8)
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        rows = rng.choice(n, size=int(rng.integers(0, n + 1)), replace=bool(rng.random() < 0.3))
        starts, lens = indptr[rows], indptr[rows + 1] - indptr[rows]
        expected = np.repeat(starts - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(lens.sum())
        pos, got_lengths = segments(indptr, rows)
        assert np.array_equal(pos, expected) and np.array_equal(got_lengths, lens)


@pytest.mark.parametrize("all_seen", [True, False])
def test_nb_weights_equal_the_expression_to_the_bit(all_seen: bool) -> None:
    rng = np.random.default_rng(4)
    counts = (rng.integers(0, 6, (2, 5000)) * (rng.random((2, 5000)) < 0.6)).astype(np.float64)
    if all_seen:
        counts[1, counts.sum(axis=0) == 0] = 1.0
    for alpha in (0.1, 1.0):
        known = counts[0] + counts[1] > 0
        seen, vocab = np.flatnonzero(known), int(known.sum())
        n_low, n_high = counts[0].sum(), counts[1].sum()
        expected = np.zeros(counts.shape[1])
        cl, ch = counts[0, seen], counts[1, seen]
        expected[seen] = np.log((ch + alpha) / (n_high + alpha * vocab)) - np.log(
            (cl + alpha) / (n_low + alpha * vocab)
        )
        log_ratio, got_known = nb_weights(counts, alpha)
        assert np.array_equal(log_ratio, expected)
        assert np.array_equal(got_known, known.astype(np.float64))


def test_the_learner_stores_about_two_bytes_an_occurrence_and_saves_int32_ids(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    arrays = [np.sort(rng.integers(0, 2**20, int(k))).astype(np.int32) for k in rng.integers(1, 80, 500)]
    rel = rng.random(500)
    app = Apprentice(n_features=2**20, binning="equal-prob", min_instances=10)
    app.add(arrays[:250], rel[:250])
    app.fit()
    app.add(arrays[250:], rel[250:])
    occurrences = sum(len(a) for a in arrays)
    instances = app._instances
    stored = instances.low.nbytes + instances.wide_at.nbytes + instances.wide_high.nbytes
    assert stored < 2 * 2.5 * occurrences  # geometric growth; an int32 buffer took 4 bytes an id, then 3
    bundle = app.to_bundle()
    assert bundle["stats"]["ids"].dtype == np.int32
    assert np.array_equal(bundle["stats"]["ids"], np.concatenate(arrays))
    app.save(tmp_path / "learner.npz")
    back = Apprentice.load(tmp_path / "learner.npz")
    assert np.array_equal(back.to_bundle()["stats"]["ids"], np.concatenate(arrays))
    assert back.fit().predict(arrays[:50]).tolist() == app.fit().predict(arrays[:50]).tolist()


@pytest.mark.parametrize("binning", ["fixed", "equal-prob"])
def test_a_bounded_learner_is_the_learner_of_the_instances_it_kept(binning: str) -> None:
    rng = np.random.default_rng(3)
    arrays = [rng.integers(0, 2**16, int(k)).astype(np.int32) for k in rng.integers(1, 40, 700)]
    rel = rng.random(700)
    app = Apprentice(n_features=2**16, binning=binning, min_instances=10, max_instances=200)
    for start in range(0, 700, 50):  # fits between the adds move the equal-prob threshold, as in a crawl
        app.add(arrays[start : start + 50], rel[start : start + 50])
        assert app.n_instances <= 200
        app.fit()
    kept = app.n_instances
    assert app.dropped == 700 - kept and kept >= 180
    fresh = Apprentice(n_features=2**16, binning=binning, min_instances=10)
    fresh.add(arrays[-kept:], rel[-kept:])
    a, b = app.fit(), fresh.fit()
    assert a.threshold == b.threshold and a.n_instances == b.n_instances
    # the same counts per feature, and only the kept instances' features have a slot (the slots' order may
    # differ: the bounded learner saw the dropped instances' features first)
    seen = {int(f): tuple(app._features.counts[:, s]) for s, f in enumerate(app._features.slot_ids[: app._features.n])}
    fresh_seen = {
        int(f): tuple(fresh._features.counts[:, s]) for s, f in enumerate(fresh._features.slot_ids[: fresh._features.n])
    }
    assert seen == fresh_seen
    assert np.array_equal(app.to_bundle()["stats"]["ids"], np.concatenate(arrays[-kept:]))
    assert np.allclose(a.predict(arrays), b.predict(arrays), rtol=0, atol=1e-12)


def test_the_bound_is_zero_or_at_least_the_minimum_of_instances() -> None:
    with pytest.raises(ValueError, match="at least 10"):
        Apprentice(min_instances=10, max_instances=9)
    with pytest.raises(ValueError, match="at least 1"):
        Apprentice(min_instances=0, max_instances=-1)
    assert Apprentice(min_instances=10, max_instances=0).max_instances == 0
