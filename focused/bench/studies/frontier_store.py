"""The frontier store benchmark: memory vs SQLite in real crawls, re-scoring, kill and resume.

Three studies, figures reported and never asserted (``focused bench-frontier``):

1. **Throughput**: real ``scrapy crawl focused`` processes on the rendered
   Wikipedia replay (every link a 200 page), same seed, topic and page budget,
   the memory store (no ``JOBDIR``) and the SQLite store (a fresh ``JOBDIR``)
   alternating; median pages/s (Scrapy's ``elapsed_time_seconds``) and CPU ms
   per page of the crawl process (user + sys, start-up included).
2. **Re-scoring** a synthetic frontier of waiting URLs with apprentice payloads
   through the scheduler (:meth:`FocusedScheduler.rescore`: payload decoding,
   then :meth:`OnlineApprentice.rescore` with a fitted model), on each store;
   also push and pop + acknowledge cost per URL and the SQLite file's bytes per
   waiting URL.
3. **Kill and resume**: one crawl with ``JOBDIR`` killed with SIGKILL at seeded
   random page counts and resumed until its budget, against an uninterrupted
   crawl with the same budget: pages fetched, re-fetches, URLs lost (link
   targets of fetched pages neither fetched nor in the frontier store, by
   request fingerprint) and ``PRAGMA integrity_check`` of both databases.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import time
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.utils.request import fingerprint

from focused.bench.runner import PROJECT_ROOT, CrawlSpec, run_crawl, scrapy_command, stats_path
from focused.bench.studies.rescoring import STORES, rescore_study
from focused.bench.wikiweb import HOST, bench_run, cpu_children, md_row, read_only, wiki_spec
from focused.frontier.settings import STORE_FILE
from focused.frontier.sqlite import DONE, IN_FLIGHT, WAITING

_PAGES_LINE = re.compile(rb"pages=(\d+) harvest=")
_IN_FLIGHT = re.compile(r"\((\d+) were in flight")


@dataclass(frozen=True)
class FrontierBenchConfig:
    """What to run; :meth:`quick` is the short smoke run."""

    out: Path
    budget: int = 1500
    rounds: int = 3
    strategies: tuple[str, ...] = ("apprentice", "baseline")
    concurrency: int = 8
    rescore_entries: int = 100_000
    kill_budget: int = 1000
    kills: int = 5
    seed: int = 0

    def quick(self) -> FrontierBenchConfig:
        return replace(self, budget=300, rounds=2, strategies=("apprentice",), rescore_entries=20_000, kill_budget=300)


def _spec(
    config: FrontierBenchConfig, proxy: str, name: str, strategy: str, max_pages: int, **settings: Any
) -> CrawlSpec:
    return wiki_spec(config.out, proxy, name, strategy, concurrency=config.concurrency, max_pages=max_pages, **settings)


def _fresh_jobdir(config: FrontierBenchConfig, name: str) -> Path:
    jobdir = config.out / "cache" / "jobs" / name
    shutil.rmtree(jobdir, ignore_errors=True)
    return jobdir


# ---------------------------------------------------------------------- 1. throughput


def throughput(config: FrontierBenchConfig, proxy: str) -> dict[str, Any]:
    """Per strategy: every run, then medians and the sqlite/memory ratios."""
    out: dict[str, Any] = {}
    for strategy in config.strategies:
        runs: dict[str, list[dict[str, Any]]] = {store: [] for store in STORES}
        for rnd in range(config.rounds):
            for store in STORES:
                name = f"throughput-{strategy}-{store}-{rnd}"
                extra = {"JOBDIR": str(_fresh_jobdir(config, name))} if store == "sqlite" else {}
                spec = _spec(config, proxy, name, strategy, config.budget, FOCUSED_FRONTIER_STORE=store, **extra)
                cpu = cpu_children()
                result = run_crawl(spec)
                cpu = cpu_children() - cpu
                pages = int(result.stats.get("focused/pages", 0))
                elapsed = float(result.stats.get("elapsed_time_seconds") or 0)
                runs[store].append(
                    {
                        "ok": result.returncode == 0,
                        "pages": pages,
                        "elapsed_s": round(elapsed, 2),
                        "wall_s": round(result.seconds, 2),
                        "pages_per_s": round(pages / elapsed, 2) if elapsed else None,
                        "cpu_ms_per_page": round(1000 * cpu / pages, 2) if pages else None,
                        "harvest": result.stats.get("focused/harvest_rate"),
                        "load": round(os.getloadavg()[0], 2),  # other work on the machine skews pages/s
                        "rescore_ms": result.stats.get("focused/apprentice/rescore_ms"),
                        **(_waiting(Path(extra["JOBDIR"]) / STORE_FILE) if extra else {}),
                    }
                )
        medians = {store: _medians(runs[store]) for store in STORES}
        out[strategy] = {
            "runs": runs,
            "median": medians,
            "ratio": {
                key: _ratio(medians["sqlite"][key], medians["memory"][key])
                for key in ("pages_per_s", "cpu_ms_per_page", "wall_s")
            },
        }
    return out


def _waiting(store: Path) -> dict[str, Any]:
    """Waiting URLs left in a store and their mean number of parents (payloads) each."""
    with closing(read_only(store)) as conn:
        n, parents = conn.execute("SELECT COUNT(*), AVG(p_n) FROM urls WHERE state = ?", (WAITING,)).fetchone()
    return {"waiting_left": n, "parents_per_waiting_url": round(parents or 0, 1)}


def _medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def med(key: str) -> float | None:
        values = [r[key] for r in runs if r["ok"] and r[key] is not None]
        return round(statistics.median(values), 3) if values else None

    keys = ("pages", "elapsed_s", "wall_s", "pages_per_s", "cpu_ms_per_page", "harvest", "rescore_ms", "load")
    return {key: med(key) for key in keys} | {"rounds": sum(r["ok"] for r in runs)}


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


# ---------------------------------------------------------------------- 2. kill and resume (re-scoring: rescoring.py)


def request_key(url: str) -> str:
    """The frontier store's key of a URL: its request fingerprint."""
    return fingerprint(Request(url)).hex()


