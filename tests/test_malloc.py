"""glibc's allocator set for a long crawl (focused.malloc): applied in the crawl process and its page-analysis
worker, guarded where the C library is not glibc, and what it changes: large freed blocks go back to the kernel."""

import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from focused import malloc
from focused.extensions.malloc import MallocTuning

GLIBC = malloc.glibc() is not None
needs_glibc = pytest.mark.skipif(not GLIBC, reason="the C library is not glibc")

# Frees a 16 MB block (glibc's moving threshold rises to it), then allocates 200 blocks of 256 KB, each
# followed by a small block that stays, frees the large ones, and prints the MB still resident.
PROBE = textwrap.dedent(
    """
    import ctypes, sys
    from focused import malloc
    if sys.argv[1] == "tuned":
        assert malloc.tune()
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]

    def rss():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

    big = libc.malloc(16 << 20)
    libc.memset(big, 1, 16 << 20)
    libc.free(big)
    before = rss()
    blocks, pins = [], []
    for _ in range(200):
        block = libc.malloc(256 << 10)
        libc.memset(block, 1, 256 << 10)
        blocks.append(block)
        pins.append(libc.malloc(64))
    for block in blocks:
        libc.free(block)
    print(rss() - before)
    """
)


def _retained_mb(kind: str) -> float:
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}  # glibc's defaults, whatever the shell set
    out = subprocess.run([sys.executable, "-c", PROBE, kind], capture_output=True, text=True, check=True, env=env)
    return float(out.stdout)


@needs_glibc
def test_tuned_large_blocks_go_back_to_the_kernel_when_freed():
    tuned, untuned = _retained_mb("tuned"), _retained_mb("untuned")
    assert tuned < 10  # 50 MB were allocated and freed
    assert untuned > tuned + 30  # glibc's moving threshold kept them in the heap


@needs_glibc
def test_tune_and_trim_on_glibc():
    assert malloc.tune()
    assert isinstance(malloc.trim(), bool)


def test_nothing_is_done_where_the_c_library_is_not_glibc(monkeypatch):
    monkeypatch.setattr(malloc.sys, "platform", "darwin")
    malloc.glibc.cache_clear()
    try:
        assert malloc.glibc() is None
        assert malloc.tune() is False
        assert malloc.trim() is False
    finally:
        monkeypatch.undo()
        malloc.glibc.cache_clear()


def test_the_crawl_process_tunes_it_when_the_crawler_is_built():
    crawler = get_crawler(Spider)
    ext = MallocTuning.from_crawler(crawler)
    assert ext.tuned is GLIBC
    assert crawler.stats.get_value("focused/malloc/tuned") == int(GLIBC)


@needs_glibc
def test_the_start_ups_free_memory_goes_back_once_the_engine_starts(monkeypatch):
    """The models read at start (checked, then read again, a critic's training counts released) leave freed
    blocks in the heaps: trimmed once when the engine starts, not per page."""
    from scrapy import signals

    trims = []
    monkeypatch.setattr(malloc, "trim", lambda: trims.append(1) or True)
    crawler = get_crawler(Spider, settings_dict={"MEMUSAGE_ENABLED": False})
    ext = MallocTuning.from_crawler(crawler)  # kept: the signal holds its handler weakly, as the crawler's would
    assert ext.tuned and trims == []
    crawler.signals.send_catch_log(signals.engine_started)
    assert trims == [1]


@needs_glibc
def test_the_heaps_are_trimmed_every_so_many_responses_in_a_thread(monkeypatch):
    """A crawl's small objects come and go and leave whole free pages in the heaps: trimmed every
    ``TRIM_EVERY`` responses, off the reactor thread, never two trims at once."""
    import threading

    from scrapy import signals
    from twisted.internet.defer import Deferred

    from focused.extensions import malloc as extension

    where: list[str] = []
    monkeypatch.setattr(malloc, "trim", lambda: where.append(threading.current_thread().name) or True)
    pending: list[Deferred] = []

    def in_thread(f):  # Twisted's thread pool, held until the test lets it finish
        done: Deferred = Deferred()
        pending.append(done)
        worker = threading.Thread(target=f, name="pool")
        worker.start()
        worker.join()
        return done

    monkeypatch.setattr(extension, "deferToThread", in_thread)
    crawler = get_crawler(Spider, settings_dict={"MEMUSAGE_ENABLED": False})
    ext = MallocTuning.from_crawler(crawler)
    assert ext.tuned

    def respond(n: int) -> None:
        for _ in range(n):
            crawler.signals.send_catch_log(signals.response_received)

    respond(extension.TRIM_EVERY - 1)
    assert where == []
    respond(1)
    assert where == ["pool"] and crawler.stats.get_value("focused/malloc/trims") is None
    respond(extension.TRIM_EVERY)  # the first trim still running: none more
    assert where == ["pool"]
    pending.pop().callback(True)
    assert crawler.stats.get_value("focused/malloc/trims") == 1
    respond(extension.TRIM_EVERY)
    assert where == ["pool", "pool"]
    pending.pop().callback(True)
    assert crawler.stats.get_value("focused/malloc/trims") == 2


