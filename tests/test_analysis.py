"""Pages read in a worker process (FOCUSED_ANALYSIS_WORKERS): the same readings, the same crawl, and
what happens when a worker fails."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from focused.analysis.client import PageAnalysis
from focused.analysis.outlinks import take_links
from focused.analysis.worker import Analysis, AnalysisConfig, AnalysisPool, analyze_page
from focused.bench.runner import CrawlSpec, run_crawl
from focused.crawldb import iter_pages
from focused.learning.apprentice.linkids import page_link_ids
from focused.learning.critic.load import load_critic
from focused.page.parse import parse_page
from focused.page.parsed import ParsedPage
from focused.page.simhash import simhash
from focused.replay.server import ReplayServer
from focused.spidermiddlewares.neardup import FINGERPRINT_META_KEY
from tests.sites import HOST, regions_site, train_critic

PAGES = [
    (
        "http://a.test/dir/page.html",
        "<html><head><title>Match report</title></head><body><h1>Results</h1>"
        "<p>the team won the match after a late goal and the league table changed again this week</p>"
        '<ul><li><a href="/s/1.html">item one</a></li><li><a href="s/2.html#x">item two</a></li>'
        '<li><a href="http://b.test/">elsewhere</a></li><li><a href="page.html">itself</a></li></ul>'
        "<p>more words about the players, the coach and the season that follows</p></body></html>",
    ),
    ("http://c.test/", "<p>no links at all, just a few words of text</p>"),
]


@pytest.fixture(scope="module")
def critic_path(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return train_critic(tmp_path_factory.mktemp("critic") / "critic.npz")


def test_the_worker_reads_a_page_as_the_crawl_process_does(critic_path: Any) -> None:
    critic = load_critic(critic_path)
    topic = critic.resolve_topic("sport")
    config = AnalysisConfig(critic=critic, topic=topic, d_max=3, n_features=2**12, max_links=2)
    for url, html in PAGES:
        got = analyze_page(config, html, url, "utf-8", True)
        parsed = parse_page(html)
        links, over = take_links(parsed, url, "utf-8", 2)
        assert (got.links, got.over) == (links, over)
        assert got.parsed.text == parsed.text and got.parsed.leaves == parsed.leaves
        assert got.parsed.links == parsed.links and got.parsed.title == parsed.title
        assert got.fingerprinted and got.fingerprint == (simhash(parsed.text) if parsed.text else None)
        assert got.verdict == critic.judge(parsed.text, topic, url=url)
        if links:
            want = page_link_ids(parsed, url, 3, 2**12)
            assert got.parsed.link_ids is not None and got.parsed.link_ids[0] == (url, 3, 2**12)
            urls, ids, anchors = page_link_ids(got.parsed, url, 3, 2**12)  # served from the worker's result
            assert urls == want[0] and anchors == want[2]
            assert all(np.array_equal(a, b) for a, b in zip(ids, want[1], strict=True))
    # what is not asked for is not computed
    bare = analyze_page(AnalysisConfig(fingerprints=False), PAGES[0][1], PAGES[0][0], "utf-8", False)
    assert bare.links == [] and not bare.fingerprinted and bare.verdict is None and bare.parsed.link_ids is None


def test_a_dead_worker_is_replaced(critic_path: Any) -> None:
    pool = AnalysisPool(AnalysisConfig(fingerprints=False))
    try:
        url, html = PAGES[0]
        pool.ready.result(timeout=60)
        assert pool.submit(html, url, "utf-8", True).result(timeout=60).links
        for pid in list(pool._executor._processes):  # type: ignore[attr-defined]
            os.kill(pid, signal.SIGKILL)
        with pytest.raises(BrokenProcessPool):
            pool.submit(html, url, "utf-8", True).result(timeout=60)
        pool.restart()
        assert pool.restarts == 1
        pool.ready.result(timeout=60)
        assert pool.submit(html, url, "utf-8", True).result(timeout=60).links
    finally:
        pool.close()


class _Pool:
    """A stand-in pool whose every page fails with ``error`` (a real one is tested above)."""

    def __init__(self, error: BaseException, completed: int) -> None:
        self.error, self.completed, self.restarts, self.closed = error, completed, 0, False
        self.ready: Future[None] = Future()
        self.ready.set_result(None)

    def submit(self, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_exception(self.error)
        return future

    def restart(self) -> None:
        self.restarts += 1

    def close(self) -> None:
        self.closed = True


class _Stats:
    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = self.values.get(key, 0) + count

    def set_value(self, key: str, value: int) -> None:
        self.values[key] = value


def _analysis(pool: _Pool, config: AnalysisConfig | None = None) -> PageAnalysis:
    analysis = PageAnalysis.__new__(PageAnalysis)
    analysis.crawler = SimpleNamespace(stats=_Stats())  # type: ignore[assignment]
    analysis.runtime = _Runtime()  # type: ignore[assignment]
    analysis.config = config or AnalysisConfig(fingerprints=False)
    analysis.pool = pool  # type: ignore[assignment]
    analysis._aside = None
    analysis._generation = 0
    analysis.start_after = 0
    return analysis


class _Runtime:
    def __init__(self) -> None:
        self.verdicts: dict[str, Any] = {}

    def remember(self, url: str, verdict: Any) -> None:
        self.verdicts[url] = verdict


def _read(analysis: PageAnalysis, html: str = "<p>x</p>", url: str = "http://a.test/") -> tuple[Any, list[str]]:
    inline_calls: list[str] = []

    async def inline(response: Any, html: str, follow: bool) -> Any:
        inline_calls.append(response.url)
        return "read here", [], 0

    response = SimpleNamespace(url=url, encoding="utf-8", meta={})
    return asyncio.run(analysis.read(response, html, True, inline)), inline_calls  # type: ignore[arg-type]


def test_a_page_in_flight_at_two_deaths_is_dropped_not_read_in_the_crawl_process() -> None:
    pool = _Pool(BrokenProcessPool("died"), completed=3)
    analysis = _analysis(pool)
    result, inline = _read(analysis)
    assert result is None and inline == []  # retried once with a new worker, then dropped
    assert pool.restarts == 2
    assert analysis.crawler.stats.values["focused/analysis/dropped"] == 1


class _FlakyPool(_Pool):
    """Dies on the first page; the new worker takes a while to start, then reads pages."""

    def __init__(self) -> None:
        super().__init__(BrokenProcessPool("died"), completed=3)

    def submit(self, *args: Any) -> Future[Any]:
        if not self.restarts:
            return super().submit()
        future: Future[Any] = Future()
        future.set_result(Analysis(ParsedPage(title="from the new worker"), ["http://a.test/x"], 0))
        return future

    def restart(self) -> None:
        super().restart()
        self.ready = Future()
        threading.Timer(0.3, self.ready.set_result, args=(None,)).start()


def test_a_page_in_flight_when_a_worker_died_waits_for_the_new_worker() -> None:
    analysis = _analysis(pool := _FlakyPool())
    result, inline = _read(analysis)
    assert inline == []  # not read in the crawl process, where it might kill the crawl too
    assert pool.restarts == 1 and result[0].title == "from the new worker" and result[1] == ["http://a.test/x"]


def test_auto_reads_the_first_pages_here_and_then_starts_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[int] = []

    class Started(_FlakyPool):
        def __init__(self, config: Any, workers: int) -> None:
            super().__init__()
            self.restarts = 1  # reads pages at once
            started.append(workers)

    monkeypatch.setattr("focused.analysis.client.AnalysisPool", Started)
    analysis = _analysis(None)  # type: ignore[arg-type]
    analysis.workers, analysis.start_after, analysis._pages_before = 1, 2, 0
    reads = [_read(analysis, PAGES[0][1], PAGES[0][0]) for _ in range(3)]
    # the first two read aside in the crawl process (not by the reactor's own fallback), the third by the worker
    assert [inline for _, inline in reads] == [[], [], []]
    assert [r[0][0].title for r in reads] == ["Match report", "Match report", "from the new worker"]
    assert started == [1] and reads[0][0][1] == take_links(parse_page(PAGES[0][1]), PAGES[0][0], "utf-8", 3000)[0]
    assert analysis.crawler.stats.values["focused/analysis/before_ready"] == 2


def test_pages_before_the_workers_are_ready_are_read_in_a_thread_in_their_order(
    critic_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    critic = load_critic(critic_path)
    topic = critic.resolve_topic("sport")
    config = AnalysisConfig(critic=critic, topic=topic, d_max=3, n_features=2**12)
    starting: Future[None] = Future()  # workers that never get ready during this test
    pool = _Pool(BrokenProcessPool("unused"), completed=0)
    pool.ready = starting
    analysis = _analysis(pool, config)
    threads: list[tuple[str, str]] = []
    real = analyze_page

    def watched(*args: Any) -> Analysis:
        threads.append((threading.current_thread().name, args[2]))
        return real(*args)

    async def crawl() -> list[Any]:
        inline_calls: list[str] = []

        async def inline(response: Any, html: str, follow: bool) -> Any:
            inline_calls.append(response.url)
            return None

        responses = [SimpleNamespace(url=url, encoding="utf-8", meta={}) for url, _ in PAGES]
        reads = await asyncio.gather(
            *(analysis.read(r, html, True, inline) for r, (_, html) in zip(responses, PAGES, strict=True))
        )
        assert inline_calls == []
        return [(read, response.meta) for read, response in zip(reads, responses, strict=True)]

    monkeypatch.setattr("focused.analysis.client.analyze_page", watched)
    try:
        got = asyncio.run(crawl())
    finally:
        analysis.close()
    assert [url for _, url in threads] == [url for url, _ in PAGES]  # one thread, in the order they came
    assert len({name for name, _ in threads}) == 1 and threads[0][0].startswith("focused-analysis-aside")
    for (url, html), (read, meta) in zip(PAGES, got, strict=True):
        want = analyze_page(config, html, url, "utf-8", True)
        parsed, links, over = read
        assert (links, over) == (want.links, want.over) and parsed.text == want.parsed.text
        assert meta[FINGERPRINT_META_KEY] == want.fingerprint
        assert analysis.runtime.verdicts[url] == want.verdict  # type: ignore[attr-defined]
    assert analysis.crawler.stats.values["focused/analysis/before_ready"] == 2
    assert "focused/analysis/pages" not in analysis.crawler.stats.values


def test_workers_that_cannot_start_hand_pages_back_and_a_failing_analysis_is_redone_here() -> None:
    analysis = _analysis(pool := _Pool(BrokenProcessPool("no start"), completed=0))
    result, inline = _read(analysis)
    assert result == ("read here", [], 0) and inline == ["http://a.test/"]
    assert analysis.pool is None and pool.closed
    assert analysis.crawler.stats.values["focused/analysis/unavailable"] == 1
    analysis = _analysis(_Pool(ValueError("bad page"), completed=3))
    result, inline = _read(analysis)
    assert result == ("read here", [], 0) and inline == ["http://a.test/"]
    assert analysis.crawler.stats.values["focused/analysis/failed"] == 1 and analysis.pool is not None


@pytest.mark.parametrize("strategy", ["baseline", "apprentice"])
def test_a_crawl_with_a_worker_fetches_and_judges_as_without(critic_path: Any, tmp_path: Any, strategy: str) -> None:
    # online training runs in a thread, so when a model switches in depends on timing: the apprentice
    # here keeps the critic's views (no model), with link ids and payloads computed all the same
    orders = {}
    with ReplayServer(regions_site(hubs=12)) as server:
        for workers in (0, 1):
            spec = CrawlSpec(
                name=f"{strategy}{workers}",
                topic="sport",
                strategy=strategy,
                seeds=(HOST + "/hub/0.html",),
                model=critic_path,
                proxy=server.proxy_url,
                db=tmp_path / f"{strategy}{workers}.sqlite",
                max_pages=0,
                settings={
                    "FOCUSED_ANALYSIS_WORKERS": workers,
                    "FOCUSED_APPRENTICE_MIN_INSTANCES": 10**6,
                    "FOCUSED_REPLAY_CONCURRENCY": 1,
                    "DOWNLOAD_DELAY": 0.05,  # long enough for the worker to start (pages before it: read here)
                },
            )
            result = run_crawl(spec, timeout=180)
            assert result.returncode == 0, result.log.read_text()[-3000:]
            pages = list(iter_pages(spec.db))
            orders[workers] = [(p.url, round(p.relevance, 9)) for p in pages]
            read = result.stats.get("focused/analysis/pages", 0)
            before = result.stats.get("focused/analysis/before_ready", 0)
            assert (read > 0 and read + before == len(pages)) if workers else read == before == 0
            assert not result.stats.get("focused/analysis/dropped") and not result.stats.get("focused/analysis/failed")
    assert len(orders[0]) == 12 * 7
    assert orders[1] == orders[0]


def test_auto_is_one_worker_on_two_cores_or_more(monkeypatch: pytest.MonkeyPatch) -> None:
    from focused.analysis.worker import workers_for

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert workers_for("auto") == 1 and workers_for(" AUTO ") == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert workers_for("auto") == 0
    assert workers_for("3") == 3 and workers_for(0) == 0


_ORPHAN = """
import sys, time
from focused.analysis.worker import AnalysisConfig, AnalysisPool
pool = AnalysisPool(AnalysisConfig(fingerprints=False))
pool.ready.result(timeout=60)
print(*pool._executor._processes, flush=True)
time.sleep(120)
"""


def test_a_worker_leaves_when_the_crawl_process_is_killed() -> None:
    import subprocess
    import sys
    import time

    with subprocess.Popen([sys.executable, "-c", _ORPHAN], stdout=subprocess.PIPE, text=True) as parent:
        assert parent.stdout is not None
        workers = [int(pid) for pid in parent.stdout.readline().split()]
        assert workers
        parent.kill()  # SIGKILL: no chance to stop its worker
        parent.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers)


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it has left)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_worker_whose_crawl_died_while_it_started_leaves_at_once():
    """The worker watches the crawl process it was started by (its pid is handed over), not whatever
    parent it has when it starts: a worker orphaned before that moment would otherwise watch init."""
    import subprocess
    import sys
    import time

    code = (
        "import time\n"
        "from focused.analysis.worker import AnalysisConfig, _start_worker\n"
        "_start_worker(AnalysisConfig(), 1)  # started by a crawl process that is gone: pid 1 is not our parent\n"
        "time.sleep(120)\n"
        "print('still here')\n"
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "still here" not in done.stdout
    assert time.monotonic() - started < 60  # a hang-only bound, well under the 120 s it would sleep


def test_a_page_whose_reading_aside_fails_is_read_again_by_the_crawl_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any) -> Analysis:
        raise ValueError("a page the reader cannot take")

    monkeypatch.setattr("focused.analysis.client.analyze_page", broken)
    starting: Future[None] = Future()
    pool = _Pool(BrokenProcessPool("unused"), completed=0)
    pool.ready = starting
    analysis = _analysis(pool)
    try:
        result, inline = _read(analysis)
    finally:
        analysis.close()
    assert result == ("read here", [], 0) and inline == ["http://a.test/"]
    assert analysis.crawler.stats.values["focused/analysis/failed"] == 1