def audit(crawl_db: Path, frontier_db: Path, host: str, *, only_acked: bool = False) -> dict[str, Any]:
    """A crawl database against its frontier store: integrity, states and lost URLs.

    A link target on ``host`` is *lost* when it is neither a fetched page nor a
    key of the store (waiting, in flight or done). With ``only_acked`` only the
    links of pages the store has acknowledged count: the invariant at any
    instant, even right after a kill (a page fetched but not yet acknowledged is
    fetched again, and its links found again).
    """
    with closing(read_only(crawl_db)) as db, closing(read_only(frontier_db)) as frontier:
        integrity = {
            "crawl_db": db.execute("PRAGMA integrity_check").fetchone()[0],
            "frontier": frontier.execute("PRAGMA integrity_check").fetchone()[0],
        }
        states: dict[str, int] = dict(frontier.execute("SELECT key, state FROM urls"))
        pages = {url: request_key(url) for (url,) in db.execute("SELECT url FROM pages")}
        links = db.execute("SELECT DISTINCT src, dst FROM links").fetchall()
    sources = {url for url, key in pages.items() if not only_acked or states.get(key) == DONE}
    # fetched, but waiting or in flight in the store (a kill came before its acknowledgement): fetched again
    # at the next resume, which finds its links again
    unacked = sum(1 for key in pages.values() if states.get(key, DONE) != DONE)
    targets = {dst for src, dst in links if src in sources and urlsplit(dst).hostname == host}
    fetched = set(pages.values())
    lost = sorted(url for url in targets if (key := request_key(url)) not in fetched and key not in states)
    counts = Counter(states.values())
    return {
        "pages": len(pages),
        "link_targets": len(targets),
        "waiting": counts[WAITING],
        "in_flight": counts[IN_FLIGHT],
        "done": counts[DONE],
        "lost": len(lost),
        "lost_examples": lost[:5],
        "fetched_not_acknowledged": unacked,
        "integrity": integrity,
    }


def _run_until(spec: CrawlSpec, pages: int, timeout: float = 600.0) -> tuple[int, str, int]:
    """Run ``spec`` (resuming) and SIGKILL it once its log reports ``pages`` pages (all runs together).

    Returns the exit code (``-SIGKILL`` if killed), the log and the last page count seen.
    """
    stats_path(spec).unlink(missing_ok=True)
    log = spec.db.with_suffix(f".{time.time_ns()}.log")
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="focused.settings")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    seen = 0
    with log.open("wb") as fh, log.open("rb") as tail:
        proc = subprocess.Popen(scrapy_command(spec), cwd=PROJECT_ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            for match in _PAGES_LINE.finditer(tail.read()):
                seen = int(match.group(1))
            if seen >= pages or time.monotonic() > deadline:
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.01)
        proc.wait()
    if proc.returncode == -signal.SIGKILL and seen < pages:
        raise RuntimeError(f"crawl {spec.name} made no progress in {timeout:.0f} s; log {log}")
    return proc.returncode, log.read_text(errors="replace"), seen


