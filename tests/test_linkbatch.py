"""Re-scoring from a LinkBatch (the frontier's link payloads as flat arrays) equals re-scoring payload by payload."""

import numpy as np
import pytest
import scipy.sparse as sp

from focused.frontier import payloads
from focused.frontier.payloads import decode_framed_link_batch, decode_link_batch, decode_payload, encode_payload
from focused.frontier.store import frame
from focused.learning.apprentice import countmatrix
from focused.learning.apprentice.countmatrix import csr_from_flat, from_compact, product_matrix
from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.linkbatch import LinkBatch
from focused.learning.apprentice.online import OnlineApprentice
from focused.learning.apprentice.payload import LinkPayload


def _payload(rng: np.random.Generator, n: int, sparse: bool = False) -> LinkPayload:
    high = 2**20 if sparse else 4096  # ids spread over 2^20: gaps too wide for the compact kind
    ids = np.sort(rng.integers(0, high, size=n)).astype(np.int32)
    return LinkPayload(ids, rng.normal(size=2).astype(np.float32))


def _entries(seed: int = 0) -> list[list[LinkPayload]]:
    rng = np.random.default_rng(seed)
    entries: list[list[LinkPayload]] = [[]]  # a URL without payloads (a seed) first
    for i in range(60):
        entries.append([_payload(rng, int(rng.integers(0, 40)), sparse=rng.random() < 0.3) for _ in range(i % 5)])
    entries.append([LinkPayload(np.array([5, 5, 5, 9], np.int32), np.array([0.1, -2.0], np.float32))])  # repeats
    return entries


def _blobs(entries: list[list[LinkPayload]]) -> list[list[bytes]]:
    return [[encode_payload(p) for p in entry] for entry in entries]


def test_both_stored_kinds_decode_to_the_same_ids_and_views_joined_or_framed():
    entries = _entries()
    entries.append([LinkPayload(np.array([0, 0xFFFF, 2 * 0xFFFF, 2**20 - 1, 2**31 - 1], np.int32), np.ones(2, "f4"))])
    entries.append([LinkPayload(np.array([7, 3], np.int32), np.zeros(2, np.float32))])  # not sorted: plain
    blobs = _blobs(entries)
    assert {b[:1] for entry in blobs for b in entry} == {b"D", b"L"}  # both kinds are in the batch
    batch = decode_link_batch(blobs)
    assert batch is not None and len(batch) == len(entries)
    framed, damaged = decode_framed_link_batch([frame(entry) for entry in blobs])
    assert framed is not None and not damaged.any()
    for i, entry in enumerate(entries):
        for got in (batch[i], framed[i], [decode_payload(b) for b in blobs[i]]):
            assert [p.ids.tolist() for p in got] == [p.ids.tolist() for p in entry]
            assert [p.side.tolist() for p in got] == [p.side.tolist() for p in entry]


def test_damaged_frames_leave_their_entry_out_of_a_framed_batch():
    blob = encode_payload(LinkPayload(np.array([3, 9, 70_000], np.int32), np.zeros(2, np.float32)))
    frames = [frame([blob]), frame([blob])[:-1], b"", frame([blob, blob]), frame([blob])[:3]]
    batch, damaged = decode_framed_link_batch(frames)
    assert damaged.tolist() == [False, True, False, False, True]
    assert batch is not None and batch.entry_sizes.tolist() == [1, 0, 0, 2, 0]
    assert [p.ids.tolist() for p in batch[3]] == [[3, 9, 70_000]] * 2
    assert decode_framed_link_batch([frame([encode_payload({"a": 1})])])[0] is None  # not a link payload
    with pytest.raises(ValueError):
        decode_framed_link_batch([frame([blob[:-1]])])  # a damaged payload in a sound frame


