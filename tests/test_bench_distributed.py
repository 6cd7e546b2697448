"""The distributed benchmark's bookkeeping (the crawls themselves run in ``focused bench-distributed``)."""

from __future__ import annotations

from focused.bench.studies.distributed import _script_commands, markdown, round_trips


def test_round_trips_count_script_calls_and_commands_no_script_issues():
    scripts = _script_commands()
    assert {"zadd", "sadd", "zpopmin", "zcard"} <= scripts and "evalsha" not in scripts and "sismember" not in scripts
    before = {"evalsha": 10, "zadd": 100, "info": 3}
    after = {"evalsha": 25, "zadd": 160, "sismember": 7, "info": 4, "sadd": 50}
    assert round_trips(before, after, scripts) == 15 + 7  # script calls and SISMEMBERs; not what the scripts ran


def test_the_report_has_the_three_tables():
    run = {"pages_per_s": 30.0, "pages_per_worker": [150, 150], "refetched": 0}
    median = {"pages_per_s": 30.0, "cpu_ms_per_page": 40.0, "round_trips_per_page": 60.0}
    rescore = {"waiting": 100_000, "rescore_s": 3.0, "store_io_s": 2.0, "decode_s": 0.3, "model_s": 0.7}
    rescore |= {"rescore_passes_s": [3.0, 3.1, 2.9], "push_us_per_link": 500.0, "pop_ack_us_per_url": 700.0}
    kill = {"killed_at_pages": 150, "victim_pages": 120, "survivor_pages": 400, "requeued": 20, "refetched": 20}
    kill |= {"fetched_twice": 3, "lost": 0, "survivor_finish_reason": "focused_max_pages"}
    result = {
        "config": {"seed_url": "http://x/", "topic": "T", "concurrency": 8, "budget": 300, "rounds": 1}
        | {"kill_budget": 400, "lease_seconds": 3.0},
        "machine": {"cpus": 2, "python": "3.11"},
        "redis": "7.0",
        "seconds": 60,
        "throughput": {"runs": {"1": [run], "2": [run]}, "median": {"1": median, "2": median}},
        "rescore": rescore,
        "kill": kill,
    }
    text = markdown(result)
    assert "| 2 | 30.0 | 40.0 | 60.0 | 30.0 | 150 + 150 | 0 |" in text
    assert "| 100,000 | 3.0 |" in text
    assert "| 150 | 120 | 400 | 20 | 20 | 3 | 0 | focused_max_pages |" in text
