"""The scheduler's background re-scores: read and score in a thread, apply a slice per reactor turn.

:meth:`~focused.core.scheduler.FocusedScheduler.rescore_background` starts one here. The store
fixes the entries waiting when it starts (:meth:`~focused.frontier.store.FrontierStore.rescore_start`);
a thread reads their payloads, decodes them and runs the scorer
(:class:`~focused.frontier.rescore.DecodingRescorer`); the new priorities are then written on the
reactor thread, :data:`RESCORE_APPLY` per turn, so that the crawl goes on between slices. Several
re-scores apply in the order they were asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from twisted.internet import task
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread

from focused import malloc
from focused.frontier.rescore import DecodingRescorer, Scorer
from focused.frontier.store import FrontierStore, RescoreJob

#: New priorities a background re-score writes per reactor turn.
RESCORE_APPLY = 10_000


def next_turn() -> Deferred[None]:
    """A Deferred that fires in the reactor's next turn."""
    from twisted.internet import reactor

    return task.deferLater(reactor, 0, lambda: None)


def _read_and_score(job: RescoreJob, rescorer: DecodingRescorer) -> list[tuple[Sequence[Any], Sequence[int | None]]]:
    """In the thread: each chunk's entries and new priorities, the temporaries from the heaps
    (:func:`focused.malloc.scratch`)."""
    with malloc.scratch():
        return [(ids, rescorer(blobs)) for ids, blobs in job.read()]


class BackgroundRescores:
    """The background re-scores of one scheduler, applied one after another.

    ``closed()`` says whether the scheduler has closed (a re-score still applying is then dropped: the store
    is closed) and ``count_bad(n)`` counts the waiting entries whose payloads were damaged.
    """

    def __init__(self, closed: Callable[[], bool], count_bad: Callable[[int], None]) -> None:
        self.closed = closed
        self.count_bad = count_bad
        self._tail: Deferred[None] | None = None  # fires when the last one asked for has finished

    def start(self, store: FrontierStore, scorer: Scorer) -> Deferred[int]:
        """Re-score the entries of ``store`` waiting now with ``scorer``; fires with how many changed."""
        job = store.rescore_start()
        bad_before = store.bad_payloads
        previous, finished = self._tail, Deferred[None]()
        self._tail = finished

        async def run() -> int:
            try:
                if previous is not None:
                    await previous
                rescorer = DecodingRescorer(scorer)
                parts = await deferToThread(_read_and_score, job, rescorer)
                changed = 0
                for ids, new in parts:
                    for start in range(0, len(ids), RESCORE_APPLY):
                        if self.closed():  # the store is closed: the re-score is dropped
                            return changed
                        part = slice(start, start + RESCORE_APPLY)
                        changed += job.apply(ids[part], new[part])
                        await next_turn()  # the reactor runs between slices
                job.close()  # the payloads the store could not unframe are counted by then
                self.count_bad(rescorer.bad + store.bad_payloads - bad_before)
                return changed
            finally:
                job.close()
                finished.callback(None)

        return Deferred.fromCoroutine(run())
