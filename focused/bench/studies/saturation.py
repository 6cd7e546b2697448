"""How many workers one Redis carries: simulated workers drive only the frontier protocol against one Redis.

Each worker is a process with its own :class:`~focused.frontier.redis.RedisStore`
(the crawler's own code, scripts and call pattern), looping as a crawler
process does for every page: pop one URL, push the page's links in one call,
acknowledge the URL (sent with the next pop). No fetching, parsing or
scoring, so the figure is Redis's (and the protocol's) ceiling, not a
crawl's: the pages/s the frontier can serve when the workers ask as fast as
they can.

The synthetic web: every page has :data:`LINKS` links; :data:`NEW_LINKS` of
them to URLs never seen, the others to a fixed set of :data:`HOT_URLS`
popular URLs (merged while they wait, dropped once fetched), about the mix
of a Wikipedia crawl (7 new, 21 merged, 26 seen per page; ``focused
bench-distributed``). Requests are JSON of a crawl's size, each link carries
a payload of :data:`PAYLOAD_BYTES` bytes.

Figures, never asserted: pages/s of all workers together over
``seconds``, the client calls per page (counted in each worker), and Redis's
own CPU per page (``INFO cpu``), whose inverse is the ceiling of one Redis
with a core to itself. The ``per-link`` rows replay the call pattern before
the batching (one push call per link and a ``ZCARD`` per new URL, a separate
acknowledgement) on the same scripts.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import redis

LINKS = 54
NEW_LINKS = 7
HOT_URLS = 20_000
PAYLOAD_BYTES = 96
#: waiting URLs before the workers start, so that no pop finds the frontier empty
SEED_URLS = 20_000


@dataclass(frozen=True)
class SaturationConfig:
    """What to run: every worker count for ``seconds`` (after ``warmup``), in each call pattern."""

    workers: tuple[int, ...] = (1, 2, 4, 8)
    seconds: float = 6.0
    warmup: float = 1.0
    per_link_workers: tuple[int, ...] = (1, 4)

    def quick(self) -> SaturationConfig:
        return replace(self, workers=(1, 2), seconds=2.0, warmup=0.5, per_link_workers=(1,))


def _request(url: str, priority: int) -> dict[str, Any]:
    """A request as the crawler stores it: about the size of a real one."""
    return {
        "url": url,
        "priority": priority,
        "callback": "parse",
        "meta": {"depth": 3, "focused_score": 0.412345, "link_text": "a few anchor words"},
        "headers": {"Referer": ["http://wikischools.test/wiki/Some_page_that_linked"]},
    }


def _url(i: int | str) -> str:
    return f"http://wikischools.test/wiki/Page_{i}"


class _Counting:
    """Counts the calls a client sends (each one round trip: the store uses no pipelines on this path)."""

    def __init__(self, client: redis.Redis) -> None:
        self.calls = 0
        send = client.execute_command

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return send(*args, **kwargs)

        client.execute_command = counted  # type: ignore[method-assign]


def _worker(url: str, prefix: str, pattern: str, index: int, config: SaturationConfig, go: Any, out: Any) -> None:
    """One simulated worker: once ``go`` is set, pop, push the page's links, acknowledge, counting the pages
    and calls after the warm-up."""
    from focused.frontier.redis import RedisStore, connect
    from focused.frontier.store import Push, PushResult

    client = connect(url)
    counter = _Counting(client)
    store = RedisStore(client, prefix=prefix, encode=json.dumps, decode=json.loads)
    payload = bytes(range(PAYLOAD_BYTES))
    rng_state = index * 7919 + 1
    pages = calls0 = fresh = 0
    out.put("ready")
    go.wait()
    start = time.monotonic() + config.warmup
    stop = start + config.seconds
    counting = False
    while (now := time.monotonic()) < stop:
        if not counting and now >= start:
            counting, calls0, pages = True, counter.calls, 0
        popped = store.pop_many(1)
        if not popped:
            continue
        pushes = []
        for _ in range(NEW_LINKS):
            fresh += 1
            key = f"new-{index}-{fresh}"
            pushes.append(Push(key, _request(_url(key), 500), 500, payload))
        for _ in range(LINKS - NEW_LINKS):
            rng_state = (rng_state * 1103515245 + 12345) & 0x7FFFFFFF
            key = f"hot-{rng_state % HOT_URLS}"
            pushes.append(Push(key, _request(_url(key), rng_state % 1000), rng_state % 1000, payload))
        if pattern == "batched":
            store.push_many(pushes)
            store.ack_many([popped[0].key])
        else:  # before the batching: a call per link, a ZCARD per new URL, the acknowledgement on its own
            for push in pushes:
                if store.push_many([push])[0] is PushResult.NEW:
                    len(store)
            store.ack_many([popped[0].key])
            store._send_acks()  # at once, in a call of its own, as before
        pages += 1
    calls = counter.calls - calls0 if counting else 0
    store.close()
    out.put({"pages": pages, "calls": calls})


def _seed(client: redis.Redis, url: str, prefix: str) -> None:
    from focused.frontier.redis import RedisStore, connect
    from focused.frontier.store import Push

    client.flushdb()
    store = RedisStore(connect(url), prefix=prefix, encode=json.dumps, decode=json.loads)
    for lo in range(0, SEED_URLS, 1000):
        store.push_many([Push(f"seed-{i}", _request(_url(f"s{i}"), 100), 100) for i in range(lo, lo + 1000)])
    store.close()


def _redis_cpu(client: redis.Redis) -> float:
    info: dict[str, Any] = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def run_one(url: str, workers: int, pattern: str, config: SaturationConfig) -> dict[str, Any]:
    """``workers`` processes for ``config.seconds`` on a frontier seeded afresh."""
    client = redis.Redis.from_url(url)
    prefix = f"saturation-{pattern}-{workers}"
    _seed(client, url, prefix)
    ctx = multiprocessing.get_context("fork")  # nothing runs in this process meanwhile: no thread to copy
    queue, go = ctx.Queue(), ctx.Event()
    procs = [
        ctx.Process(target=_worker, args=(url, prefix, pattern, i, config, go, queue), daemon=True)
        for i in range(workers)
    ]
    for proc in procs:
        proc.start()
    for _ in procs:
        queue.get(timeout=120)  # connected: then all start together
    go.set()
    time.sleep(config.warmup)
    cpu = _redis_cpu(client)
    time.sleep(config.seconds)
    cpu = _redis_cpu(client) - cpu
    results = [queue.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    pages = sum(r["pages"] for r in results)
    calls = sum(r["calls"] for r in results)
    client.flushdb()
    client.close()
    return {
        "workers": workers,
        "pattern": pattern,
        "pages": pages,
        "pages_per_s": round(pages / config.seconds, 1),
        "calls_per_page": round(calls / pages, 2) if pages else None,
        "redis_cpu_ms_per_page": round(1000 * cpu / pages, 3) if pages else None,
        "redis_busy": round(cpu / config.seconds, 2),
        "ceiling_pages_per_s": round(pages / cpu) if cpu > 0 else None,
        "load": round(os.getloadavg()[0], 2),
    }


def saturation_study(url: str, config: SaturationConfig) -> dict[str, Any]:
    """Every worker count in the batched call pattern, then the per-link rows."""
    runs = [run_one(url, n, "batched", config) for n in config.workers]
    runs += [run_one(url, n, "per-link", config) for n in config.per_link_workers]
    return {"config": asdict(config), "cpus": os.cpu_count(), "runs": runs}


def markdown(result: dict[str, Any], heading: str = "##") -> str:
    """The table of a :func:`saturation_study` result."""
    c = result["config"]
    lines = [
        f"{heading} Saturation: simulated workers driving only the frontier protocol on one Redis",
        "",
        f"Each worker a process: pop one URL, push its page's {LINKS} links ({NEW_LINKS} new), acknowledge; "
        f"{c['seconds']:g} s per row after {c['warmup']:g} s of warm-up, on {result['cpus']} CPUs shared by the "
        "workers and Redis.",
        "",
        "| workers | call pattern | pages/s | client calls/page | Redis CPU ms/page | Redis busy | "
        "ceiling pages/s (Redis on one core) | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["runs"]:
        cells = [
            r["workers"],
            r["pattern"],
            r["pages_per_s"],
            r["calls_per_page"],
            r["redis_cpu_ms_per_page"],
            f"{100 * r['redis_busy']:.0f}%",
            r["ceiling_pages_per_s"],
            r["load"],
        ]
        lines.append("| " + " | ".join("–" if x is None else str(x) for x in cells) + " |")
    lines += [
        "",
        "Ceiling: pages over Redis's own CPU seconds (`INFO cpu`), the pages/s one Redis serves once it has a "
        "core to itself; `per-link`: the call pattern before the batching (a push call per link, a `ZCARD` per "
        "new URL, a separate acknowledgement) on the same scripts.",
    ]
    return "\n".join(lines) + "\n"


def write(result: dict[str, Any], out: Path) -> Path:
    """``saturation.md`` and ``saturation.json`` in ``out``; returns the Markdown's path."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "saturation.json").write_text(json.dumps(result, indent=2) + "\n")
    path = out / "saturation.md"
    path.write_text(markdown(result, heading="#"))
    return path
