"""Page analysis in a worker process, on the second core, while the crawl process does the I/O.

Reading a page is pure CPU work that needs no Scrapy: one parse (leaves, links,
visible text), its outlinks as the spider takes them, the near-duplicate
fingerprint, the critic's verdict and the ⟨t, d⟩ ids of its links. With
``FOCUSED_ANALYSIS_WORKERS`` (default ``auto``: one worker on a machine of two or
more cores) the spider hands each page to a worker process (:class:`AnalysisPool`)
and awaits the result, so that the reactor goes on with
downloads and scheduling meanwhile; the components then find the results where
they would have computed them (the verdict in the runtime's memo, the
fingerprint in the response's meta, the link ids on the parsed page).

The worker gets the critic and the topic once, when it starts. Pages and
results go over the pool's pipe (pickled by multiprocessing) between the crawl and its own child process;
nothing of it is written anywhere or read from anywhere else. What happens when
a worker fails is :mod:`focused.analysis.client`'s business.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from focused import malloc
from focused.analysis.outlinks import take_links
from focused.learning.apprentice.linkids import page_link_ids
from focused.page.parse import parse_page
from focused.page.parsed import PageTooSlow, ParsedPage
from focused.page.simhash import simhash


@dataclass(frozen=True)
class AnalysisConfig:
    """What the worker needs besides the page: the critic and topic (None: the crawl process judges),
    whether to fingerprint, the link window of the apprentice (None: no link ids) and the link cap."""

    critic: Any = None
    topic: Any = None
    fingerprints: bool = True
    d_max: int | None = None
    n_features: int = 0
    max_links: int = 3000
    #: The crawl's URLLENGTH_LIMIT: longer links are dropped (0: no limit).
    max_url_length: int = 0
    #: Seconds a page may take (FOCUSED_PAGE_TIME_BUDGET); 0: no limit.
    time_budget: float = 0.0
    #: Fix glibc's mmap threshold in the worker (FOCUSED_MALLOC_TUNING, :mod:`focused.malloc`).
    malloc_tuning: bool = True


@dataclass
class Analysis:
    """One page read: its parse (with the link ids when asked), its outlinks, the ``<a href>`` left
    unread beyond the cap, its fingerprint (when asked) and the critic's verdict (when asked)."""

    parsed: ParsedPage
    links: list[str]
    over: int
    fingerprinted: bool = False
    fingerprint: int | None = None
    verdict: Any = None
    #: The page took longer than the time budget: skipped, nothing else is set.
    too_slow: bool = False


def analyze_page(
    config: AnalysisConfig, html: str, url: str, encoding: str, follow: bool, deadline: float | None = None
) -> Analysis:
    """Everything :class:`AnalysisConfig` asks of one page, as the crawl process would compute it.

    ``deadline`` (a :func:`time.monotonic` time) bounds the parse (:func:`~focused.page.parse.parse_page`).
    """
    parsed = parse_page(html, deadline)
    links, over = take_links(parsed, url, encoding, config.max_links, config.max_url_length) if follow else ([], 0)
    result = Analysis(parsed, links, over)
    if config.fingerprints:
        result.fingerprinted = True
        result.fingerprint = simhash(parsed.text) if parsed.text else None
    if config.critic is not None:
        result.verdict = config.critic.judge(parsed.text, config.topic, url=url)
    if config.d_max is not None and links:
        key = (url, config.d_max, config.n_features)
        parsed.link_ids = (key, page_link_ids(parsed, *key))
    return result


#: How often a worker checks that the crawl process is still there.
PARENT_POLL_SECONDS = 0.5


def is_auto(setting: object) -> bool:
    return str(setting).strip().lower() == "auto"


def workers_for(setting: object) -> int:
    """``FOCUSED_ANALYSIS_WORKERS`` as a count: ``auto`` is one worker when this process may use two or
    more cores (the worker takes the second), else none."""
    if is_auto(setting):
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not Linux
            cores = os.cpu_count() or 1
        return 1 if cores >= 2 else 0
    return int(str(setting).strip())


_config = AnalysisConfig()  # the worker's, set when it starts


