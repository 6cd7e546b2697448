"""A process killed with SIGKILL (kill -9) at a point of its own choosing, as a crash would kill it.

Tests of what survives a kill run a short script in a new Python process: :func:`run_killed` runs it, and
right after its last line the process prints ``ready`` and sends itself SIGKILL (no ``finally``, no
``atexit``, no commit at close); it checks that the script got that far and died of the signal. The test
then opens what the script wrote and checks what survived.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

#: What runs after the script's last line: it got this far, then dies as kill -9 kills it.
_KILL = '\nprint("ready", flush=True); __import__("os").kill(__import__("os").getpid(), 9)\n'

ROOT = Path(__file__).resolve().parents[1]


def run_killed(script: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run ``script`` with ``args`` (``sys.argv[1:]``) in a new process from the project's root (``tests`` can
    be imported), then kill it with SIGKILL; assert that it got to its end and died of the signal (a script
    that failed before shows its error)."""
    proc = subprocess.run(
        [sys.executable, "-c", script + _KILL, *map(str, args)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert proc.returncode == -signal.SIGKILL and "ready" in proc.stdout, proc.stderr[-3000:]
    return proc
