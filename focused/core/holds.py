"""Holding the scheduler's requests back until something is done, and waking the engine after.

The scheduler hands out no request while a hold is open: a background re-score in strict best-first
(``FOCUSED_MAX_UNSCORED_PAGES`` 0: the re-scored priorities first), the apprentice's training with
``FOCUSED_APPRENTICE_WAIT`` (its model first; :data:`focused.signals.hold_frontier`). Each hold is a Deferred
and a reason; the engine is woken once the last one fires, since no download may be in flight to make it
ask again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from twisted.internet.defer import Deferred

from focused.core.enginestate import engine_nextcall

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.internet.base import DelayedCall

#: The reasons of holds, in the order :meth:`Holds.holding` names them when several are open.
REASONS = ("rescoring", "training")


class Holds:
    """The holds open on one scheduler; ``wake()`` is called when the last one is released."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self.wake = wake
        self._open = dict.fromkeys(REASONS, 0)

    def hold(self, reason: str, until: Deferred[Any]) -> None:
        """Hold requests back until ``until`` fires (with a result or a failure, which go on down its chain)."""
        if reason not in self._open:
            raise ValueError(f"unknown hold reason {reason!r}; valid: {', '.join(REASONS)}")
        self._open[reason] += 1

        def release(result: Any) -> Any:
            self._open[reason] -= 1
            if not self.holding():
                self.wake()
            return result

        until.addBoth(release)

    def holding(self) -> str | None:
        """The reason requests are held back now (the first of :data:`REASONS` with a hold open), or None."""
        return next((reason for reason, n in self._open.items() if n), None)


def wake_now(crawler: Crawler) -> None:
    """Have the engine ask for a request in this reactor turn's wake-up."""
    nextcall = engine_nextcall(crawler)
    if nextcall is not None:
        nextcall.schedule()


def wake_later(crawler: Crawler, delay: float, pending: DelayedCall | None) -> DelayedCall | None:
    """Have the engine ask for requests in ``delay`` seconds, unless ``pending`` (an earlier such call) is
    still to come; returns the call to keep."""
    if pending is not None and pending.active():
        return pending
    nextcall = engine_nextcall(crawler)
    if nextcall is None:
        return pending
    from twisted.internet import reactor

    call: DelayedCall = cast(Any, reactor).callLater(delay, nextcall.schedule)
    return call
