"""The Makefile installs only when needed: a stamp on the files pip installs from, and ``make install`` always.

The real Makefile runs in a copy of its inputs, with ``PIP`` replaced by ``echo`` (nothing is installed) and
stand-ins for ``redis-server`` and ``chromium`` on ``PATH`` (nothing is fetched from Debian).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from focused.bench.runner import PROJECT_ROOT

INPUTS = ("Makefile", "requirements.txt", "setup.py", "pyproject.toml")
STAMP = ".make/install.stamp"

pytestmark = pytest.mark.skipif(not shutil.which("make"), reason="make is not installed")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in INPUTS:
        shutil.copy(PROJECT_ROOT / name, tmp_path / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("redis-server", "chromium"):
        (bin_dir / tool).write_text("#!/bin/sh\n")
        (bin_dir / tool).chmod(0o755)
    return tmp_path


def make(project: Path, *targets: str) -> str:
    env = dict(os.environ, PATH=f"{project / 'bin'}{os.pathsep}{os.environ['PATH']}")
    env.pop("MAKEFLAGS", None)
    proc = subprocess.run(
        ["make", "--no-print-directory", "PIP=echo PIP", *targets],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def installs(output: str) -> int:
    return sum(line.startswith("PIP install") for line in output.splitlines())


def test_install_runs_pip_only_when_its_inputs_changed(project):
    assert installs(make(project, STAMP)) == 2  # first time: requirements, then the package
    assert (project / STAMP).is_file()
    assert installs(make(project, STAMP)) == 0  # nothing changed: no pip
    earlier = time.time() - 60  # an install a minute ago, then requirements.txt changes
    os.utime(project / STAMP, (earlier, earlier))
    (project / "requirements.txt").write_text((project / "requirements.txt").read_text() + "\n")
    assert installs(make(project, STAMP)) == 2  # a changed requirements.txt installs again
    assert installs(make(project, STAMP)) == 0
    assert installs(make(project, "install")) == 2  # `make install` always installs
    planned = make(project, "-n", "crawl")  # the demo's target: straight to the crawl, no pip
    assert "focused demo" in planned and "PIP" not in planned
    os.utime(project / STAMP, (earlier, earlier))
    assert "PIP install" in make(project, "-n", "crawl")  # ... unless an input is newer than the stamp


def test_make_clean_forgets_the_stamp(project):
    make(project, STAMP)
    make(project, "clean")
    assert not (project / ".make").exists()
    assert installs(make(project, STAMP)) == 2