def _start_worker(config: AnalysisConfig, parent: int) -> None:
    global _config
    _config = config
    if config.malloc_tuning:
        # the critic has just been read from the crawl process's pickle (27 MB for the Wikipedia critic), whose
        # freeing raised glibc's mmap threshold that far: fixed again, and the pickle's memory given back. Fixed
        # at the scratch threshold, not glibc's 128 KiB: the worker reads one page at a time, and a page's
        # temporaries (the critic's gathered weight rows, the link ids' arrays) then reuse the heap's pages
        # instead of faulting in fresh mappings (docs/results.md, "CPU per page")
        malloc.tune(malloc.SCRATCH_THRESHOLD)
        malloc.trim()
    # Ctrl-C reaches the whole process group: the crawl process shuts down gracefully and still needs
    # its worker for the pages in flight; it stops the worker itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The time budget of a page: an alarm interrupts whatever reads it (pages are read in this main thread).
    signal.signal(signal.SIGALRM, _too_slow)
    # A crawl process killed outright (SIGKILL, OOM) cannot stop its worker, and the worker holds both
    # ends of its own queue, so it would wait for pages forever: it leaves when its parent is gone.
    # The crawl process's pid comes from it: a worker whose crawl was killed while the worker was still
    # starting has been handed to init already, and would otherwise watch init for ever.
    threading.Thread(target=_leave_with_parent, args=(parent,), name="focused-parent-watch", daemon=True).start()


def _leave_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(0)


def _ready() -> None:
    """Nothing: run once per worker to start it."""


def _too_slow(signum: int, frame: object) -> None:
    raise PageTooSlow("the page's time budget is spent")


def _analyze(html: str, url: str, encoding: str, follow: bool) -> Analysis:
    """One page, within the time budget: a page still being read when it is spent comes back ``too_slow``.

    The budget is a timer (``SIGALRM``) in this process, so that it stops any part of the reading that runs
    Python code (the streaming parser, the links, the critic), and a deadline the streaming parser checks.
    """
    budget = _config.time_budget
    if budget <= 0:
        return analyze_page(_config, html, url, encoding, follow)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, budget)
            return analyze_page(_config, html, url, encoding, follow, time.monotonic() + budget)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except PageTooSlow:
        return Analysis(ParsedPage(), [], 0, too_slow=True)


class AnalysisPool:
    """``workers`` processes that analyse pages.

    Spawned, not forked (the crawl process has threads), as children of the crawl process, which
    waits for them when it closes: their CPU time is the crawl's (``wait4`` of the crawl counts it).
    """

    def __init__(self, config: AnalysisConfig, workers: int = 1) -> None:
        self.config = config
        self.workers = workers
        self.restarts = 0
        self.ready: Future[None] = Future()
        #: pages the workers returned: a pool that breaks before the first could not start
        self.completed = 0
        self._executor = self._start()

    def _start(self) -> ProcessPoolExecutor:
        """A new pool; its workers start in a thread (:attr:`ready`): starting one blocks until the
        new interpreter has read the critic, a second or two the reactor must not wait."""
        context = multiprocessing.get_context("spawn")
        executor = ProcessPoolExecutor(
            self.workers, mp_context=context, initializer=_start_worker, initargs=(self.config, os.getpid())
        )
        ready: Future[None] = Future()

        def start() -> None:
            try:
                for started in [executor.submit(_ready) for _ in range(self.workers)]:
                    started.result()
            except BaseException as exc:  # whatever it was, the pool is unusable
                ready.set_exception(exc if isinstance(exc, BrokenProcessPool) else BrokenProcessPool(repr(exc)))
            else:
                ready.set_result(None)

        self.ready = ready
        threading.Thread(target=start, name="focused-analysis-start", daemon=True).start()
        return executor

    def submit(self, html: str, url: str, encoding: str, follow: bool) -> Future[Analysis]:
        """Queue a page (after :attr:`ready`, or the call waits for the workers to start)."""
        return self._executor.submit(_analyze, html, url, encoding, follow)

    def restart(self) -> None:
        """A new worker after one died (the pool is broken then: every pending page failed with it)."""
        self._executor.shutdown(wait=False, cancel_futures=True)
        self.restarts += 1
        self._executor = self._start()

    def close(self) -> None:
        """Stop the workers and wait for them (pages still queued are dropped: the crawl is over).

        Workers still starting (a crawl shorter than their start-up) are terminated rather than
        waited for: they have read no page, and would hold the crawl's exit a second or two."""
        if not self.ready.done():
            for process in list(getattr(self._executor, "_processes", {}).values()):
                process.terminate()
        self._executor.shutdown(wait=True, cancel_futures=True)
