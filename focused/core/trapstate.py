"""What a crawl has learned about crawler traps, shared by the trap components of one crawl.

Plain Python: the near-duplicate index of page fingerprints and, per URL
pattern (the URL with digits and query values blanked, e.g. a calendar's
``host/calendar/0/0``), how many of its pages came out near-duplicates. A
pattern whose pages are mostly near-duplicates is a trap: its URLs still
waiting in the frontier are not fetched (:mod:`focused.downloadermiddlewares.trapguard`).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlsplit

from focused.page.simhash import SimHashIndex
from focused.settings.access import setting

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

_ATTR = "_focused_trap_state"
_DIGITS = re.compile(r"\d+")


def url_pattern(url: str) -> str:
    """``url`` with every run of digits read as ``0`` and query values dropped (keys kept, sorted)."""
    parts = urlsplit(url)
    keys = sorted({key for key, _ in parse_qsl(parts.query, keep_blank_values=True)})
    path = _DIGITS.sub("0", parts.path or "/")
    return f"{(parts.hostname or '').lower()}{path}" + (f"?{'&'.join(keys)}" if keys else "")


class TrapState:
    """Near-duplicate fingerprints and per-pattern counts of one crawl.

    ``pattern_duplicates``: a pattern becomes a trap once at least this many of
    its pages were near-duplicates and they are the majority of its fetched
    pages (0: never).
    """

    def __init__(self, distance: int = 3, pattern_duplicates: int = 3) -> None:
        self.index = SimHashIndex(distance)
        self.pattern_duplicates = pattern_duplicates
        self._counts: dict[str, list[int]] = {}  # pattern -> [pages, near-duplicates]
        self.traps: set[str] = set()

    @classmethod
    def of(cls, crawler: Crawler) -> TrapState:
        """The state of ``crawler``'s crawl, created on first use from its settings."""
        state = getattr(crawler, _ATTR, None)
        if state is None:
            settings = crawler.settings
            state = cls(
                setting(settings, "FOCUSED_NEAR_DUPLICATE_BITS"),
                setting(settings, "FOCUSED_TRAP_PATTERN_DUPLICATES"),
            )
            setattr(crawler, _ATTR, state)
        return state

    def page(self, url: str, fingerprint: int | None) -> bool:
        """Record a fetched page; True if it is a near-duplicate of an earlier page."""
        pattern = url_pattern(url)
        counts = self._counts.setdefault(pattern, [0, 0])
        counts[0] += 1
        duplicate = fingerprint is not None and self.index.add(fingerprint)
        if duplicate:
            counts[1] += 1
            if (
                self.pattern_duplicates
                and pattern not in self.traps
                and counts[1] >= self.pattern_duplicates
                and 2 * counts[1] > counts[0]
            ):
                self.traps.add(pattern)
                logger.info(
                    "URL pattern %s looks like a crawler trap (%d of its %d pages are near-duplicates): "
                    "its waiting URLs are dropped",
                    pattern,
                    counts[1],
                    counts[0],
                )
        return duplicate

    def is_trap(self, url: str) -> bool:
        return bool(self.traps) and url_pattern(url) in self.traps
