"""``focused bench-speed``: the focused crawler against plain Scrapy on a web where every link is a page.

Four studies on the rendered Wikipedia replay (every response a 200 HTML page;
seed ``/wiki/Physics``, topic ``Science.Physics``, the ``wiki-topics`` critic),
figures reported and never asserted:

1. **Throughput**: real crawl processes of ``plain`` (Scrapy's own link
   following), ``focused`` with ``strategy=baseline`` and the full default
   pipeline (critic, apprentice with the critic's anchor views, frontier,
   crawl database), alternating, at the same concurrency and response budget,
   pulling requests ``strict``-ly best-first (the replay profile) and
   ``pipelined`` (the live-web default, ``FOCUSED_MAX_UNSCORED_PAGES``);
   responses/s (Scrapy's ``elapsed_time_seconds``) and CPU ms per response of
   the crawl process (user + sys, start-up included), and each round's ratios
   to the ``plain`` crawl of the same kind; medians over the rounds.
2. **Stages**: the CPU each stage of the default pipeline spends per page, in
   this process, on the replay's pages: parse, text, critic, link features,
   anchor views, apprentice prediction, scheduling, database.
3. **Memory**: bytes per waiting URL (request, payload, seen-set) of the
   scheduler's memory store, and the peak RSS of a process that holds a
   crawl's components with 100,000 waiting URLs (a subprocess).
4. **Hostile page**: a crawl whose seed has 200,000 links: peak RSS against a
   crawl of a one-link seed, the worst reactor lag, the links taken and dropped.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import subprocess
import time
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from focused.bench.proc import vm_hwm_kb, vm_rss_kb
from focused.bench.runner import PROJECT_ROOT, CrawlSpec, scrapy_command, stats_path
from focused.bench.wikiweb import MODEL, TOPIC, bench_run, md_row, read_only, wiki_spec

#: Settings of the two ways to pull requests. ``strict``: the ``replay`` profile's best-first (no
#: download starts while any page awaits scoring; what the harvest benchmarks crawl). ``pipelined``:
#: the live-web default (FOCUSED_MAX_UNSCORED_PAGES=16 pages may await scoring; the plain spider then
#: has Scrapy's own SCRAPER_SLOT_MAX_ACTIVE_SIZE).
PIPELINED = {"FOCUSED_MAX_UNSCORED_PAGES": 16}

#: (name, spider, strategy, extra settings, the plain crawl it is compared with). ``baseline`` and
#: ``default`` read pages in a worker process on a machine of two or more cores
#: (FOCUSED_ANALYSIS_WORKERS=auto, focused.analysis.worker); ``no worker`` is the default pipeline all in the
#: crawl process.
CRAWLERS: tuple[tuple[str, str, str, dict[str, Any], str], ...] = (
    ("plain", "plain", "baseline", {}, "plain"),
    ("default", "focused", "apprentice", {}, "plain"),
    ("plain, pipelined", "plain", "baseline", PIPELINED, "plain, pipelined"),
    ("baseline, pipelined", "focused", "baseline", PIPELINED, "plain, pipelined"),
    ("default, pipelined", "focused", "apprentice", PIPELINED, "plain, pipelined"),
    (
        "default, pipelined, no worker",
        "focused",
        "apprentice",
        {**PIPELINED, "FOCUSED_ANALYSIS_WORKERS": 0},
        "plain, pipelined",
    ),
)


@dataclass(frozen=True)
class SpeedBenchConfig:
    out: Path
    responses: int = 3000
    rounds: int = 3
    concurrency: int = 8
    stage_pages: int = 1000
    waiting: int = 100_000
    hostile_links: int = 200_000

    def quick(self) -> SpeedBenchConfig:
        return replace(self, responses=500, rounds=2, stage_pages=200, waiting=20_000, hostile_links=20_000)


def run_process(spec: CrawlSpec) -> tuple[int, float, int, dict[str, Any]]:
    """Run one crawl; its exit status, CPU seconds (user + sys), peak RSS (KB, VmHWM) and stats.

    The peak RSS is read from ``/proc/PID/status`` while the crawl runs: the ``ru_maxrss`` of a child
    on Linux starts from its parent's RSS at the fork, which would hide a small crawl's own peak. A
    crawl with page-analysis workers counts theirs too (the sum of the processes' peaks), as the CPU
    does (the crawl waits for its workers, so ``wait4`` includes their time).
    """
    run = watch_process(spec)
    return run.code, run.cpu, run.peak_kb, run.stats


@dataclass
class ProcessRun:
    """One crawl process as :func:`watch_process` saw it."""

    code: int
    cpu: float
    #: the sum of the crawl process's and its workers' peaks (KB), and each apart
    peak_kb: int
    crawl_peak_kb: int
    worker_peak_kb: int
    #: (pages in the crawl database, resident set of the crawl process in KB), about once a second
    samples: list[tuple[int, int]]
    stats: dict[str, Any]

    def bytes_per_page(self) -> float | None:
        """How much the crawl process's resident set grows per fetched page: the least-squares slope of
        its RSS against the pages fetched, over the samples past a third of the crawl (after the
        start-up, the worker's start and the first models), in bytes; None with too few samples."""
        if not self.samples:
            return None
        last = self.samples[-1][0]
        late = [(p, r) for p, r in self.samples if p >= last / 3]
        pages = [p for p, _ in late]
        if len(late) < 5 or max(pages) - min(pages) < 50:
            return None
        mean_p = statistics.fmean(pages)
        mean_r = statistics.fmean(r for _, r in late)
        var = sum((p - mean_p) ** 2 for p in pages)
        return 1024 * sum((p - mean_p) * (r - mean_r) for p, r in late) / var


def watch_process(spec: CrawlSpec) -> ProcessRun:
    """Run one crawl, reading its peaks and its resident set against the pages in its database as it runs."""
    import json

    for path in (spec.db, stats_path(spec), Path(f"{spec.db}-wal"), Path(f"{spec.db}-shm")):
        path.unlink(missing_ok=True)
    spec.db.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")])))
    env.setdefault("SCRAPY_SETTINGS_MODULE", "focused.settings")
    peak = crawl_peak = worker_peak = 0
    samples: list[tuple[int, int]] = []
    next_sample = time.monotonic() + 1.0
    with spec.db.with_suffix(".log").open("w") as log:
        proc = subprocess.Popen(scrapy_command(spec), cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        while True:
            own, workers = vm_hwm_kb(proc.pid), [vm_hwm_kb(child) for child in _children(proc.pid)]
            crawl_peak, worker_peak = max(crawl_peak, own), max([worker_peak, *workers])
            peak = max(peak, own + sum(workers))
            if time.monotonic() >= next_sample:
                next_sample += 1.0
                pages, rss = _pages_fetched(spec.db), vm_rss_kb(proc.pid)
                if pages is not None and rss:
                    samples.append((pages, rss))
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.1)
        proc.returncode = os.waitstatus_to_exitcode(status)
    stats = json.loads(stats_path(spec).read_text()) if stats_path(spec).exists() else {}
    return ProcessRun(proc.returncode, usage.ru_utime + usage.ru_stime, peak, crawl_peak, worker_peak, samples, stats)


def _pages_fetched(db: Path) -> int | None:
    """Pages in a running crawl's database (read only); None before it exists or without one (plain)."""
    if not db.exists():
        return None
    try:
        with closing(read_only(db)) as conn:
            return int(conn.execute("SELECT count(*) FROM pages").fetchone()[0])
    except sqlite3.Error:
        return None


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (its page-analysis workers)."""
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(c) for c in (task / "children").read_text().split()]
    except (OSError, ValueError):
        pass
    return found


def _spec(config: SpeedBenchConfig, proxy: str, name: str, spider: str, strategy: str, **settings: Any) -> CrawlSpec:
    settings = {"FOCUSED_LOG_EVERY": 0, "CLOSESPIDER_PAGECOUNT": config.responses, **settings}
    return wiki_spec(config.out, proxy, name, strategy, concurrency=config.concurrency, spider=spider, **settings)


def throughput(config: SpeedBenchConfig, proxy: str) -> dict[str, Any]:
    """Every round of the crawlers (alternating), then medians and the median ratios to plain."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, *_ in CRAWLERS}
    ratios: dict[str, list[dict[str, float]]] = {name: [] for name, *_, ref in CRAWLERS if ref != name}
    reference = {name: ref for name, *_, ref in CRAWLERS}
    for rnd in range(config.rounds):
        this_round: dict[str, dict[str, Any]] = {}
        for k, (name, spider, strategy, settings, _) in enumerate(CRAWLERS):
            load = os.getloadavg()[0]
            spec = _spec(config, proxy, f"speed-{k}-{rnd}", spider, strategy, **settings)
            watched = watch_process(spec)
            code, cpu, rss, stats = watched.code, watched.cpu, watched.peak_kb, watched.stats
            per_page = watched.bytes_per_page()
            responses = int(stats.get("downloader/response_count", 0))
            elapsed = float(stats.get("elapsed_time_seconds") or 0)
            run = {
                "ok": code == 0,
                "responses": responses,
                "elapsed_s": round(elapsed, 2),
                "responses_per_s": round(responses / elapsed, 2) if elapsed else None,
                "cpu_ms_per_response": round(1000 * cpu / responses, 2) if responses else None,
                "peak_rss_mb": round(rss / 1024, 1),
                "crawl_peak_rss_mb": round(watched.crawl_peak_kb / 1024, 1),
                "worker_peak_rss_mb": round(watched.worker_peak_kb / 1024, 1) if watched.worker_peak_kb else None,
                "bytes_per_page": None if per_page is None else round(per_page),
                "harvest": stats.get("focused/harvest_rate"),
                "max_reactor_lag_ms": stats.get("focused/reactor/max_lag_ms"),
                "load_before": round(load, 2),
            }
            runs[name].append(run)
            this_round[name] = run
        for name in ratios:
            run, plain = this_round[name], this_round[reference[name]]
            if (
                plain["responses_per_s"]
                and run["responses_per_s"]
                and plain["cpu_ms_per_response"]
                and run["cpu_ms_per_response"]
            ):
                ratios[name].append(
                    {
                        "responses_per_s": run["responses_per_s"] / plain["responses_per_s"],
                        "cpu_ms_per_response": run["cpu_ms_per_response"] / plain["cpu_ms_per_response"],
                    }
                )
    out: dict[str, Any] = {"runs": runs, "median": {}, "ratio_to_plain": {}}
    for name, values in runs.items():
        out["median"][name] = {
            key: _median([v[key] for v in values if v["ok"]], digits=4 if key == "harvest" else 2)
            for key in (
                "responses_per_s",
                "cpu_ms_per_response",
                "peak_rss_mb",
                "crawl_peak_rss_mb",
                "worker_peak_rss_mb",
                "bytes_per_page",
                "harvest",
                "max_reactor_lag_ms",
            )
        }
    for name, values in ratios.items():
        out["ratio_to_plain"][name] = {
            key: _median([v[key] for v in values], digits=3) for key in ("responses_per_s", "cpu_ms_per_response")
        }
    return out


def _median(values: list[Any], digits: int = 2) -> float | None:
    values = [v for v in values if v is not None]
    return round(float(statistics.median(values)), digits) if values else None


def run_speed_bench(config: SpeedBenchConfig) -> dict[str, Any]:
    """The four studies; writes ``bench.json`` and ``bench.md`` to ``config.out``."""
    from focused.bench.studies.stages import memory_study, stage_costs
    from focused.replay.load import open_store
    from focused.replay.server import ReplayServer

    with bench_run(config, markdown) as (web, result):
        store = open_store(web.warc, labels=web.labels)
        result["uptime_before"] = _uptime()
        with ReplayServer(store) as server:
            result["throughput"] = throughput(config, server.proxy_url)
        result["stages"] = stage_costs(store, MODEL, TOPIC, pages=config.stage_pages)
        result["memory"] = memory_study(config.waiting, round(result["stages"]["mean_payload_ids"]))
        result["hostile"] = hostile_page(config.out / "cache", config.hostile_links)
        result["uptime_after"] = _uptime()
    return result


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return f"load average {os.getloadavg()}"


def markdown(result: dict[str, Any]) -> str:
    tp, cfg = result["throughput"], result["config"]
    lines = [
        f"Rendered Wikipedia replay (every response a 200 page), seed {cfg['seed_url']}, topic {cfg['topic']}, "
        f"concurrency {cfg['concurrency']}, {cfg['responses']:,} responses per crawl, {cfg['rounds']} alternating "
        f"rounds, medians. Load: {result.get('uptime_before', '')} / after: {result.get('uptime_after', '')}.",
        "",
        "Ratios are to the plain crawl of the same kind: `strict` (the replay profile: no download starts "
        "while a page awaits scoring, as the harvest benchmarks crawl) or `pipelined` (the live-web default: "
        "up to FOCUSED_MAX_UNSCORED_PAGES=16 pages may await scoring).",
        "",
        "| crawler | responses/s | CPU ms per response | vs plain: responses/s | vs plain: CPU | peak RSS MB "
        "| harvest | worst lag ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, *_ in CRAWLERS:
        med, ratio = tp["median"][name], tp["ratio_to_plain"].get(name, {})
        lines.append(
            md_row(
                name,
                med["responses_per_s"],
                med["cpu_ms_per_response"],
                f"{ratio['responses_per_s']}x" if ratio.get("responses_per_s") else "1.00",
                f"{ratio['cpu_ms_per_response']}x" if ratio.get("cpu_ms_per_response") else "1.00",
                med["peak_rss_mb"],
                med["harvest"],
                med.get("max_reactor_lag_ms"),
            )
        )
    lines += [
        "",
        "Memory of the same crawls (medians): the peak resident set of the crawl process and of its "
        "page-analysis worker apart (the table's peak RSS is the peak of the sum of the crawl process and its "
        "children: the worker and multiprocessing's resource tracker, ~15 MB), and the growth of the crawl "
        "process's resident set per fetched page (least-squares slope of its RSS against the pages in the "
        "crawl database, sampled every second past the first third of the crawl; the plain spider keeps no "
        "database):",
        "",
        "| crawler | crawl process MB | worker MB | bytes per fetched page | vs plain: peak RSS |",
        "|---|---|---|---|---|",
    ]
    for name, *_, ref in CRAWLERS:
        med, plain = tp["median"][name], tp["median"][ref]
        total, plain_total = med.get("peak_rss_mb"), plain.get("peak_rss_mb")
        lines.append(
            md_row(
                name,
                med.get("crawl_peak_rss_mb"),
                med.get("worker_peak_rss_mb"),
                None if med.get("bytes_per_page") is None else round(med["bytes_per_page"]),
                f"{total / plain_total:.2f}x" if total and plain_total else None,
            )
        )
    st = result["stages"]
    lines += [
        "",
        f"CPU per page of the default pipeline's stages ({st['pages']:,} replay pages, {st['links_per_page']} links "
        "a page, in one process):",
        "",
        "| stage | ms per page |",
        "|---|---|",
        *(md_row(stage, ms) for stage, ms in st["ms_per_page"].items()),
        md_row("**total**", st["total_ms"]),
    ]
    mem, hostile = result["memory"], result["hostile"]
    lines += [
        "",
        f"Memory: {mem['bytes_per_waiting_url']:,} bytes per waiting URL (resident set growth: request, payload, "
        "seen-set; "
        f"{mem['waiting']:,} URLs, {mem['parents']} parent each); a process with the crawl's components "
        f"and {mem['waiting']:,} waiting URLs peaks at {mem['peak_rss_mb']} MB RSS ({mem['baseline_rss_mb']} MB "
        "before the URLs).",
        "",
        f"Hostile page ({hostile['links']:,} links on the seed, default cap): peak RSS {hostile['peak_rss_mb']} MB "
        f"against {hostile['baseline_rss_mb']} MB for a one-link seed (+{hostile['above_baseline_mb']} MB); "
        f"links taken {hostile['links_taken']:,}, <a href> over the cap {hostile['over_cap']:,}; worst reactor lag "
        f"{hostile['max_reactor_lag_ms']} ms ({hostile['lags_over_100ms']} ticks late by over 100 ms); "
        f"{hostile['seconds']} s.",
    ]
    return "\n".join(lines) + "\n"


def hostile_page(cache: Path, links: int) -> dict[str, Any]:
    """A crawl whose seed has ``links`` links (``<a href=/pN>x</a>``: 4 MB for 200,000, under the 5 MiB
    download limit) against one whose seed has one."""
    from focused.replay.server import ReplayServer
    from focused.replay.store import ReplayStore, StoredResponse

    host = "http://hostile.test"
    headers = [("Content-Type", "text/html; charset=utf-8")]
    out: dict[str, Any] = {"links": links}
    for kind, n in (("baseline", 1), ("hostile", links)):
        store = ReplayStore()
        anchors = "".join(f"<a href=/p{i}>x</a>" for i in range(n))
        body = f"<html><head><title>links</title></head><body><p>physics energy</p>{anchors}</body></html>"
        store.add(StoredResponse(host + "/", 200, headers, body.encode()), label="Science.Physics", group="h")
        with ReplayServer(store) as server:
            spec = CrawlSpec(
                name=f"hostile-{kind}",
                topic=TOPIC,
                strategy="apprentice",
                seeds=(host + "/",),
                model=MODEL,
                proxy=server.proxy_url,
                db=cache / "crawls" / f"hostile-{kind}.sqlite",
                max_pages=0,
                settings={"FOCUSED_REPLAY_CONCURRENCY": 8, "CLOSESPIDER_PAGECOUNT": 300, "FOCUSED_LOG_EVERY": 0},
            )
            started = time.perf_counter()
            code, _, rss, stats = run_process(spec)
            seconds = time.perf_counter() - started
        out[kind] = {"ok": code == 0, "peak_rss_mb": round(rss / 1024, 1), "seconds": round(seconds, 1)}
        if kind == "hostile":
            out.update(
                links_taken=int(stats.get("focused/links_scored", 0)),
                over_cap=int(stats.get("focused/links/over_cap", 0)),
                max_reactor_lag_ms=stats.get("focused/reactor/max_lag_ms"),
                lags_over_100ms=int(stats.get("focused/reactor/lags_over_100ms", 0)),
                seconds=round(seconds, 1),
            )
    out["peak_rss_mb"] = out["hostile"]["peak_rss_mb"]
    out["baseline_rss_mb"] = out["baseline"]["peak_rss_mb"]
    out["above_baseline_mb"] = round(out["peak_rss_mb"] - out["baseline_rss_mb"], 1)
    return out
