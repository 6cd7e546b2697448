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

:func:`tune` fixes the threshold at glibc's starting value (the page-analysis worker, which reads one page at
a time, at :data:`SCRATCH_THRESHOLD`), so that it no longer moves (and the heaps' trim threshold, which glibc
moves with it, at :data:`TRIM_THRESHOLD`); :func:`trim` returns the free memory of every
heap to the kernel (``malloc_trim``). A mapping costs a page fault per 4 KiB when first written, which the
array work of a fit or a re-score paid thousands of times over: :func:`scratch` lets such a stretch of work take
its temporaries from the heaps, and trims them when it ends. All do nothing, and say so, where the C library is
not glibc (macOS, Windows, musl). Scrapy-free, standard library only: the page-analysis worker calls them too.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["MMAP_THRESHOLD", "SCRATCH_THRESHOLD", "TRIM_THRESHOLD", "glibc", "scratch", "trim", "tune"]

logger = logging.getLogger(__name__)

#: ``mallopt`` parameters (glibc's ``malloc.h``).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

#: Bytes from which a block gets a mapping of its own: glibc's starting value, fixed.
MMAP_THRESHOLD = 128 * 1024
#: Free bytes at the top of a heap kept for the next blocks rather than given back at once (glibc's trim
#: threshold): a page's parse in the worker frees and takes again a few MB a page, each page of it faulted in
#: afresh when given back (the crawl process trims its heaps every few hundred responses anyway).
TRIM_THRESHOLD = 16 << 20
#: Inside :func:`scratch`, blocks below this many bytes come from the heaps (NumPy maps larger ones with huge pages).
SCRATCH_THRESHOLD = 2 << 20


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


def tune(mmap_threshold: int = MMAP_THRESHOLD, trim_threshold: int = TRIM_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at ``mmap_threshold`` bytes and its trim threshold at ``trim_threshold``;
    whether it was done (glibc only). :func:`scratch` works from then on.

    Called once, as early as the process can: blocks allocated before stay where they are.
    """
    libc = glibc()
    if libc is None:
        return False
    done = bool(libc.mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(libc.mallopt(M_TRIM_THRESHOLD, trim_threshold))
    with _scratch.lock:
        _scratch.threshold = mmap_threshold if done else None
    if not done:
        logger.debug("glibc refused the malloc thresholds (%d and %d bytes)", mmap_threshold, trim_threshold)
    return done


class _Scratch:
    """The open :func:`scratch` scopes of this process, and the mmap threshold :func:`tune` fixed (None: not tuned)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open = 0
        self.threshold: int | None = None


_scratch = _Scratch()


@contextmanager
def scratch() -> Iterator[None]:
    """A stretch of array work (an apprentice's fit, a re-score) whose temporaries come from the heaps.

    With the mmap threshold fixed (:func:`tune`), each NumPy temporary of 128 KiB or more is a fresh mapping,
    every 4 KiB page of it zeroed and faulted in when first written, and unmapped when freed: a fit or a
    re-score makes thousands of them, and in a crawl faulting them in took two thirds as much CPU as their
    arithmetic (docs/results.md, "CPU per page"). While a scope
    is open (in any thread), blocks below :data:`SCRATCH_THRESHOLD` come from the heaps, whose pages the next
    temporary reuses; when the last scope closes, the threshold is fixed again and the heaps are trimmed
    (:func:`trim`), so that what the work left free goes back to the kernel. Nothing changes where
    :func:`tune` was not done (glibc's own moving threshold keeps such blocks in the heaps already).
    """
    libc = glibc()
    with _scratch.lock:
        fixed = _scratch.threshold if libc is not None else None  # None: not tuned, nothing to do
        if fixed is not None and libc is not None:
            _scratch.open += 1
            if _scratch.open == 1:
                libc.mallopt(M_MMAP_THRESHOLD, max(fixed, SCRATCH_THRESHOLD))
    try:
        yield
    finally:
        if fixed is not None and libc is not None:
            with _scratch.lock:
                _scratch.open -= 1
                last = _scratch.open == 0
                if last:
                    libc.mallopt(M_MMAP_THRESHOLD, fixed)
            if last:
                trim()


def trim() -> bool:
    """Give the free memory of every heap back to the kernel; whether any was (False without glibc)."""
    libc = glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
