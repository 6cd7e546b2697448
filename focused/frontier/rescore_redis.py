"""The Redis store's re-score job (:mod:`focused.frontier.rescore`): apart from the others, which never need Redis."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from itertools import compress
from operator import itemgetter
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from focused.frontier import rescore
from focused.frontier.redis_lua import MAX_PRIORITY, SHIFT, priority_of, score
from focused.frontier.store import Framed, Payloads

if TYPE_CHECKING:
    from focused.frontier.redis import RedisStore


class RedisRescore:
    """ZSCAN + HMGET of the payloads, chunk by chunk, maybe in a thread (the client is thread-safe); then one
    ``ZADD XX`` per slice on the crawler's thread, which skips the entries popped meanwhile (by any worker:
    ``XX``) and those this worker pushed since the start (their merge stands). Another worker's merge
    meanwhile gets the re-scored priority."""

    def __init__(self, store: RedisStore) -> None:
        self.store = store
        self.touched: set[bytes] = set()

    def read(self) -> Iterator[tuple[Sequence[Any], Payloads]]:
        store = self.store
        done: set[bytes] = set()
        cursor = 0
        while not store._closed:
            cursor, pairs = store._call(partial(self._zscan, cursor))
            pairs = [(m, s) for m, s in pairs if m not in done]  # ZSCAN may return a member twice
            done.update(m for m, _ in pairs)
            if pairs:
                members = [m for m, _ in pairs]
                blobs = cast(list[bytes | None], store._call(partial(store.client.hmget, store.k["payloads"], members)))
                kept = [(pair, blob) for pair, blob in zip(pairs, blobs, strict=True) if blob]
                if kept:
                    yield [(m, int(s)) for (m, s), _ in kept], Framed([cast(bytes, blob) for _, blob in kept])
            if cursor == 0:
                return

    def _zscan(self, cursor: int) -> tuple[int, list[tuple[bytes, float]]]:
        store = self.store
        return cast(Any, store.client.zscan(store.k["waiting"], cursor, count=rescore.RESCORE_CHUNK))

    def apply(self, ids: Sequence[Any], priorities: Sequence[int | None]) -> int:
        store = self.store
        updates = new_scores(ids, priorities, self.touched)
        if updates and not store._closed:
            store._call(lambda: store.client.zadd(store.k["waiting"], cast(Any, updates), xx=True))
            return len(updates)
        return 0

    def close(self) -> None:
        if self in self.store._jobs:
            self.store._jobs.remove(self)


def new_scores(
    ids: Sequence[tuple[bytes, int]], priorities: Sequence[int | None], touched: set[bytes]
) -> dict[bytes, int]:
    """The new waiting score of each entry ``(member, old score)`` whose priority changes: its new priority at its
    old rank (:func:`~focused.frontier.redis_lua.score`); none for a ``None`` priority or a member in ``touched``.
    When every entry is scored and none was touched (most chunks), in array steps rather than a Python step each."""
    if len(priorities) != len(ids):  # as the step an entry's strict zip would say, where arrays would broadcast
        raise ValueError(f"{len(priorities)} priorities for {len(ids)} entries")
    if not touched and None not in priorities:
        try:
            new = np.fromiter(map(int, cast(Sequence[int], priorities)), dtype=np.int64, count=len(priorities))
        except OverflowError:  # a priority beyond int64: the general way below
            new = None
        if new is not None:
            old = np.fromiter(map(itemgetter(1), ids), dtype=np.int64, count=len(ids))
            changed = new != -(old // SHIFT)  # priority_of, element by element
            scores = -np.clip(new[changed], -MAX_PRIORITY, MAX_PRIORITY) * SHIFT + old[changed] % SHIFT
            return dict(zip(compress(map(itemgetter(0), ids), changed.tolist()), scores.tolist(), strict=True))
    return {
        member: score(int(p), old % SHIFT)
        for (member, old), p in zip(ids, priorities, strict=True)
        if p is not None and int(p) != priority_of(old) and member not in touched
    }
