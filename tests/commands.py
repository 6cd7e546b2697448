"""Running ``scrapy crawl focused`` as a user does, in a child process, for the tests of its command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from focused.bench.runner import PROJECT_ROOT


def scrapy_crawl(*args: str, cwd: Path = PROJECT_ROOT, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``scrapy crawl focused ARGS`` run from ``cwd`` with this checkout's ``focused`` first on the path; its
    exit status and output (never raises on a failing crawl)."""
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "focused", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
