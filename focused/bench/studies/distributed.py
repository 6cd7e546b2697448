"""The distributed-crawl benchmark: workers sharing one Redis frontier (``focused bench-distributed``).

One ``redis-server`` on a free loopback port, started by the benchmark; the
rendered Wikipedia replay (as ``focused bench-frontier``). Figures, never asserted:

1. **Throughput**: real ``scrapy crawl focused`` workers (``baseline``
   strategy), one worker with the whole page budget and two workers started
   together with half of it each, alternating; pages/s (all pages over the
   longest worker's ``elapsed_time_seconds``), CPU ms per page (every worker,
   start-up included) and Redis round trips per page (``INFO commandstats``
   deltas: script calls plus the commands no script of focused issues; a
   pipeline counts one per command; a command that scripts issue too, such as
   ``ZCARD``, is not counted when a client sends it, which a crawl does only
   when idle).
2. **Re-scoring** 100,000 waiting requests in Redis through
   :meth:`FocusedScheduler.rescore`, as ``bench-frontier`` does for memory and SQLite.
3. **A worker killed** with SIGKILL mid-crawl (``FOCUSED_REDIS_LEASE_SECONDS=3``):
   the other worker's re-queued and re-fetched URLs, and URLs lost (link
   targets of fetched pages neither fetched nor left in the frontier).
4. **Saturation** of one Redis by 1, 2, 4, 8 simulated workers driving only the
   frontier protocol (:mod:`focused.bench.studies.saturation`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import redis

from focused.bench.runner import PROJECT_ROOT, CrawlSpec, scrapy_command, stats_path
from focused.bench.studies.frontier_store import request_key
from focused.bench.studies.rescoring import rescore_study
from focused.bench.studies.saturation import SaturationConfig, saturation_study
from focused.bench.studies.saturation import markdown as saturation_markdown
from focused.bench.studies.saturation import write as write_saturation
from focused.bench.wikiweb import HOST, bench_run, cpu_children, md_row, read_only, wiki_spec
from focused.frontier import redis_lua


@dataclass(frozen=True)
class DistributedBenchConfig:
    """What to run; :meth:`quick` is the short smoke run."""

    out: Path
    budget: int = 1200
    rounds: int = 2
    concurrency: int = 8
    rescore_entries: int = 100_000
    kill_budget: int = 400
    kill_after: int = 150
    lease_seconds: float = 3.0
    seed: int = 0
    saturation: SaturationConfig = field(default_factory=SaturationConfig)

    def quick(self) -> DistributedBenchConfig:
        return replace(
            self,
            budget=300,
            rounds=1,
            rescore_entries=20_000,
            kill_budget=150,
            kill_after=50,
            saturation=self.saturation.quick(),
        )


def _script_commands() -> set[str]:
    """Commands the Lua scripts of focused call: inside a script they are no round trip."""
    from focused.core import sharedcount
    from focused.learning.apprentice import shared

    modules = (redis_lua, shared, sharedcount)
    text = "".join(str(getattr(m, name)) for m in modules for name in dir(m) if name.isupper())
    return {c.lower() for c in re.findall(r"redis\.call\('([A-Z]+)'", text)}


@contextmanager
def redis_server(directory: Path) -> Iterator[str]:
    """A ``redis-server`` on a free loopback port, without persistence; yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (make install installs it)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    directory.mkdir(parents=True, exist_ok=True)
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    with (directory / "redis.log").open("ab") as log:
        proc = subprocess.Popen([*args, "--dir", str(directory)], stdout=log, stderr=subprocess.STDOUT)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=1)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start; see {directory / 'redis.log'}") from None
                time.sleep(0.02)
        client.close()
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _commandstats(client: redis.Redis) -> dict[str, int]:
    info: dict[str, Any] = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in info.items()}


def round_trips(before: dict[str, int], after: dict[str, int], script_commands: set[str]) -> int:
    """Client commands between two ``INFO commandstats``: script calls and commands no script issues."""
    delta = {name: after[name] - before.get(name, 0) for name in after}
    return sum(n for name, n in delta.items() if name not in script_commands and not name.startswith("info"))


def _spec(config: DistributedBenchConfig, proxy: str, name: str, max_pages: int, **settings: Any) -> CrawlSpec:
    return wiki_spec(
        config.out, proxy, name, "baseline", concurrency=config.concurrency, max_pages=max_pages, **settings
    )


class _Workers:
    """Worker processes started together (each its own crawl database and log)."""

    def __init__(self, specs: list[CrawlSpec]) -> None:
        env = dict(os.environ, SCRAPY_SETTINGS_MODULE="focused.settings")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
        self.specs = specs
        self.procs = []
        for spec in specs:
            spec.db.parent.mkdir(parents=True, exist_ok=True)
            for path in (spec.db, stats_path(spec), Path(f"{spec.db}-wal"), Path(f"{spec.db}-shm")):
                path.unlink(missing_ok=True)
            with spec.db.with_suffix(".log").open("w") as log:
                cmd = scrapy_command(spec)
                self.procs.append(subprocess.Popen(cmd, cwd=PROJECT_ROOT, env=env, stdout=log, stderr=log))

    def wait(self, timeout: float = 600) -> list[dict[str, Any]]:
        for proc in self.procs:
            proc.wait(timeout=timeout)
        return [json.loads(stats_path(s).read_text()) if stats_path(s).exists() else {} for s in self.specs]


