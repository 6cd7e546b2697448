"""A real Scrapyd on a free loopback port in a folder of its own, for tests.

Scrapyd runs as ``python -m scrapyd`` in ``root`` with its own ``scrapyd.conf``
(eggs, logs, items and dbs under ``root``), without ``PYTHONPATH``: its jobs
import ``focused`` from the deployed egg, not from the checkout. A Scrapyd that
cannot start is a test failure that says why (its output), never a skip; Scrapyd
or scrapyd-client not installed is a skip that says so, a failure under CI
(:mod:`tests.require`).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.require import require_package

CONF = """\
[scrapyd]
bind_address = 127.0.0.1
http_port = {port}
eggs_dir = {root}/eggs
logs_dir = {root}/logs
items_dir = {root}/items
dbs_dir = {root}/dbs
jobs_dir = {root}/jobs
poll_interval = 0.2
max_proc = 2
"""
#: What an egg is built from: the project's packaging files and packages.
PROJECT_FILES = ("scrapy.cfg", "setup.py", "pyproject.toml", "README.md", "focused", "models")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clean_env() -> dict[str, str]:
    """This environment without what would make Scrapyd's jobs import the checkout or another project."""
    drop = ("PYTHONPATH", "SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT")
    return {k: v for k, v in os.environ.items() if k not in drop}


class ScrapydServer:
    """Start with :meth:`start` (or ``with``), stop with :meth:`stop`."""

    def __init__(self, root: Path) -> None:
        require_package("scrapyd")
        require_package("scrapyd_client")
        self.root = root
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.output = root / "scrapyd.out"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def __enter__(self) -> ScrapydServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, attempts: int = 3, timeout: float = 30.0) -> None:
        """Start Scrapyd; a port taken between choosing and binding it is retried on another."""
        self.root.mkdir(parents=True, exist_ok=True)
        problem = ""
        for _ in range(attempts):
            self.port = free_port()
            (self.root / "scrapyd.conf").write_text(CONF.format(port=self.port, root=self.root))
            with self.output.open("wb") as out:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "scrapyd"], cwd=self.root, env=clean_env(), stdout=out, stderr=out
                )
            problem = self._wait_ready(timeout)
            if not problem:
                return
            self.stop()
            if "Address already in use" not in problem:
                break
        pytest.fail(f"Scrapyd did not start: {problem}")

    def _wait_ready(self, timeout: float) -> str:
        """Empty once Scrapyd answers; else what went wrong."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return f"exit code {self.process.returncode}: {self.tail()}"
            try:
                if self.get("daemonstatus.json").get("status") == "ok":
                    return ""
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        return f"no answer on {self.url} after {timeout:.0f} s: {self.tail()}"

    def tail(self, chars: int = 3000) -> str:
        return self.output.read_text(errors="replace")[-chars:] if self.output.exists() else "(no output)"

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)

    def get(self, endpoint: str, **params: str) -> dict[str, Any]:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(self.url + endpoint + query, timeout=30) as response:
            return json.loads(response.read())

    def post(self, endpoint: str, fields: list[tuple[str, str]]) -> dict[str, Any]:
        """POST form fields (a list: ``setting`` may repeat); a Scrapyd error fails the test with its message."""
        data = urllib.parse.urlencode(fields).encode()
        with urllib.request.urlopen(self.url + endpoint, data=data, timeout=60) as response:
            answer = json.loads(response.read())
        assert answer.get("status") == "ok", answer
        return answer

    def wait_finished(self, project: str, jobs: set[str], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            finished = {job["id"] for job in self.get("listjobs.json", project=project)["finished"]}
            if jobs <= finished:
                return
            time.sleep(0.2)
        pytest.fail(f"Scrapyd jobs {sorted(jobs)} not finished after {timeout:.0f} s: {self.tail()}")


def copy_project(source: Path, dest: Path) -> Path:
    """The files an egg is built from, copied, so that building writes nothing into the checkout."""
    dest.mkdir(parents=True)
    for name in PROJECT_FILES:
        path = source / name
        if path.is_dir():
            shutil.copytree(path, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, dest / name)
    return dest


def deploy(project_dir: Path, url: str, version: str) -> dict[str, Any]:
    """``scrapyd-deploy`` the project to ``url`` (a ``[deploy:test]`` target added to its scrapy.cfg)."""
    with (project_dir / "scrapy.cfg").open("a") as cfg:
        cfg.write(f"\n[deploy:test]\nurl = {url}\n")
    result = subprocess.run(
        [sys.executable, "-m", "scrapyd_client.deploy", "test", "--version", version],
        cwd=project_dir,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"scrapyd-deploy failed:\n{result.stdout}\n{result.stderr}"
    return json.loads(result.stdout)
