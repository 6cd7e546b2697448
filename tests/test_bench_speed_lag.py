"""``focused bench-speed``'s throughput table gives each crawl's worst reactor lag."""

from __future__ import annotations

from focused.bench.studies.throughput import CRAWLERS, markdown
from focused.bench.wikiweb import TOPIC


def test_the_throughput_table_has_each_crawlers_worst_reactor_lag() -> None:
    def median(lag: float | None) -> dict:
        return {
            "responses_per_s": 10.0,
            "cpu_ms_per_response": 5.0,
            "peak_rss_mb": 300.0,
            "crawl_peak_rss_mb": 200.0,
            "worker_peak_rss_mb": 100.0,
            "bytes_per_page": 1,
            "harvest": 0.5,
            "max_reactor_lag_ms": lag,
        }

    lags = {name: None if spider == "plain" else 40.0 + k for k, (name, spider, *_) in enumerate(CRAWLERS)}
    result = {
        "config": {"seed_url": "s", "topic": TOPIC, "concurrency": 8, "responses": 100, "rounds": 1},
        "throughput": {"median": {name: median(lag) for name, lag in lags.items()}, "ratio_to_plain": {}},
        "stages": {"pages": 10, "links_per_page": 5, "ms_per_page": {"parse": 1.0}, "total_ms": 1.0},
        "memory": {"bytes_per_waiting_url": 1, "waiting": 1, "parents": 1, "peak_rss_mb": 1, "baseline_rss_mb": 1},
        "hostile": {
            "links": 1, "peak_rss_mb": 1, "baseline_rss_mb": 1, "above_baseline_mb": 0, "links_taken": 1,
            "over_cap": 0, "max_reactor_lag_ms": 1, "lags_over_100ms": 0, "seconds": 1,
        },
    }  # fmt: skip
    lines = markdown(result).splitlines()
    header = next(line for line in lines if line.startswith("| crawler | responses/s"))
    assert header.rstrip(" |").endswith("| worst lag ms")
    for name, lag in lags.items():
        row = next(line for line in lines if line.startswith(f"| {name} | 10.0 |"))
        assert row.split(" | ")[-1].rstrip(" |") == ("–" if lag is None else str(lag))
