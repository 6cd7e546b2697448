"""Re-scoring a large synthetic frontier through the scheduler, on the memory and the SQLite store.

Part of ``focused bench-frontier`` (:mod:`focused.bench.studies.frontier_store`). The
frontier holds waiting URLs with realistic apprentice payloads
(:class:`~focused.learning.apprentice.payload.LinkPayload`: ~60 hashed int32 feature ids
and 2 float32 side features per parent link); a small apprentice is fitted on
synthetic links so that :meth:`OnlineApprentice.rescore` runs a real model.
Re-scoring goes through :meth:`FocusedScheduler.rescore` (the store's re-score job
run at once: its chunked read and bulk update, the payload decoding, the model), timed
end to end and split into store I/O (the job's own steps), decoding and model, with the
allocator set as a crawl sets it (:func:`focused.malloc.tune`: a re-score's temporaries
then cost what they cost in a crawl). Figures, never asserted.
"""

from __future__ import annotations

import gc
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from focused import malloc
from focused.core.scheduler import PAYLOAD_META_KEY, FocusedScheduler
from focused.frontier.settings import STORE_FILE
from focused.frontier.store import Payloads, RescoreJob
from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.online import OnlineApprentice
from focused.learning.apprentice.payload import LinkPayload

STORES = ("memory", "sqlite")