def throughput(config: DistributedBenchConfig, proxy: str, url: str) -> dict[str, Any]:
    """1 worker with the budget, 2 workers with half each, alternating ``rounds`` times."""
    client = redis.Redis.from_url(url)
    scripts = _script_commands()
    runs: dict[str, list[dict[str, Any]]] = {"1": [], "2": []}
    for rnd in range(config.rounds):
        for workers in (1, 2):
            prefix = f"throughput-{workers}-{rnd}"
            share = config.budget // workers
            specs = [
                _spec(config, proxy, f"{prefix}-w{i}", share, REDIS_URL=url, FOCUSED_REDIS_PREFIX=prefix)
                for i in range(workers)
            ]
            before, cpu, started = _commandstats(client), cpu_children(), time.perf_counter()
            stats = _Workers(specs).wait()
            wall, cpu = time.perf_counter() - started, cpu_children() - cpu
            trips = round_trips(before, _commandstats(client), scripts)
            pages = sum(int(s.get("focused/pages", 0)) for s in stats)
            elapsed = max(float(s.get("elapsed_time_seconds") or 0) for s in stats)
            runs[str(workers)].append(
                {
                    "finish_reasons": [s.get("finish_reason") for s in stats],
                    "pages": pages,
                    "pages_per_worker": [int(s.get("focused/pages", 0)) for s in stats],
                    "elapsed_s": round(elapsed, 2),
                    "wall_s": round(wall, 2),
                    "pages_per_s": round(pages / elapsed, 2) if elapsed else None,
                    "cpu_ms_per_page": round(1000 * cpu / pages, 2) if pages else None,
                    "round_trips_per_page": round(trips / pages, 2) if pages else None,
                    "refetched": sum(int(s.get("focused/frontier/refetched", 0)) for s in stats),
                    "load": round(os.getloadavg()[0], 2),
                }
            )
    medians = {
        n: {k: _median([r[k] for r in rs]) for k in ("pages_per_s", "cpu_ms_per_page", "round_trips_per_page")}
        for n, rs in runs.items()
    }
    return {"runs": runs, "median": medians}


