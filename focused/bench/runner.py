"""Run one real Scrapy crawl of a replayed web in a subprocess.

Each crawl is a fresh ``scrapy crawl focused`` process (Twisted's reactor runs
once per process), pointed at a replay proxy with the ``replay`` profile, and
writing its own crawl database, from which the benchmark computes its figures.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class CrawlSpec:
    """Everything that defines one benchmark crawl."""

    name: str
    topic: str
    strategy: str
    seeds: tuple[str, ...]
    model: Path
    proxy: str
    db: Path
    max_pages: int
    labels: Path | None = None
    spider: str = "focused"
    settings: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class CrawlResult:
    spec: CrawlSpec
    returncode: int
    seconds: float
    log: Path
    stats: dict[str, Any]


def stats_path(spec: CrawlSpec) -> Path:
    return spec.db.with_suffix(".stats.json")


def spec_path(spec: CrawlSpec) -> Path:
    """Where :func:`run_crawl` records what the crawl was asked (:func:`spec_record`), for ``--reuse``."""
    return spec.db.with_suffix(".spec.json")


def spec_record(spec: CrawlSpec) -> dict[str, Any]:
    """What makes two crawls of a bench the same crawl: everything in the spec but its replay proxy's
    address (a port of the moment) and the database's place (JSON-ready)."""
    return {
        "spider": spec.spider,
        "topic": spec.topic,
        "strategy": spec.strategy,
        "seeds": list(spec.seeds),
        "model": Path(spec.model).name,
        "max_pages": spec.max_pages,
        "labels": None if spec.labels is None else Path(spec.labels).name,
        "settings": {key: str(value) for key, value in sorted(spec.settings.items())},
    }


def scrapy_command(spec: CrawlSpec) -> list[str]:
    cmd = [sys.executable, "-m", "scrapy", "crawl", spec.spider]
    settings: dict[str, object] = {
        "FOCUSED_PROFILE": "replay",
        "FOCUSED_REPLAY_PROXY": spec.proxy,
        "FOCUSED_MAX_PAGES": spec.max_pages,
        "FOCUSED_DB": str(spec.db),
        "FOCUSED_STATS_FILE": str(stats_path(spec)),
        "LOG_LEVEL": "INFO",
    }
    if spec.spider == "focused":
        cmd += ["-a", f"topic={spec.topic}", "-a", f"strategy={spec.strategy}"]
        cmd += ["-a", f"seeds={','.join(spec.seeds)}", "-a", f"model={spec.model}"]
        if spec.labels:
            cmd += ["-a", f"labels={spec.labels}"]
    else:
        cmd += ["-a", f"seeds={','.join(spec.seeds)}"]
    settings.update(spec.settings)
    for key, value in settings.items():
        cmd += ["-s", f"{key}={value}"]
    return cmd


def run_crawl(spec: CrawlSpec, *, timeout: float = 900.0, stream: bool = False, resume: bool = False) -> CrawlResult:
    """Run ``spec`` to completion; the log goes next to the crawl database.

    With ``stream`` the crawl's log is also copied to this process's stdout.
    A crawl database left by an earlier run is removed first, unless
    ``resume`` (a ``JOBDIR`` crawl going on: it continues its database).
    """
    spec.db.parent.mkdir(parents=True, exist_ok=True)
    stale = [stats_path(spec), spec_path(spec)]
    if not resume:
        stale += [spec.db, Path(f"{spec.db}-wal"), Path(f"{spec.db}-shm")]
    for path in stale:
        path.unlink(missing_ok=True)
    log = spec.db.with_suffix(".log")
    if resume and log.exists():
        log = log.with_suffix(f".{int(time.time() * 1000)}.log")
    spec_path(spec).write_text(json.dumps(spec_record(spec), indent=1) + "\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    env.setdefault("SCRAPY_SETTINGS_MODULE", "focused.settings")
    start = time.perf_counter()
    with log.open("w") as fh:
        if stream:
            with subprocess.Popen(
                scrapy_command(spec),
                cwd=PROJECT_ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            ) as proc:
                assert proc.stdout is not None
                for line in proc.stdout:
                    fh.write(line)
                    sys.stdout.write(line)
            returncode = proc.returncode
        else:
            returncode = subprocess.run(
                scrapy_command(spec),
                cwd=PROJECT_ROOT,
                env=env,
                stdout=fh,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
            ).returncode
    seconds = time.perf_counter() - start
    stats: dict[str, Any] = {}
    if stats_path(spec).exists():
        stats = json.loads(stats_path(spec).read_text())
    if returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        logger.error("crawl %s failed (exit %d); log %s:\n%s", spec.name, returncode, log, tail)
    return CrawlResult(spec, returncode, seconds, log, stats)
