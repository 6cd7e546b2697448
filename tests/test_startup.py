"""What ``scrapy crawl focused`` and ``focused`` import as they start: not the modules that only some crawls or
commands use (Redis's client, aiohttp's web server behind Scrapy's remote control when it is off, SciPy's
optimiser and special functions of the critic's training, the topic-from-examples training). Every crawl
and command of the test suite and of the bench starts a process that pays for what it imports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from focused.bench.runner import PROJECT_ROOT

#: Modules a crawl without Redis, remote control or examples must not import as it starts.
NOT_AT_CRAWL_START = ("redis", "aiohttp", "scipy.special", "scipy.optimize", "sklearn")
#: Modules ``focused --help`` (every command's parser) must not import.
NOT_AT_HELP = ("numpy", "scipy", "scrapy", "redis", "sklearn", "focused.core.examples", "focused.core.background")
#: A whole crawl that ends at once: its one seed is refused (an internal address).
CRAWL = ("crawl", "focused", "-a", "topic=course", "-a", "seeds=http://127.0.0.1:9/", "-s", "FOCUSED_DB=")

#: Runs ``python -m MODULE ARGS`` and writes the names of the modules loaded at exit to the file ``OUT``.
_RUNNER = """
import atexit, runpy, sys
out, module, *args = sys.argv[1:]
atexit.register(lambda: open(out, "w").write("\\n".join(sorted(sys.modules))))
sys.argv = [module, *args]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def modules_of(tmp_path: Path, module: str, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``python -m MODULE ARGS`` from the project's folder: its result, and every module it had loaded when
    it exited."""
    out = tmp_path / "modules.txt"
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(out), module, *args],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return proc, set(out.read_text().split()) if out.exists() else set()


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` (packages: any of their modules) are among ``modules``."""
    return sorted(name for name in names if any(m == name or m.startswith(f"{name}.") for m in modules))


def test_a_crawl_starts_without_what_it_does_not_use(tmp_path: Path) -> None:
    """A whole crawl, from the spider's settings to its end (its one seed refused as an internal address): it
    built the downloader, the extensions and the strategy, and imported none of :data:`NOT_AT_CRAWL_START`."""
    proc, modules = modules_of(tmp_path, "scrapy", *CRAWL)
    assert proc.returncode == 1 and "the seed failed: http://127.0.0.1:9/" in proc.stderr, proc.stderr[-3000:]
    for used in ("scrapy.core.downloader.handlers.http11", "focused.strategies.apprentice", "focused.pipelines"):
        assert used in modules, used  # the crawl got as far as this
    assert loaded(modules, NOT_AT_CRAWL_START) == []


def test_remote_control_asked_for_is_imported(tmp_path: Path) -> None:
    """``-s REMOTE_CONTROL_ENABLED=True``: Scrapy's remote control is loaded (and aiohttp with it), so the
    test above can fail; that it then listens is tests/test_start_checks.py's."""
    proc, modules = modules_of(tmp_path, "scrapy", *CRAWL, "-s", "REMOTE_CONTROL_ENABLED=True")
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "scrapy.extensions.remote_control" in modules
    assert loaded(modules, NOT_AT_CRAWL_START) == ["aiohttp"]


def test_focused_help_imports_no_command_s_work(tmp_path: Path) -> None:
    """``focused --help`` builds every command's parser and imports none of :data:`NOT_AT_HELP`."""
    proc, modules = modules_of(tmp_path, "focused", "--help")
    assert proc.returncode == 0 and "train-topic" in proc.stdout, proc.stderr[-3000:]
    assert "focused.commands.train_topic" in modules
    assert loaded(modules, NOT_AT_HELP) == []


def test_scrapy_crawl_help_imports_no_numpy(tmp_path: Path) -> None:
    """``scrapy crawl -h`` (and every other Scrapy command of the project, which imports our ``crawl``
    command's module) does not import numpy, SciPy or Redis's client."""
    proc, modules = modules_of(tmp_path, "scrapy", "crawl", "-h")
    assert proc.returncode == 0 and "scrapy crawl focused -a topic=NAME" in proc.stdout, proc.stderr[-3000:]
    assert "focused.scrapy_commands.crawl" in modules
    assert loaded(modules, ("numpy", "scipy", "redis", "aiohttp")) == []
