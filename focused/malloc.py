"""glibc's allocator set for a long crawl: large blocks in their own mappings, returned when freed.

glibc serves a request of ``M_MMAP_THRESHOLD`` bytes or more (128 KiB at start) with a mapping of its
own, which goes back to the kernel when it is freed, and smaller ones from its heaps, which keep freed
memory for reuse. The threshold is *dynamic*: each time a mapped block is freed, it rises to that block's
size (up to 32 MiB on 64 bits). A crawl frees large blocks all the time (a pickled critic sent to the
page-analysis worker, a page's link-id arrays, the apprentice's training temporaries, a re-score's
matrices), so after a few seconds every NumPy array and page text under some MiB comes from the heaps,
and the holes they leave between longer-lived blocks stay resident: in the 3,000-page default crawl of
``focused bench-speed`` the crawl process's resident set was a quarter larger than with the threshold
fixed (docs/results.md, "CPU and memory, before and after").

:func:`tune` fixes the threshold (and the heap's trim threshold, which glibc moves with it) at glibc's
starting value, so that it no longer moves; :func:`trim` returns the free memory of every heap to the
kernel (``malloc_trim``). Both do nothing, and say so, where the C library is not glibc (macOS, Windows,
musl). Scrapy-free, standard library only: the page-analysis worker calls them too.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import sys

__all__ = ["MMAP_THRESHOLD", "glibc", "trim", "tune"]

logger = logging.getLogger(__name__)

#: ``mallopt`` parameters (glibc's ``malloc.h``).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

#: Bytes from which a block gets a mapping of its own: glibc's starting value, fixed.
MMAP_THRESHOLD = 128 * 1024


@functools.cache
def glibc() -> ctypes.CDLL | None:
    """This process's C library when it is glibc on Linux (it has ``mallopt`` and ``malloc_trim``), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018 -- glibc's own: musl has neither it nor malloc_trim
        libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


def tune(mmap_threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap and trim thresholds at ``mmap_threshold`` bytes; whether it was done (glibc only).

    Called once, as early as the process can: blocks allocated before stay where they are.
    """
    libc = glibc()
    if libc is None:
        return False
    done = bool(libc.mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(libc.mallopt(M_TRIM_THRESHOLD, mmap_threshold))
    if not done:
        logger.debug("glibc refused the malloc thresholds (%d bytes)", mmap_threshold)
    return done


def trim() -> bool:
    """Give the free memory of every heap back to the kernel; whether any was (False without glibc)."""
    libc = glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
