"""What the crawl process holds per fetched page and at its close (issue 30's memory goal): a link waiting for its
target keeps its own ids, not its page's array of all links' ids; a batch completed while the engine closes trains
no model nobody would use (unless JOBDIR saves it)."""

import gc
import json
import weakref
from types import SimpleNamespace

import numpy as np
import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

from focused.extensions.apprentice.base import RelevanceFeedback
from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.linkids import RaggedIds
from focused.learning.apprentice.online import OnlineApprentice
from focused.learning.apprentice.payload import LinkPayload, split_tagged
from focused.signals import LabelledPage


def _page_payloads() -> tuple[list[LinkPayload], weakref.ref]:
    """Three links' payloads as a page's are made: views of one flat id array (RaggedIds)."""
    flat = np.arange(3000, dtype=np.int32)
    ragged = RaggedIds(flat, np.array([0, 1000, 2000, 3000]))
    side = np.zeros((3, 2), dtype=np.float32)
    return [LinkPayload(ids, side[i]) for i, ids in enumerate(ragged)], weakref.ref(flat)


def test_a_waiting_link_does_not_keep_its_pages_array_of_ids():
    online = OnlineApprentice(Apprentice(n_side=2), snippet_critic=lambda texts, urls: np.zeros(len(texts)))
    payloads, flat = _page_payloads()
    expected = [p.ids.copy() for p in payloads]
    online.observe_links(["http://a.test/1", "http://a.test/2", "http://a.test/3"], payloads)
    del payloads
    gc.collect()
    assert flat() is None  # only the waiting links' own ids are kept
    waiting = [p.ids for key in sorted(online._pending) for p in split_tagged(online._pending[key])]
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(waiting, expected, strict=True))


def test_the_waiting_links_are_nothing_for_the_garbage_collector_to_walk():
    """A long crawl's waiting links (on the live web up to ``FOCUSED_APPRENTICE_MAX_PENDING``) were an object each,
    which every full collection walked on the reactor thread; as bytes they are not tracked at all."""
    online = OnlineApprentice(Apprentice(n_side=2), snippet_critic=lambda texts, urls: np.zeros(len(texts)))
    for page in range(50):
        payloads, _ = _page_payloads()
        online.observe_links([f"http://a.test/{page}/{n}" for n in range(3)], payloads)
    gc.collect()
    assert online.pending_links == 150
    assert not gc.is_tracked(online._pending)  # a dict of only untracked keys and values
    online.observe_page(["http://a.test/7/1"], 1.0)
    assert online.pending_links == 149
    restored = OnlineApprentice(Apprentice(n_side=2), snippet_critic=lambda texts, urls: np.zeros(len(texts)))
    restored.restore_arrays(online.state_arrays())  # a checkpoint keeps them link by link, as before
    assert restored.pending_links == 149 and restored._pending == online._pending


def test_a_checkpoint_of_waiting_links_is_read_back_per_target_and_checked():
    online = OnlineApprentice(Apprentice(n_side=2), snippet_critic=lambda texts, urls: np.zeros(len(texts)))
    for _ in range(4):  # three targets, each linked from every page: four payloads a target
        online.observe_links([f"http://a.test/{n}" for n in range(3)], _page_payloads()[0])
    arrays = online.state_arrays()
    assert list(arrays["pending_counts"]) == [4, 4, 4] and len(arrays["pending_lengths"]) == 12
    restored = OnlineApprentice(Apprentice(n_side=2), snippet_critic=lambda texts, urls: np.zeros(len(texts)))
    restored.restore_arrays(arrays)
    assert restored.pending_links == 12 and restored._pending == online._pending
    for name, damaged in [
        ("pending_lengths", arrays["pending_lengths"] + np.array([4, -4] + [0] * 10)),  # a header disagrees
        ("pending_data", arrays["pending_data"][:-1]),  # the last payload cut short
        ("pending_counts", np.array([4, 4, 5])),  # more links than payloads
        ("pending_counts", np.array([-4, 8, 8])),  # the right sum with a negative count
    ]:
        fresh = OnlineApprentice(Apprentice(n_side=2), snippet_critic=lambda texts, urls: np.zeros(len(texts)))
        try:
            fresh.restore_arrays({**arrays, name: damaged})
        except ValueError:
            continue
        raise AssertionError(f"damaged {name} was read back")


def _crawl_like_payloads(rng: np.random.Generator, n: int) -> list[LinkPayload]:
    """Links as the crawler makes them: ~140 sorted ids of the 2**20 feature space (gaps of a few thousand)."""
    rows = [np.unique(rng.integers(0, 2**20, int(rng.integers(100, 180)))).astype(np.int32) for _ in range(n)]
    return [LinkPayload(ids, rng.normal(size=2).astype(np.float32)) for ids in rows]