def test_ids_cut_out_of_the_joined_frames_are_those_of_one_slice_each():
    rng = np.random.default_rng(3)
    # only compact payloads (most of the crawler's own): every payload's gaps cut out of the joined frames at once
    entries = [[_payload(rng, int(rng.integers(0, 50))) for _ in range(int(rng.integers(0, 6)))] for _ in range(200)]
    entries.append([LinkPayload(np.array([0, 0, 65_535, 65_535 * 2], np.int32), np.ones(2, np.float32))])
    blobs = _blobs(entries)
    assert {b[:1] for entry in blobs for b in entry} == {b"D"}
    batch, damaged = decode_framed_link_batch([frame(entry) for entry in blobs])
    assert batch is not None and not damaged.any()
    for i, entry in enumerate(entries):
        assert [p.ids.tolist() for p in batch[i]] == [p.ids.tolist() for p in entry]
        assert [p.side.tolist() for p in batch[i]] == [p.side.tolist() for p in entry]
    # sections read from the whole buffer equal one slice each, whatever their alignment and spacing
    for unit in (1, 2, 4):
        for _ in range(20):
            sizes = unit * rng.integers(0, 40, size=int(rng.integers(1, 60)))
            holes = unit * rng.integers(0, 12, size=sizes.size)
            starts = np.cumsum(holes) + np.concatenate(([0], np.cumsum(sizes)[:-1]))
            buf = rng.integers(0, 256, size=int(starts[-1] + sizes[-1] + rng.integers(0, 5)), dtype=np.uint8).tobytes()
            sliced = b"".join(buf[a : a + n] for a, n in zip(starts.tolist(), sizes.tolist(), strict=True))
            assert payloads._sections(buf, starts, sizes, "u1").tobytes() == sliced
    assert payloads._sections(b"abc", np.zeros(0, np.int64), np.zeros(0, np.int64), "<u2").size == 0


def test_other_payloads_are_left_to_the_one_by_one_decoder_and_damage_is_refused():
    rng = np.random.default_rng(1)
    link = encode_payload(_payload(rng, 10))
    assert decode_link_batch([[link], [encode_payload({"a": 1})]]) is None
    assert decode_link_batch([[link], [encode_payload(LinkPayload(np.array([1, 2], np.int32)))]]) is None  # no views
    assert decode_link_batch([[link, encode_payload(LinkPayload(np.array([3, 1], np.int32), np.zeros(2, np.float32)))]])
    with pytest.raises(ValueError):
        decode_link_batch([[link[:-1]]])
    empty = decode_link_batch([[], []])
    assert empty is not None and len(empty) == 2 and empty.n_links == 0


def test_sorted_rows_build_the_same_matrix_as_scipy_sorting_them(monkeypatch):
    monkeypatch.setattr(countmatrix, "RUNS_MIN_IDS", 2)  # the runs on small rows too
    rng = np.random.default_rng(2)
    for _ in range(300):
        n_features = int(rng.integers(1, 30))
        rows = [np.sort(rng.integers(0, n_features, size=int(rng.integers(0, 6)))).astype(np.int32) for _ in range(5)]
        if rng.random() < 0.3:
            rows[0] = rows[0][::-1].copy()  # unsorted: SciPy's path
        lengths = np.array([len(r) for r in rows])
        got = csr_from_flat(lengths, np.concatenate(rows), n_features)
        want = sp.csr_matrix(
            (np.ones(lengths.sum()), np.concatenate(rows), np.concatenate([[0], np.cumsum(lengths)])),
            shape=(5, n_features),
        )
        want.sum_duplicates()
        assert (got.indptr.tolist(), got.indices.tolist(), got.data.tolist()) == (
            want.indptr.tolist(),
            want.indices.tolist(),
            want.data.tolist(),
        )
        assert (from_compact(rows, n_features) != want).nnz == 0
    with pytest.raises(ValueError):
        csr_from_flat(np.array([1]), np.array([30], np.int32), 30)


