"""bench-speed's memory figures: the crawl process and its page-analysis worker apart, and the growth of the
crawl process per fetched page, read from a real crawl of a local replay."""

from __future__ import annotations

from pathlib import Path

from focused.bench.runner import CrawlSpec
from focused.bench.studies.throughput import CRAWLERS, ProcessRun, markdown, watch_process
from focused.bench.wikiweb import MODEL, TOPIC
from focused.replay.server import ReplayServer
from focused.replay.store import ReplayStore, StoredResponse

HOST = "http://memory.test"


def site(pages: int) -> ReplayStore:
    """A chain of on-topic pages, each linking the next ten."""
    store = ReplayStore()
    headers = [("Content-Type", "text/html; charset=utf-8")]
    for i in range(pages):
        links = "".join(f'<a href="/p{j}">physics {j}</a> ' for j in range(i + 1, min(pages, i + 11)))
        body = f"<html><head><title>p{i}</title></head><body><p>physics energy quantum {i}</p>{links}</body></html>"
        store.add(StoredResponse(f"{HOST}/p{i}", 200, headers, body.encode()), label=TOPIC, group="m")
    return store


def test_bytes_per_page_is_the_slope_past_the_first_third() -> None:
    start_up = [(p, 100_000 + 50 * p) for p in range(0, 100, 10)]  # steep growth while starting: ignored
    steady = [(p, 105_000 + p) for p in range(100, 400, 10)]  # 1 KB a page
    run = ProcessRun(0, 1.0, 0, 0, 0, start_up + steady, {})
    assert round(run.bytes_per_page() or 0) == 1024
    assert ProcessRun(0, 1.0, 0, 0, 0, [(1, 1000), (2, 1000)], {}).bytes_per_page() is None


def test_a_crawl_is_watched_with_its_worker_apart(tmp_path: Path) -> None:
    # 0.1 s a page at concurrency 2 and a commit every 5 pages: the crawl's pages are in its database for
    # several of the once-a-second samples, however fast the machine
    with ReplayServer(site(60), latency=0.1) as server:
        spec = CrawlSpec(
            name="memory",
            topic=TOPIC,
            strategy="apprentice",
            seeds=(f"{HOST}/p0",),
            model=MODEL,
            proxy=server.proxy_url,
            db=tmp_path / "memory.sqlite",
            max_pages=0,
            settings={
                "FOCUSED_ANALYSIS_WORKERS": 1,
                "CLOSESPIDER_PAGECOUNT": 60,
                "FOCUSED_REPLAY_CONCURRENCY": 2,
                "FOCUSED_DB_COMMIT_EVERY": 5,
            },
        )
        run = watch_process(spec)
    assert run.code == 0, (tmp_path / "memory.log").read_text()[-2000:]
    assert run.crawl_peak_kb > 0 and run.worker_peak_kb > 0
    assert run.peak_kb >= run.crawl_peak_kb  # the sum of both processes' peaks, as the table's peak RSS
    assert run.samples and run.samples[-1][0] > 0  # pages read from the running crawl's database
    assert all(rss > 0 for _, rss in run.samples)


def test_the_report_has_the_memory_table() -> None:
    med = {
        "responses_per_s": 10.0,
        "cpu_ms_per_response": 5.0,
        "peak_rss_mb": 300.0,
        "crawl_peak_rss_mb": 200.0,
        "worker_peak_rss_mb": 100.0,
        "bytes_per_page": 12_345,
        "harvest": 0.5,
        "max_reactor_lag_ms": 20.0,
    }
    result = {
        "config": {"seed_url": "s", "topic": TOPIC, "concurrency": 8, "responses": 100, "rounds": 1},
        "throughput": {"median": {name: dict(med) for name, *_ in CRAWLERS}, "ratio_to_plain": {}},
        "stages": {"pages": 10, "links_per_page": 5, "ms_per_page": {"parse": 1.0}, "total_ms": 1.0},
        "memory": {"bytes_per_waiting_url": 1400, "waiting": 100, "parents": 1, "peak_rss_mb": 1, "baseline_rss_mb": 1},
        "hostile": {
            "links": 10,
            "peak_rss_mb": 1,
            "baseline_rss_mb": 1,
            "above_baseline_mb": 0,
            "links_taken": 1,
            "over_cap": 0,
            "max_reactor_lag_ms": 1,
            "lags_over_100ms": 0,
            "seconds": 1,
        },
    }
    text = markdown(result)
    assert "| crawler | crawl process MB | worker MB | bytes per fetched page | vs plain: peak RSS |" in text
    assert "| default | 200.0 | 100.0 | 12,345 | 1.00x |" in text
    assert "1,400 bytes per waiting URL" in text