def kill_study(config: FrontierBenchConfig, proxy: str) -> dict[str, Any]:
    """Kill one crawl at seeded random page counts, resume it to its budget; an uninterrupted crawl to compare."""
    rng = random.Random(config.seed)
    targets = sorted(rng.sample(range(5, int(0.95 * config.kill_budget)), config.kills))
    out: dict[str, Any] = {"budget": config.kill_budget, "targets": targets}
    for name in ("uninterrupted", "killed"):
        jobdir = _fresh_jobdir(config, name)
        spec = _spec(config, proxy, name, "apprentice", config.kill_budget, JOBDIR=str(jobdir), FOCUSED_LOG_EVERY=1)
        for stale in (spec.db, Path(f"{spec.db}-wal"), Path(f"{spec.db}-shm")):
            stale.unlink(missing_ok=True)
        started = time.perf_counter()
        logs: list[str] = []
        kills: list[dict[str, Any]] = []
        for target in targets if name == "killed" else []:
            code, log, seen = _run_until(spec, target)
            logs.append(log)
            if code != -signal.SIGKILL:  # the budget was reached first
                break
            kills.append(
                {"target": target, "pages_logged": seen, **audit(spec.db, jobdir / STORE_FILE, HOST, only_acked=True)}
            )
        else:
            result = run_crawl(spec, resume=bool(logs))
            logs.append(result.log.read_text(errors="replace"))
        stats = json.loads(stats_path(spec).read_text()) if stats_path(spec).exists() else {}
        final = audit(spec.db, jobdir / STORE_FILE, HOST, only_acked=True)  # as at the kills: see audit()
        with closing(read_only(spec.db)) as db:
            mean_relevance = db.execute("SELECT AVG(relevance) FROM pages").fetchone()[0]
        per_run = [len(_PAGES_LINE.findall(log.encode())) for log in logs]
        for kill, log in zip(kills, logs[1:], strict=False):
            kill["requeued_at_resume"] = sum(int(n) for n in _IN_FLIGHT.findall(log))
        out[name] = {
            "runs": len(logs),
            "kills": len(kills),
            "seconds": round(time.perf_counter() - started, 1),
            "pages_fetched": sum(per_run),
            "duplicate_fetches": sum(per_run) - final["pages"],
            "requeued": sum(int(n) for log in logs for n in _IN_FLIGHT.findall(log)),
            "refetched_stat_last_run": stats.get("focused/frontier/refetched", 0),
            "pages_refetched_stat_last_run": stats.get("focused/pages_refetched", 0),
            "pages_per_run": per_run,
            "pages_stat": stats.get("focused/pages"),
            "harvest_rate": stats.get("focused/harvest_rate"),
            "mean_relevance_db": round(mean_relevance, 4) if mean_relevance is not None else None,
            "final": final,
            "at_kills": kills,
        }
    return out


# ---------------------------------------------------------------------- report


def run_frontier_bench(config: FrontierBenchConfig) -> dict[str, Any]:
    """Run the three studies through one replay of the rendered Wikipedia; write ``bench.json`` and ``bench.md``."""
    from focused.replay.load import open_store
    from focused.replay.server import ReplayServer

    with (
        bench_run(config, markdown) as (web, result),
        ReplayServer(open_store(web.warc, labels=web.labels)) as server,
    ):
        result["throughput"] = throughput(config, server.proxy_url)
        result["rescore"] = [
            rescore_study(config.rescore_entries, config.out / "cache", parents=parents, seed=config.seed)
            for parents in (1, 6)  # real waiting URLs have 6-7 parents
        ]
        result["kill"] = kill_study(config, server.proxy_url)
    return result


def _integrity(audit: dict[str, Any]) -> str:
    return "{crawl_db} / {frontier}".format(**audit["integrity"])


_THROUGHPUT = ("pages_per_s", "cpu_ms_per_page", "wall_s", "harvest", "rescore_ms", "load")
_RESCORE = ("rescore_s", "cpu_s", "store_io_s", "decode_s", "model_s", "push_us_per_link", "pop_ack_us_per_url")
_AT_KILL = ("pages_logged", "pages", "waiting", "in_flight", "requeued_at_resume", "lost")