@pytest.mark.parametrize("rows", ["rising", "repeats", "unsorted"])
def test_the_product_matrix_gives_the_canonical_matrixs_products_to_the_last_bit(rows, monkeypatch):
    monkeypatch.setattr(countmatrix, "RUNS_MIN_IDS", 2)
    rng = np.random.default_rng(8)
    high = {"rising": 2**20, "repeats": 40, "unsorted": 2**20}[rows]  # 60 ids of 40 values: many runs
    ids = [np.sort(rng.choice(high, size=int(n), replace=rows == "repeats")) for n in rng.integers(0, 60, 300)]
    if rows == "unsorted":
        ids[3] = ids[3][::-1].copy()
    lengths = np.array([len(r) for r in ids])
    flat = np.concatenate(ids).astype(np.int32)
    canonical, product = csr_from_flat(lengths, flat, 2**20), product_matrix(lengths, flat, 2**20)
    weights = rng.normal(size=2**20) * 10.0 ** rng.integers(-8, 8, 2**20)  # magnitudes that round differently
    assert (product @ weights).tobytes() == (canonical @ weights).tobytes()
    assert (product != canonical).nnz == 0  # the same counts, the repeats' zeros aside
    learner = Apprentice(n_features=2**20, min_instances=1, binning="equal-prob")
    learner.add(ids[:200], rng.random(200))
    model = learner.fit()
    assert model.predict(product).tobytes() == model.predict(canonical).tobytes()
    assert model.log_odds(product).tobytes() == model.log_odds(canonical).tobytes()


@pytest.mark.parametrize("aggregation", ["max", "mean", "first"])
@pytest.mark.parametrize("runs_from", [2, 10**9])
def test_rescoring_a_batch_gives_the_priorities_of_rescoring_payload_by_payload(aggregation, runs_from, monkeypatch):
    monkeypatch.setattr(countmatrix, "RUNS_MIN_IDS", runs_from)
    rng = np.random.default_rng(4)
    train = [_payload(rng, int(rng.integers(1, 40))) for _ in range(400)]
    learner = Apprentice(min_instances=1, binning="equal-prob", n_side=2)
    learner.add([p.ids for p in train], rng.random(400), np.stack([p.side for p in train]))
    online = OnlineApprentice(
        learner, snippet_critic=lambda texts, _urls: np.full(len(texts), 0.5), aggregation=aggregation
    )
    entries = _entries(5)
    batch = decode_link_batch(_blobs(entries))
    assert isinstance(batch, LinkBatch)
    assert online.rescore(batch) == online.rescore(entries) == [None] * len(entries)  # no model yet
    online.install(learner.fit())
    want = online.rescore(entries)
    assert online.rescore(batch) == want
    assert want[0] is None and all(p is not None for p, e in zip(want, entries, strict=True) if e)
    assert len(set(want) - {None}) > 10  # the priorities differ: the comparison means something


def test_a_pages_payloads_encoded_together_are_the_bytes_encoded_one_by_one():
    import gc

    from focused.frontier.payloads import encode_payloads

    rng = np.random.default_rng(6)
    sizes, sparse = rng.integers(0, 30, 40), rng.random(40) < 0.3
    payloads = [_payload(rng, int(n), sparse=bool(s)) for n, s in zip(sizes, sparse, strict=True)]
    payloads += [
        LinkPayload(np.array([9, 3], np.int32), np.zeros(2, np.float32)),  # unsorted: the plain kind
        LinkPayload(np.zeros(0, np.int32), np.ones(2, np.float32)),
        {"json": [1, 2]},
    ]
    together = encode_payloads(payloads)
    assert together == [encode_payload(p) for p in payloads]
    assert {b[:1] for b in together} == {b"D", b"L", b"J"}
    assert all(type(b) is bytes and not gc.is_tracked(b) for b in together)  # nothing for the collector to walk
    mixed = [LinkPayload(np.array([1], np.int32)), LinkPayload(np.array([2], np.int32), np.zeros(2, np.float32))]
    assert encode_payloads(mixed) == [encode_payload(p) for p in mixed]
    assert encode_payloads([]) == []