def test_false_leaves_the_allocator_alone():
    with pytest.raises(NotConfigured):
        MallocTuning.from_crawler(get_crawler(Spider, settings_dict={"FOCUSED_MALLOC_TUNING": False}))


def test_the_crawler_has_it_and_plain_scrapy_does_not():
    from focused import settings
    from focused.spiders.plain import PlainSpider

    assert "focused.extensions.malloc.MallocTuning" in settings.EXTENSIONS
    assert min(settings.EXTENSIONS.values()) == settings.EXTENSIONS["focused.extensions.malloc.MallocTuning"]
    assert "focused.extensions.malloc.MallocTuning" not in PlainSpider.custom_settings["EXTENSIONS"]


@pytest.mark.parametrize("tuning", [True, False])
def test_the_worker_tunes_and_trims_when_it_starts_unless_told_not_to(tuning):
    script = textwrap.dedent(
        f"""
        import os
        from focused import malloc
        calls = []
        malloc.tune = lambda *args: calls.append(f"tune {{args[0] == malloc.SCRATCH_THRESHOLD}}") or True
        malloc.trim = lambda: calls.append("trim") or True
        from focused.analysis.worker import AnalysisConfig, _start_worker
        _start_worker(AnalysisConfig(malloc_tuning={tuning}), os.getppid())
        print(",".join(calls))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    # at the scratch threshold: the worker's per-page temporaries reuse the heap's pages
    assert out.stdout.strip() == ("tune True,trim" if tuning else "")


@pytest.mark.parametrize("tuning", [True, False])
def test_the_spider_tells_the_worker(monkeypatch, tuning):
    import focused.analysis.client as client

    runtime = SimpleNamespace(strategy=None, critic=None, topic=None)
    monkeypatch.setattr(client.CrawlRuntime, "of", staticmethod(lambda crawler: runtime))
    crawler = get_crawler(Spider, settings_dict={"FOCUSED_MALLOC_TUNING": tuning})
    analysis = client.PageAnalysis(crawler, workers=1, max_links=10, start_after=1)  # no worker started yet
    assert analysis.config.malloc_tuning is tuning


def test_a_critic_of_large_arrays_can_go_to_the_worker_and_a_lambda_cannot():
    from focused.analysis.client import _portable

    large = np.arange(1 << 20, dtype=np.float64)  # 8 MB: protocol 5 hands it to the sink as a buffer
    assert _portable(SimpleNamespace(weights=large), "Science.Physics")
    assert not _portable(SimpleNamespace(scorer=lambda x: x), "Science.Physics")


# Writes a 1 MiB NumPy array and frees it 40 times, outside a scratch scope and then inside one, and prints
# this thread's minor page faults for each, then the MB resident freed by the scope's close.
SCRATCH_PROBE = textwrap.dedent(
    """
    import resource
    import numpy as np
    from focused import malloc
    assert malloc.tune()

    def faults():
        return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt

    def rss():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

    def work():
        before = faults()
        for _ in range(40):
            a = np.ones(1 << 17)  # 1 MiB
            del a
        return faults() - before

    outside = work()
    with malloc.scratch():
        inside = work()
        pins = [np.ones(1 << 17) for _ in range(8)] + [bytearray(64)]  # 8 MiB free in the heap at the close
        del pins[:8]
        held = rss()
    print(outside, inside, held - rss())
    """
)


@needs_glibc
def test_inside_scratch_temporaries_reuse_heap_pages_and_the_close_gives_them_back():
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", SCRATCH_PROBE], capture_output=True, text=True, check=True, env=env)
    outside, inside, released = (float(x) for x in out.stdout.split())
    assert outside >= 40 * 200  # a fresh mapping each time: 256 pages faulted in
    assert inside < outside / 5  # the heap's pages again
    assert released > 6  # the heap's free pages went back when the scope closed


class _FakeLibc:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.calls.append(("trim",))
        return 1


@pytest.fixture
def fake_libc(monkeypatch):
    libc = _FakeLibc()
    monkeypatch.setattr(malloc, "glibc", lambda: libc)
    monkeypatch.setattr(malloc, "_scratch", malloc._Scratch())
    return libc


def test_scratch_scopes_of_several_threads_restore_the_threshold_once_when_the_last_closes(fake_libc):
    import threading

    assert malloc.tune()
    fake_libc.calls.clear()
    raise_ = ("mallopt", malloc.M_MMAP_THRESHOLD, malloc.SCRATCH_THRESHOLD)
    restore = ("mallopt", malloc.M_MMAP_THRESHOLD, malloc.MMAP_THRESHOLD)
    opened, release = threading.Event(), threading.Event()

    def other() -> None:
        with malloc.scratch():
            opened.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    with malloc.scratch():
        thread.start()
        assert opened.wait(5)
        assert fake_libc.calls == [raise_]  # raised once for both
    assert fake_libc.calls == [raise_]  # the other thread's scope is still open
    release.set()
    thread.join(5)
    assert fake_libc.calls == [raise_, restore, ("trim",)]
    with malloc.scratch():  # and again for the next
        pass
    assert fake_libc.calls[3:] == [raise_, restore, ("trim",)]


def test_scratch_changes_nothing_unless_the_allocator_was_tuned(fake_libc):
    with malloc.scratch():
        pass
    assert fake_libc.calls == []


def test_the_thresholds_tune_fixes(fake_libc):
    assert malloc.tune()
    assert fake_libc.calls == [
        ("mallopt", malloc.M_MMAP_THRESHOLD, malloc.MMAP_THRESHOLD),
        ("mallopt", malloc.M_TRIM_THRESHOLD, malloc.TRIM_THRESHOLD),
    ]


def test_a_fit_and_a_background_rescore_run_inside_scratch(monkeypatch):
    """The stretches of array work of a crawl: the apprentice's training (in its thread), a background re-score's
    reading and scoring (in its thread) and a re-score done at once."""
    from contextlib import contextmanager

    from focused.core import rescoring
    from focused.extensions.apprentice.base import RelevanceFeedback

    depth = [0]
    seen: list[tuple[str, int]] = []

    @contextmanager
    def scratch():
        depth[0] += 1
        try:
            yield
        finally:
            depth[0] -= 1

    monkeypatch.setattr(malloc, "scratch", scratch)
    feedback = SimpleNamespace(
        online=SimpleNamespace(train=lambda *a: seen.append(("train", depth[0]))), checkpoints=None
    )
    RelevanceFeedback._train_and_checkpoint(feedback, [], [])  # type: ignore[arg-type]
    job = SimpleNamespace(read=lambda: iter([([1], ["payload"])]))
    out = rescoring._read_and_score(job, lambda blobs: seen.append(("score", depth[0])) or [5])  # type: ignore[arg-type]
    assert out == [([1], [5])]
    # and a re-score done at once (the intelligent strategy's), on the scheduler's thread
    from tests.test_rescore_background import make_scheduler, request

    _, scheduler = make_scheduler({})
    scheduler.enqueue_request(request("a", 1, True))
    assert scheduler.rescore(lambda payloads: seen.append(("at once", depth[0])) or [7] * len(payloads)) == 1
    assert seen == [("train", 1), ("score", 1), ("at once", 1)]


# Re-scores 4,000 waiting URLs of 6 link payloads each (the re-score study's kind) inside a scratch scope, twice,
# with the default piece size and then with pieces 8 times as large, and prints this thread's minor page faults
# in each second pass.
RESCORE_PROBE = textwrap.dedent(
    """
    import resource
    import numpy as np
    from focused import malloc
    from focused.bench.studies.rescoring import synthetic_apprentice, synthetic_payloads
    from focused.frontier import rescore
    from focused.frontier.payloads import encode_payload
    from focused.frontier.store import Framed, frame
    assert malloc.tune()
    rng = np.random.default_rng(0)
    vocabulary = np.sort(rng.choice(2**20, size=200_000, replace=False))
    online = synthetic_apprentice(rng, vocabulary)
    payloads = [encode_payload(p) for p in synthetic_payloads(rng, vocabulary, 6 * 4000)]
    blobs = Framed([frame(payloads[i : i + 6]) for i in range(0, len(payloads), 6)])

    def faults(piece):
        rescore.RESCORE_BYTES = piece
        scorer = rescore.DecodingRescorer(online.rescore)
        with malloc.scratch():
            scorer(blobs)
            before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
            scorer(blobs)
            return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before

    default = rescore.RESCORE_BYTES
    print(faults(default), faults(8 * default))
    """
)


@needs_glibc
def test_a_rescores_pieces_are_small_enough_for_their_temporaries_to_reuse_the_heap():
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", RESCORE_PROBE], capture_output=True, text=True, check=True, env=env)
    default, larger = (int(x) for x in out.stdout.split())
    assert larger > 1000  # temporaries over the scratch threshold: fresh mappings, faulted in each pass
    assert default < larger / 10  # the default's come from the heap, whose pages the next piece reuses
