"""The crawl facts a job directory keeps (``JOBDIR/focused-crawl.json``): which crawl database a resumed
crawl continues. Plain JSON with a format version, written atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from focused.errors import ConfigError

JOB_FILE = "focused-crawl.json"
JOB_FORMAT = "focused.crawl"
JOB_VERSION = 1


def read_job(jobdir: str) -> dict[str, Any] | None:
    """The crawl facts kept in JOBDIR (``None`` for a new job); ConfigError for a damaged file."""
    path = Path(jobdir, JOB_FILE)
    if not path.exists():
        return None
    try:
        job = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} is damaged ({exc}); start the crawl with a new JOBDIR") from exc
    if not isinstance(job, dict) or job.get("format") != JOB_FORMAT:
        raise ConfigError(f"{path} is not a focused crawl file; start the crawl with a new JOBDIR")
    if job.get("format_version") != JOB_VERSION:
        raise ConfigError(
            f"{path} has format version {job.get('format_version')!r}, this focused reads {JOB_VERSION}; "
            "start the crawl with a new JOBDIR"
        )
    return job


def write_job(jobdir: str, job: dict[str, Any]) -> None:
    """Write the crawl facts atomically (a kill leaves the old file or the new one)."""
    path = Path(jobdir, JOB_FILE)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"format": JOB_FORMAT, "format_version": JOB_VERSION, **job}, indent=1))
    os.replace(tmp, path)