def test_a_batch_decodes_unsorted_ids_large_ids_and_empty_payloads_exactly():
    # one running sum modulo 2**32 restarted at each payload: ids near 2**31, unsorted ids (negative gaps)
    # and payloads without ids between others must all come back as stored
    rng = np.random.default_rng(7)
    side = np.array([0.5, -1.0], np.float32)
    odd = [
        LinkPayload(np.array([2**31 - 1, 2**31 - 1], np.int32), side),
        LinkPayload(np.array([], np.int32), side),
        LinkPayload(np.array([900, 3, 2**30, 0], np.int32), side),  # unsorted: the plain kind
        LinkPayload(np.array([0, 0, 65_535, 65_535 * 2], np.int32), side),  # widest gaps of the compact kind
    ]
    entries = [[*odd[:2]], [], [odd[2], _payload(rng, 30)], [odd[3], _payload(rng, 5, sparse=True), odd[1]]]
    blobs = _blobs(entries)
    batch = decode_link_batch(blobs)
    assert batch is not None
    for i, entry in enumerate(entries):
        got = batch[i]
        assert [p.ids.tolist() for p in got] == [p.ids.tolist() for p in entry]
        assert [p.side.tolist() for p in got] == [p.side.tolist() for p in entry]


@pytest.mark.parametrize(("chunk", "max_bytes"), [(7, 1 << 20), (10_000, 900)])
def test_the_memory_stores_rescore_scores_its_framed_payloads_in_chunks_to_the_last_bit(monkeypatch, chunk, max_bytes):
    """The memory store keeps each payload framed, its re-score reads them as the durable stores' framed blobs,
    and the decoder scores them RESCORE_CHUNK waiting URLs or RESCORE_BYTES of payloads at a time: the link
    scores are the bytes of scoring the whole frontier's payloads in one batch, and so are the priorities."""
    from focused.frontier import rescore as rescore_module
    from focused.frontier.memory import MemoryStore
    from focused.frontier.rescore import DecodingRescorer
    from focused.frontier.store import Framed, Push

    monkeypatch.setattr(countmatrix, "RUNS_MIN_IDS", 2)
    monkeypatch.setattr(rescore_module, "RESCORE_CHUNK", chunk)
    monkeypatch.setattr(rescore_module, "RESCORE_BYTES", max_bytes)
    rng = np.random.default_rng(9)
    train = [_payload(rng, int(rng.integers(1, 40))) for _ in range(400)]
    learner = Apprentice(min_instances=1, binning="equal-prob", n_side=2)
    learner.add([p.ids for p in train], rng.random(400), np.stack([p.side for p in train]))
    online = OnlineApprentice(learner, snippet_critic=lambda texts, _urls: np.full(len(texts), 0.5))
    online.install(learner.fit())
    entries = _entries(3)
    store = MemoryStore()
    for i, entry in enumerate(entries):
        for payload in entry or [None]:
            store.push_many([Push(f"u{i}", i, 1, None if payload is None else encode_payload(payload))])
    job = store.rescore_start()
    [(ids, payloads)] = list(job.read())
    assert isinstance(payloads, Framed) and len(ids) == len(entries)
    batches: list[LinkBatch] = []

    def scorer(batch):
        batches.append(batch)
        return online.rescore(batch)

    got = DecodingRescorer(scorer)(payloads)
    sizes = [len(b) for b in batches]
    assert sum(sizes) == len(entries) and max(sizes) <= chunk and len(batches) >= -(-len(entries) // chunk)
    if max_bytes < 1 << 20:  # cut by bytes: a piece over the bound is one entry
        blobs = payloads.blobs
        start = 0
        for n in sizes:
            assert n == 1 or sum(map(len, blobs[start : start + n])) <= max_bytes
            start += n
        assert len(batches) > 2
    whole = decode_link_batch(_blobs(entries))
    assert whole is not None
    assert got == online.rescore(whole) == online.rescore(entries)
    assert len(set(got) - {None}) > 10  # the priorities differ: the comparison means something
    parts = [online._link_scores(b) for b in batches]
    chunked = np.concatenate([p[0] for p in parts if p is not None])
    whole_scores = online._link_scores(whole)
    assert whole_scores is not None and chunked.tobytes() == whole_scores[0].tobytes()
    job.close()