def _median(values: list[Any]) -> float | None:
    values = sorted(v for v in values if v is not None)
    return values[len(values) // 2] if values else None


def kill_study(config: DistributedBenchConfig, proxy: str, url: str) -> dict[str, Any]:
    """Two workers; SIGKILL one once it has fetched ``kill_after`` pages; the other finishes its budget."""
    prefix = "kill"
    settings = {"REDIS_URL": url, "FOCUSED_REDIS_PREFIX": prefix, "FOCUSED_REDIS_LEASE_SECONDS": config.lease_seconds}
    victim = _spec(config, proxy, "kill-victim", config.kill_budget, **settings, LOG_LEVEL="DEBUG")  # logs each page
    survivor = _spec(config, proxy, "kill-survivor", config.kill_budget, **settings)
    workers = _Workers([victim, survivor])
    log = victim.db.with_suffix(".log")
    deadline = time.monotonic() + 300
    while log.read_text(errors="replace").count("Crawled (200)") < config.kill_after:
        if workers.procs[0].poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the victim stopped or made no progress; log {log}")
        time.sleep(0.01)
    workers.procs[0].kill()
    killed_at = log.read_text(errors="replace").count("Crawled (200)")
    stats = workers.wait()[1]
    client = redis.Redis.from_url(url)
    left = {
        bytes(m).decode()
        for n in ("waiting", "leases")
        for m in cast(Any, client.zrange(f"{prefix}:frontier:{n}", 0, -1))
    }
    fetched: list[str] = []
    targets: set[str] = set()
    for spec in (victim, survivor):
        conn = read_only(spec.db)
        try:
            urls = [u for (u,) in conn.execute("SELECT url FROM pages")]
            links = conn.execute("SELECT DISTINCT src, dst FROM links").fetchall()
        finally:
            conn.close()
        fetched += urls
        sources = set(urls)
        targets |= {dst for src, dst in links if src in sources and dst.startswith(f"http://{HOST}/")}
    keys = {request_key(u) for u in fetched}
    lost = [u for u in targets if (k := request_key(u)) not in keys and k not in left]
    return {
        "killed_at_pages": killed_at,
        "victim_pages": len(fetched) - int(stats.get("focused/pages", 0)),
        "survivor_pages": int(stats.get("focused/pages", 0)),
        "distinct_pages": len(set(fetched)),
        "fetched_twice": len(fetched) - len(set(fetched)),
        "requeued": int(stats.get("focused/frontier/requeued", 0)),
        "refetched": int(stats.get("focused/frontier/refetched", 0)),
        "link_targets": len(targets),
        "lost": len(lost),
        "lost_examples": sorted(lost)[:5],
        "survivor_finish_reason": stats.get("finish_reason"),
    }


def run_distributed_bench(config: DistributedBenchConfig) -> dict[str, Any]:
    """Run the three studies on one Redis and one replay; write ``bench.json`` and ``bench.md``."""
    from focused.replay.load import open_store
    from focused.replay.server import ReplayServer

    with (
        bench_run(config, markdown) as (web, result),
        redis_server(config.out / "cache" / "redis") as url,
        ReplayServer(open_store(web.warc, labels=web.labels)) as server,
    ):
        result["redis"] = redis.Redis.from_url(url).info("server")["redis_version"]
        result["throughput"] = throughput(config, server.proxy_url, url)
        redis_settings = {"REDIS_URL": url, "FOCUSED_REDIS_PREFIX": "rescore"}
        result["rescore"] = rescore_study(
            config.rescore_entries, config.out / "cache", seed=config.seed, stores={"redis": redis_settings}
        )["redis"]
        result["kill"] = kill_study(config, server.proxy_url, url)
        result["saturation"] = saturation_study(url, config.saturation)
    write_saturation(result["saturation"], config.out)
    return result


def run_saturation(config: DistributedBenchConfig) -> Path:
    """Only the saturation study, on a Redis of its own; returns the path of ``saturation.md``."""
    with redis_server(config.out / "cache" / "redis") as url:
        result = saturation_study(url, config.saturation)
    return write_saturation(result, config.out)


def markdown(result: dict[str, Any]) -> str:
    """The tables of a :func:`run_distributed_bench` result."""
    c, machine, t, r, k = result["config"], result["machine"], result["throughput"], result["rescore"], result["kill"]
    lines = [
        "# Distributed crawl benchmark: workers on one Redis frontier",
        "",
        f"Rendered Wikipedia replay, seed {c['seed_url']}, topic {c['topic']}, strategy baseline, concurrency "
        f"{c['concurrency']} per worker; Redis {result['redis']} on loopback; {machine['cpus']} CPUs, Python "
        f"{machine['python']}; {result['seconds']:.0f} s in all.",
        "",
        f"## Throughput: {c['budget']:,} pages in all (2 workers: half each), median of {c['rounds']} rounds",
        "",
        "| workers | pages/s | CPU ms/page | Redis round trips/page | runs (pages/s) | pages per worker | re-fetched |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, runs in t["runs"].items():
        m = t["median"][n]
        per_run = ", ".join(str(x["pages_per_s"]) for x in runs)
        split = "; ".join(" + ".join(map(str, x["pages_per_worker"])) for x in runs)
        refetched = ", ".join(str(x["refetched"]) for x in runs)
        lines.append(
            md_row(n, m["pages_per_s"], m["cpu_ms_per_page"], m["round_trips_per_page"], per_run, split, refetched)
        )
    lines += [
        "",
        "pages/s: all pages over the longest worker's crawl time; CPU: user + sys of every worker, start-up "
        "included; round trips: `INFO commandstats` deltas, counting the Lua script calls and the commands no "
        "script of focused issues (a pipeline counts one per command).",
        "",
        "## Re-scoring the waiting requests in Redis through `FocusedScheduler.rescore`, a fitted apprentice",
        "",
        "| waiting URLs | re-score s | Redis I/O s | decode s | model s | passes s | push µs/link | pop+ack µs/URL |",
        "|---|---|---|---|---|---|---|---|",
        md_row(
            r["waiting"],
            r["rescore_s"],
            r["store_io_s"],
            r["decode_s"],
            r["model_s"],
            " / ".join(map(str, r["rescore_passes_s"])),
            r["push_us_per_link"],
            r["pop_ack_us_per_url"],
        ),
        "",
        "The issue's goal: at most 5 s for 100,000 waiting requests. Push and pop go through the scheduler "
        "(a push is one script call with the other links found meanwhile; a pop carries the acknowledgements).",
        "",
        f"## A worker killed with SIGKILL: 2 workers of {c['kill_budget']:,} pages each, "
        f"leases of {c['lease_seconds']:g} s",
        "",
        "| killed after (pages) | victim's pages | survivor's pages | re-queued (expired leases) | re-fetched "
        "| fetched by both | URLs lost | survivor finished |",
        "|---|---|---|---|---|---|---|---|",
        md_row(
            k["killed_at_pages"],
            k["victim_pages"],
            k["survivor_pages"],
            k["requeued"],
            k["refetched"],
            k["fetched_twice"],
            k["lost"],
            k["survivor_finish_reason"],
        ),
        "",
        "Lost: link targets of the pages of both crawl databases neither fetched nor waiting or leased in Redis.",
        "",
    ]
    if "saturation" in result:
        lines.append(saturation_markdown(result["saturation"]))
    return "\n".join(lines) + "\n"