def markdown(result: dict[str, Any]) -> str:
    """The tables of a :func:`run_frontier_bench` result."""
    c, machine = result["config"], result["machine"]
    lines = [
        "# Frontier store benchmark",
        "",
        f"Rendered Wikipedia replay, seed {c['seed_url']}, topic {c['topic']}, concurrency {c['concurrency']}; "
        f"{machine['cpus']} CPUs, Python {machine['python']}; {result['seconds']:.0f} s in all.",
        "",
        f"## Throughput: {c['budget']:,} pages a crawl, memory and SQLite alternating, median of {c['rounds']} rounds",
        "",
        "| strategy | store | pages/s | CPU ms/page | wall s | harvest | re-scoring ms | load | runs (pages/s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for strategy, t in result["throughput"].items():
        for store in STORES:
            runs = ", ".join(str(r["pages_per_s"]) for r in t["runs"][store])
            lines.append(md_row(strategy, store, *(t["median"][store][k] for k in _THROUGHPUT), runs))
        lines.append(md_row(strategy, "**sqlite/memory**", *(t["ratio"][k] for k in _THROUGHPUT[:3]), "", "", "", ""))
    parents = [r.get("parents_per_waiting_url") for t in result["throughput"].values() for r in t["runs"]["sqlite"]]
    lines += [
        "",
        "CPU: user + sys of the crawl process, its start-up (Scrapy, critic model) included; load: the machine's "
        "1-minute load average at the end of a crawl (above ~1.3 other work competed for the 2 CPUs, and pages/s "
        f"suffers more than CPU ms/page). Parents (payloads) per waiting URL left at the end of the SQLite crawls: "
        f"{', '.join(map(str, parents))}.",
        "",
        "## Re-scoring all waiting URLs through `FocusedScheduler.rescore` with a fitted apprentice",
        "",
        "| store | waiting URLs | parents each | re-score s | CPU s | store I/O | decode | model | push µs/link "
        "| pop+ack µs/URL | passes wall s | bytes/URL on disk | reopen s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for study in result["rescore"]:
        for store in STORES:
            s = study[store]
            passes = " / ".join(map(str, s["rescore_passes_s"]))
            extra = (s.get("bytes_per_waiting_url"), s.get("reopen_s"))
            lines.append(md_row(store, s["waiting"], study["parents"], *(s[k] for k in _RESCORE), passes, *extra))
    k = result["kill"]
    killed, both = k["killed"], (k["killed"], k["uninterrupted"])
    lines += [
        "",
        "Re-score: the pass of median CPU time of three (two models alternating, so that every pass changes the "
        "priorities), wall and CPU seconds, the CPU split into store I/O, payload decoding and model; push and "
        "pop + acknowledge in CPU µs. The goal: 100,000 waiting URLs of 6 parents re-scored in at most 1 s in "
        "memory and on SQLite.",
        "",
        f"## Kill -9 and resume: budget {k['budget']:,} pages, kills at {', '.join(map(str, k['targets']))} pages",
        "",
        "| | killed and resumed | uninterrupted |",
        "|---|---|---|",
        md_row("runs (kills)", *(f"{r['runs']} ({r['kills']})" for r in both)),
        md_row("pages fetched in all runs", *(r["pages_fetched"] for r in both)),
        md_row("pages fetched per run", *(" + ".join(map(str, r["pages_per_run"])) for r in both)),
        md_row("distinct pages in the crawl database", *(r["final"]["pages"] for r in both)),
        md_row("duplicate fetches (fetched − distinct)", *(r["duplicate_fetches"] for r in both)),
        md_row("in flight at a kill, re-queued on resume (log)", *(r["requeued"] for r in both)),
        md_row(
            "`focused/frontier/refetched` / `focused/pages_refetched` (last run)",
            *(f"{r['refetched_stat_last_run']} / {r['pages_refetched_stat_last_run']}" for r in both),
        ),
        md_row(
            "URLs lost (links of acknowledged pages, neither fetched nor in the store)",
            *(r["final"]["lost"] for r in both),
        ),
        md_row(
            "pages fetched but not acknowledged (to be fetched again at a resume, their links with them)",
            *(r["final"].get("fetched_not_acknowledged", "–") for r in both),
        ),
        md_row("`PRAGMA integrity_check` crawl db / frontier", *(_integrity(r["final"]) for r in both)),
        md_row("harvest (`focused/harvest_rate`)", *(r["harvest_rate"] for r in both)),
        md_row("mean relevance in the crawl database", *(r["mean_relevance_db"] for r in both)),
        md_row("wall s, all runs", *(r["seconds"] for r in both)),
        "",
        "| kill | at page (log) | pages in db | waiting | in flight | re-queued on resume "
        "| lost (links of acknowledged pages) | integrity crawl db / frontier |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, at in enumerate(killed["at_kills"], 1):
        lines.append(md_row(i, *(at.get(key) for key in _AT_KILL), _integrity(at)))
    return "\n".join(lines) + "\n"
