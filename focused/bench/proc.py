"""What the kernel says of a running process (Linux ``/proc``): the bench's memory figures."""

from __future__ import annotations

from pathlib import Path


def vm_hwm_kb(pid: int | str = "self") -> int:
    """The peak resident set size (``VmHWM``) of a running process in KB; 0 if it is gone."""
    return _status_kb(pid, "VmHWM")


def vm_rss_kb(pid: int | str = "self") -> int:
    """The resident set size (``VmRSS``) of a running process now, in KB; 0 if it is gone."""
    return _status_kb(pid, "VmRSS")


def _status_kb(pid: int | str, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0
