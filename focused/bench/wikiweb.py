"""What the frontier and distributed benchmarks share: the rendered Wikipedia replay they crawl, the
crawl's seed, topic and model, and the frame of a benchmark run (header, timing, report files)."""

from __future__ import annotations

import json
import os
import platform
import resource
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from focused.bench.runner import PROJECT_ROOT, CrawlSpec

HOST = "wikischools.test"
SEED_URL = f"http://{HOST}/wiki/Physics"
TOPIC = "Science.Physics"
MODEL = PROJECT_ROOT / "models" / "wiki-topics.npz"


def wiki_spec(
    out: Path,
    proxy: str,
    name: str,
    strategy: str,
    *,
    concurrency: int,
    max_pages: int = 0,
    spider: str = "focused",
    **settings: Any,
) -> CrawlSpec:
    """A crawl of the replay from the shared seed and topic; its database in ``out/cache/crawls``."""
    return CrawlSpec(
        name=name,
        topic=TOPIC,
        strategy=strategy,
        seeds=(SEED_URL,),
        model=MODEL,
        proxy=proxy,
        db=out / "cache" / "crawls" / f"{name}.sqlite",
        max_pages=max_pages,
        spider=spider,
        settings={"FOCUSED_REPLAY_CONCURRENCY": concurrency, **settings},
    )


def cpu_children() -> float:
    """User + system CPU seconds of the finished child processes (the crawls) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def read_only(path: Path) -> sqlite3.Connection:
    """A connection that changes nothing (no WAL recovery written back): the files stay as a kill left them."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def md_row(*cells: Any) -> str:
    """A Markdown table row: ``–`` for None, thousands separators for ints."""
    return "| " + " | ".join("–" if c is None else f"{c:,}" if isinstance(c, int) else str(c) for c in cells) + " |"


@contextmanager
def bench_run(config: Any, markdown: Callable[[dict[str, Any]], str]) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Build (or reuse) the replay web, yield it with the result dict to fill, then write ``bench.json``/``bench.md``.

    ``config`` is a benchmark's config dataclass with an ``out`` folder.
    """
    from focused.wiki.web import build_wiki_web

    config.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    web = build_wiki_web(out_dir=PROJECT_ROOT / "results" / "cache" / "wiki")
    result: dict[str, Any] = {
        "config": {**asdict(config), "out": str(config.out), "seed_url": SEED_URL, "topic": TOPIC},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_before": os.getloadavg()},
    }
    yield web, result
    result["machine"]["load_after"] = os.getloadavg()
    result["seconds"] = round(time.perf_counter() - started, 1)
    (config.out / "bench.json").write_text(json.dumps(result, indent=1))
    (config.out / "bench.md").write_text(markdown(result))