def test_waiting_links_take_half_their_int32_bytes_and_come_back_the_same():
    rng = np.random.default_rng(0)
    payloads = _crawl_like_payloads(rng, 40)
    wide = LinkPayload(np.array([5, 200_000, 900_000], dtype=np.int32), np.ones(2, dtype=np.float32))
    unsorted = LinkPayload(np.array([9, 3, 7], dtype=np.int32), np.zeros(2, dtype=np.float32))
    payloads += [wide, unsorted]  # kept as they are: a gap too wide for 2 bytes, ids out of order
    online = OnlineApprentice(Apprentice(n_side=2), snippet_critic=lambda texts, urls: np.zeros(len(texts)))
    online.observe_links([f"http://a.test/{i}" for i in range(len(payloads))], payloads)
    held = sum(len(joined) for joined in online._pending.values())
    plain = sum(len(p.to_bytes()) for p in payloads)
    assert held < 0.55 * plain
    restored = OnlineApprentice(Apprentice(n_side=2), snippet_critic=lambda texts, urls: np.zeros(len(texts)))
    restored.restore_arrays(online.state_arrays())
    for i in range(len(payloads)):
        restored.observe_page([f"http://a.test/{i}"], 0.25)
    batch, _ = restored.take_batch()
    assert len(batch) == len(payloads)
    for got, want in zip(batch, payloads, strict=True):
        assert got.ids.dtype == np.int32 and np.array_equal(got.ids, want.ids)
        assert np.array_equal(got.side, want.side)


def test_a_checkpoint_of_an_earlier_focused_is_read_back():
    """Format 1 (no ``pending_format`` in the header): each pending link as :meth:`LinkPayload.to_bytes`."""
    rng = np.random.default_rng(1)
    payloads = _crawl_like_payloads(rng, 6)
    online = OnlineApprentice(Apprentice(n_side=2), snippet_critic=lambda texts, urls: np.zeros(len(texts)))
    online.observe_links([f"http://a.test/{i % 3}" for i in range(6)], payloads)
    arrays = online.state_arrays()
    header = json.loads(bytes(arrays["header"]).decode())
    del header["pending_format"]
    old = [p.to_bytes() for p in (payloads[0], payloads[3], payloads[1], payloads[4], payloads[2], payloads[5])]
    earlier = {
        **arrays,
        "header": np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
        "pending_data": np.frombuffer(b"".join(old), dtype=np.uint8),
        "pending_lengths": np.array([len(b) for b in old], dtype=np.int64),
    }
    restored = OnlineApprentice(Apprentice(n_side=2), snippet_critic=lambda texts, urls: np.zeros(len(texts)))
    restored.restore_arrays(earlier)
    assert restored.pending_links == 6
    for n in range(3):
        restored.observe_page([f"http://a.test/{n}"], 1.0)
    batch, _ = restored.take_batch()
    assert [p.ids.tolist() for p in batch] == [payloads[i].ids.tolist() for i in (0, 3, 1, 4, 2, 5)]
    header["pending_format"] = 3  # a later focused's: refused, not misread
    with pytest.raises(ValueError, match="format 3"):
        restored.restore_arrays({**arrays, "header": np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)})


def test_the_waiting_links_become_the_same_instances():
    online = OnlineApprentice(Apprentice(n_side=2), snippet_critic=lambda texts, urls: np.zeros(len(texts)))
    payloads, _ = _page_payloads()
    expected = [p.ids.copy() for p in payloads]
    online.observe_links(["http://a.test/1", "http://a.test/2", "http://a.test/3"], payloads)
    for n in (1, 2, 3):
        online.observe_page([f"http://a.test/{n}"], 0.5)
    batch, relevances = online.take_batch()
    assert [p.ids.tolist() for p in batch] == [e.tolist() for e in expected]
    assert relevances.tolist() == [0.5, 0.5, 0.5]


def _feedback(jobdir: str | None, closing: bool) -> tuple[RelevanceFeedback, list[str]]:
    settings = {"JOBDIR": jobdir} if jobdir else {}
    crawler = get_crawler(Spider, settings_dict=settings)
    crawler.engine = SimpleNamespace(_slot=SimpleNamespace(closing=Deferred() if closing else None))
    online = OnlineApprentice(Apprentice(min_instances=1), batch_size=1)
    feedback = RelevanceFeedback(crawler, SimpleNamespace(online=online))
    trained: list[str] = []
    feedback._train_batch = lambda: trained.append("batch") or Deferred()  # type: ignore[method-assign]
    return feedback, trained


def _label(feedback: RelevanceFeedback) -> None:
    feedback.page_labelled(LabelledPage("http://a.test/1", 1, 0.5, "x", True))


def test_a_batch_completed_while_the_crawl_runs_is_trained():
    feedback, trained = _feedback(None, closing=False)
    _label(feedback)
    assert trained == ["batch"]


def test_a_batch_completed_while_the_engine_closes_is_not_trained():
    feedback, trained = _feedback(None, closing=True)
    _label(feedback)
    assert trained == []


def test_with_jobdir_it_is_trained_and_saved_as_before(tmp_path):
    feedback, trained = _feedback(str(tmp_path), closing=True)
    _label(feedback)
    assert trained == ["batch"]


def test_scrapys_engine_has_the_closing_it_is_read_from():
    import inspect

    from scrapy.core.engine import ExecutionEngine, _Slot

    assert "self.closing" in inspect.getsource(_Slot.__init__)
    assert "self._slot" in inspect.getsource(ExecutionEngine.__init__)