def synthetic_links(rng: np.random.Generator, vocabulary: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` links: 60 hashed feature ids each (Zipf-like over ``vocabulary``, int32, sorted within a link as the
    crawler's payloads are) and 2 side features (float32)."""
    ranks = np.minimum((rng.pareto(1.0, size=(n, 60)) * 50).astype(np.int64), len(vocabulary) - 1)
    return np.sort(vocabulary[ranks].astype(np.int32), axis=1), rng.normal(-1.0, 1.5, size=(n, 2)).astype(np.float32)


def synthetic_payloads(rng: np.random.Generator, vocabulary: np.ndarray, n: int) -> list[LinkPayload]:
    ids, side = synthetic_links(rng, vocabulary, n)
    return [LinkPayload(i, s) for i, s in zip(ids, side, strict=True)]


def synthetic_apprentice(rng: np.random.Generator, vocabulary: np.ndarray) -> OnlineApprentice:
    """An :class:`OnlineApprentice` with a fitted model, trained on 20,000 synthetic links.

    A link's relevance follows random weights of its features, so the model has something to learn.
    """
    weights = rng.normal(0, 1, len(vocabulary))
    ids, side = synthetic_links(rng, vocabulary, 20_000)
    score = weights[np.searchsorted(vocabulary, ids)].mean(axis=1) + rng.normal(0, 0.5, len(ids))
    learner = Apprentice(min_instances=1, binning="equal-prob", n_side=2)
    learner.add(list(ids), 1 / (1 + np.exp(-3 * score)), side)
    online = OnlineApprentice(learner, snippet_critic=lambda texts, _urls: np.full(len(texts), 0.5))
    online.install(learner.fit())
    return online


def _scheduler(jobdir: Path | None, settings: dict[str, Any] | None = None) -> FocusedScheduler:
    crawler = get_crawler(Spider, settings_dict={"JOBDIR": str(jobdir)} if jobdir else dict(settings or {}))
    crawler.spider = crawler._create_spider("bench")
    scheduler = FocusedScheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    return scheduler


class _TimedJob:
    """A store's re-score job that times its own steps (start, reads, applies, close: the store's I/O) in CPU
    time of this thread, so that the rest of a re-score is the scheduler's decoding and the model."""

    def __init__(self, start: Callable[[], RescoreJob]) -> None:
        self.store_io_s = 0.0
        started = time.thread_time()
        self.job = start()
        self.store_io_s += time.thread_time() - started

    def read(self) -> Iterator[tuple[Sequence[Any], Payloads]]:
        chunks = self.job.read()
        while True:
            started = time.thread_time()
            chunk = next(chunks, None)
            self.store_io_s += time.thread_time() - started
            if chunk is None:
                return
            yield chunk

    def apply(self, ids: Sequence[Any], priorities: Sequence[int | None]) -> int:
        started = time.thread_time()
        try:
            return self.job.apply(ids, priorities)
        finally:
            self.store_io_s += time.thread_time() - started

    def close(self) -> None:
        started = time.thread_time()
        self.job.close()
        self.store_io_s += time.thread_time() - started


def rescore_study(
    entries: int,
    workdir: Path,
    *,
    parents: int = 1,
    passes: int = 3,
    seed: int = 0,
    stores: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Push ``entries`` waiting URLs, each linked by ``parents`` pages, into each store and time them.

    The frontier is re-scored ``passes`` times, alternating two fitted models so
    that every pass changes the priorities; the median pass is reported.
    ``stores``: name -> the scheduler's settings of each store measured
    (default: memory and SQLite in a job directory under ``workdir``). Sets this process's allocator as a
    crawl's (:func:`focused.malloc.tune`), for good: with glibc's own, a re-score's temporaries stay in the
    heaps, and the study measured less than a crawl's re-scores take.
    """
    malloc.tune()
    rng = np.random.default_rng(seed)
    vocabulary = np.sort(rng.choice(2**20, size=200_000, replace=False))
    models = [synthetic_apprentice(rng, vocabulary) for _ in range(2)]
    for online in models:
        online.rescore([[p] for p in synthetic_payloads(rng, vocabulary, 1000)])  # warm-up

    def links() -> list[Request]:  # the same links for each store, kept by no one but the store
        rng = np.random.default_rng(seed + 1)
        payloads = synthetic_payloads(rng, vocabulary, entries * parents)
        priorities = rng.integers(0, 1_000_000, len(payloads)).tolist()
        return [
            Request(
                f"http://bench.test/wiki/Article_{i % entries}",
                priority=priority,
                headers={"Referer": f"http://bench.test/wiki/Page_{i}"},
                meta={PAYLOAD_META_KEY: p, "focused_parent": f"http://bench.test/wiki/Page_{i}", "depth": 3},
            )
            for i, (p, priority) in enumerate(zip(payloads, priorities, strict=True))
        ]

    out: dict[str, Any] = {"entries": entries, "parents": parents, "ids_per_link": 60, "passes": passes}
    for store, settings in (stores or {store: {} for store in STORES}).items():
        jobdir = workdir / "rescore-job" if store == "sqlite" else None
        if jobdir:
            shutil.rmtree(jobdir, ignore_errors=True)
        out[store] = _time_store(jobdir, links(), [models[i % 2] for i in range(passes)], settings)
    return out


def _rescore_pass(scheduler: FocusedScheduler, online: OnlineApprentice) -> dict[str, Any]:
    """One re-scoring of the whole frontier through the scheduler: wall time, and its CPU time (this thread's,
    which other processes on the machine do not inflate) split into store I/O, payload decoding and model."""
    model_s = 0.0

    def model(payloads: Sequence[Sequence[Any]]) -> list[int | None]:
        nonlocal model_s
        started = time.thread_time()
        new = online.rescore(payloads)
        model_s += time.thread_time() - started
        return new

    store = scheduler.store
    jobs: list[_TimedJob] = []
    start = store.rescore_start

    def timed_start() -> RescoreJob:
        jobs.append(_TimedJob(start))
        return jobs[-1]

    store.rescore_start = timed_start  # type: ignore[method-assign]
    try:
        started, cpu = time.perf_counter(), time.thread_time()
        changed = scheduler.rescore(model)
        store.commit()
        seconds, cpu = time.perf_counter() - started, time.thread_time() - cpu
    finally:
        del store.rescore_start  # the class's again
    store_io = sum(job.store_io_s for job in jobs)
    return {
        "rescore_s": round(seconds, 3),
        "cpu_s": round(cpu, 3),
        "store_io_s": round(store_io, 3),
        "decode_s": round(cpu - store_io - model_s, 3),
        "model_s": round(model_s, 3),
        "changed": changed,
    }


def _time_store(
    jobdir: Path | None, links: list[Request], models: list[OnlineApprentice], settings: dict[str, Any] | None = None
) -> dict[str, Any]:
    scheduler = _scheduler(jobdir, settings)
    # push and pop: CPU time of a local store (steady on a loaded machine), wall time with Redis (its round trips)
    clock = time.perf_counter if settings else time.thread_time
    started = clock()
    for request in links:
        scheduler.enqueue_request(request)
    scheduler.store.commit()
    push = clock() - started
    n_links = len(links)
    links.clear()  # as in a crawl, only the store holds the waiting requests
    gc.collect()
    waiting = len(scheduler)
    passes = [_rescore_pass(scheduler, online) for online in models]
    result: dict[str, Any] = {
        "waiting": waiting,
        "push_us_per_link": round(1e6 * push / n_links, 1),
        **sorted(passes, key=lambda p: p["cpu_s"])[len(passes) // 2],
        "rescore_passes_s": [p["rescore_s"] for p in passes],
    }
    if jobdir is not None:  # close (checkpoint), measure the file, reopen it as a resumed crawl does
        scheduler.close("finished")
        result["bytes_per_waiting_url"] = round((jobdir / STORE_FILE).stat().st_size / waiting)
        started = time.perf_counter()
        scheduler = _scheduler(jobdir)
        result["reopen_s"] = round(time.perf_counter() - started, 3)
    pops = min(20_000, waiting)
    started = clock()
    for _ in range(pops):
        scheduler.next_request()
    scheduler.next_request()  # acknowledges the last one
    scheduler.store.commit()
    result["pop_ack_us_per_url"] = round(1e6 * (clock() - started) / pops, 1)
    scheduler.close("finished")
    return result
