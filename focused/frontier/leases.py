"""Requests popped from the frontier and not yet acknowledged: the scheduler's leases.

A popped request is *leased*: it stays in the store, in flight, until the engine
no longer holds it (its response went through the spider, the pipelines and the
link scoring, or it failed) and its page is durable, that is, the crawl database
has committed every page submitted before that moment; only then is it
acknowledged, so after a crash a page is in the crawl database or fetched again.
Scrapy-free: requests are only keys here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection
from typing import Any


class Leases:
    """Leased requests: held by the engine, or released and waiting for their page to be committed."""

    def __init__(self) -> None:
        self._held: dict[Any, tuple[str, int]] = {}  # request -> (store key, pages submitted when popped)
        self._released: deque[tuple[int, str]] = deque()  # (pages submitted when released, store key)

    def __len__(self) -> int:
        """Leases not yet acknowledged."""
        return len(self._held) + len(self._released)

    def keys(self) -> list[str]:
        """The store keys of the leases not yet acknowledged."""
        return [key for key, _ in self._held.values()] + [key for _, key in self._released]

    def lease(self, request: Any, key: str, submitted: int) -> None:
        """``request`` (store key ``key``) was popped when ``submitted`` pages had been handed to the database."""
        self._held[request] = (key, submitted)

    def forget(self, request: Any) -> str | None:
        """Drop the lease of ``request``, held by the engine and never fetched (its store key, to give it
        back to the frontier; None if it was not leased)."""
        held = self._held.pop(request, None)
        return held[0] if held is not None else None

    def due(self, engine_holds: Callable[[], Collection[Any] | None], submitted: int, committed: float) -> list[str]:
        """The store keys to acknowledge now. ``engine_holds()`` gives the requests the engine still holds
        (None: it cannot tell, and every leased request counts as released); ``submitted`` and ``committed``
        count the pages handed to the crawl database and committed by it."""
        keys: list[str] = []
        if self._held:
            held = engine_holds()
            for request in [r for r in self._held if held is None or r not in held]:
                key, at_pop = self._held.pop(request)
                if submitted == at_pop:  # no page was stored meanwhile (a 404, a failure...): nothing to wait for
                    keys.append(key)
                else:
                    self._released.append((submitted, key))
        while self._released and self._released[0][0] <= committed:
            keys.append(self._released.popleft()[1])
        return keys
