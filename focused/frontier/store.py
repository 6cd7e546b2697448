"""The frontier store interface: what the scheduler needs from wherever waiting URLs live.

Scrapy-free. A store keeps every URL the crawl has accepted, keyed by its
request fingerprint, in one of three states:

* **waiting**: in the frontier, with an integer priority, the request (an
  opaque item: the request object in memory, its JSON in a durable store) and
  one payload (bytes) per parent that linked to it;
* **in flight**: popped and leased to the crawler; it stays in the store until
  the crawler acknowledges it (:meth:`FrontierStore.ack_many`) once its response
  is fully handled, or gives it back (:meth:`FrontierStore.give_back_many`);
  a durable store returns every in-flight entry to waiting when it is opened
  again, so a crash never loses a URL that was being fetched;
* **done**: fetched or failed for good; only the key is kept, as the seen-set.

The seen-set and the frontier are the same entries, so they cannot disagree: a
URL is never marked seen without also being waiting, in flight or done.

Backends: :class:`~focused.frontier.memory.MemoryStore` (a heap, the default
without ``JOBDIR``) and :class:`~focused.frontier.sqlite.SQLiteStore` (embedded,
durable, the default with ``JOBDIR``) and :class:`~focused.frontier.redis.RedisStore`
(shared by the crawler processes of a distributed crawl, the default with ``REDIS_URL``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

AGGREGATIONS = ("first", "max", "mean")
TIEBREAKS = ("fifo", "random")


@dataclass(frozen=True)
class Framed:
    """The parents' payloads of a chunk of waiting entries as a durable store keeps them (and as the memory
    store's re-score joins them): one :func:`frame` per entry (unframed by whoever reads them, all at once:
    :func:`~focused.frontier.payloads.decode_framed_link_batch`)."""

    blobs: list[bytes]


#: The parents' payloads of a chunk of waiting entries: a list of payloads (bytes) per entry, or framed.
Payloads = list[list[bytes]] | Framed

#: ``rescorer(payloads) -> priorities``: called with the parents' payloads of a chunk of waiting entries;
#: returns each entry's new priority, or ``None`` to keep it.
Rescorer = Callable[[Payloads], Sequence[int | None]]


class RescoreJob(Protocol):
    """A re-score of the waiting entries (:meth:`FrontierStore.rescore_start`), run at once or in the
    background (:mod:`focused.frontier.rescore`).

    The store's waiting entries are fixed when the job starts. :meth:`read` may run in another thread
    (it reads what it needs without the store's own connection or objects it changes); :meth:`apply`
    runs on the store's thread, once per part of the result, and changes only entries that still wait
    and that no push touched since the start (their priority then follows the push's merge, as if the
    push had come after the re-score). :meth:`close` ends the job (after its last apply, or to drop it).
    """

    def read(self) -> Iterator[tuple[Sequence[Any], Payloads]]:
        """Chunks of (entry ids, each entry's parents' payloads), in any thread."""
        ...

    def apply(self, ids: Sequence[Any], priorities: Sequence[int | None]) -> int:
        """Set new priorities (None: keep) of entries of a chunk (or a slice of one); returns how many changed."""
        ...

    def close(self) -> None: ...


class StoreError(Exception):
    """A store file that cannot be used (corrupt, another format, locked); the message says what to do."""


class BadEntry(ValueError):
    """A stored entry that cannot be read back (not JSON, a class or callback it may not name, a damaged frame).

    A durable store does not hand such an entry out: it moves it to its quarantine (a dead-letter
    table or key, with the reason and the time), logs one line, and goes on with the next entry.
    """


class PushResult(enum.IntEnum):
    """What :meth:`FrontierStore.push_many` did with one URL."""

    NEW = 0  # added to the frontier
    MERGED = 1  # already waiting: the new parent's priority (and payload) merged in
    SEEN = 2  # in flight or done: dropped


@dataclass(frozen=True)
class Push:
    """One URL offered to the frontier by one parent."""

    key: str
    item: Any
    priority: int
    payload: bytes | None = None


@dataclass(frozen=True)
class Popped:
    """One leased entry; ``attempts`` counts earlier pops (``> 0``: a re-fetch after a resume)."""

    key: str
    item: Any
    priority: int
    attempts: int = 0


class FrontierStore(Protocol):
    """Waiting, in-flight and done URLs of one crawl (see the module docstring)."""

    aggregation: str
    #: in-flight entries returned to waiting when the store was opened
    requeued: int
    #: entries this process could not decode and moved to the quarantine (:class:`BadEntry`)
    quarantined: int
    #: waiting entries whose payloads a re-score could not unframe (skipped, their priority kept)
    bad_payloads: int

    def push_many(self, pushes: Sequence[Push]) -> list[PushResult]:
        """Add URLs, merge new parents into waiting ones, drop seen ones (in order)."""
        ...

    def pop_many(self, n: int = 1) -> list[Popped]:
        """Lease up to ``n`` best waiting entries (best first)."""
        ...

    def ack_many(self, keys: Iterable[str]) -> None:
        """In-flight entries are done: keep only their keys (the seen-set)."""
        ...

    def give_back_many(self, keys: Iterable[str]) -> None:
        """In-flight entries go back to waiting with their priority."""
        ...

    def rescore_start(self) -> RescoreJob:
        """Start a re-score of the entries waiting now (:class:`RescoreJob`)."""
        ...

    def seen(self, key: str) -> bool:
        """Whether ``key`` is waiting, in flight or done."""
        ...

    def __len__(self) -> int:
        """Waiting entries."""
        ...

    @property
    def in_flight(self) -> int: ...

    def get_meta(self, key: str, default: Any = None) -> Any: ...

    def set_meta(self, key: str, value: Any) -> None:
        """A JSON-able value kept with the store (committed with the next batch)."""
        ...

    def commit(self) -> None:
        """Make everything so far durable (a no-op in memory)."""
        ...

    def maybe_commit(self) -> None:
        """Commit if the batch is due (by operations or time)."""
        ...

    def close(self) -> None: ...


def combine(aggregation: str, first: int, n: int, total: int, best: int) -> int:
    """A URL's priority from its parents' (first, count, sum, max) by ``aggregation``."""
    if aggregation == "first":
        return first
    if aggregation == "max":
        return best
    return round(total / n)


def check_options(aggregation: str, tiebreak: str) -> None:
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, not {aggregation!r}")
    if tiebreak not in TIEBREAKS:
        raise ValueError(f"tiebreak must be one of {TIEBREAKS}, not {tiebreak!r}")


def tie_value(tiebreak: str, seed: int, counter: int) -> float:
    """The tie-break of the ``counter``-th URL: discovery order, or a seeded pseudo-random
    number that is the same for the same (seed, counter) in every process (splitmix64)."""
    if tiebreak == "fifo":
        return float(counter)
    z = (seed * 0x9E3779B97F4A7C15 + counter + 1) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    z ^= z >> 31
    return z / 2.0**64


def frame(payloads: Iterable[bytes]) -> bytes:
    """Concatenate payloads, each behind a 4-byte length (how a durable store keeps a URL's parents)."""
    return b"".join(len(p).to_bytes(4, "little") + p for p in payloads)


def unframe(blob: bytes | None) -> list[bytes]:
    """The payloads of :func:`frame`; raises ``ValueError`` on a damaged blob."""
    out: list[bytes] = []
    if not blob:
        return out
    view = memoryview(blob)
    i = 0
    while i < len(view):
        if i + 4 > len(view):
            raise ValueError("truncated payload frame")
        n = int.from_bytes(view[i : i + 4], "little")
        if i + 4 + n > len(view):
            raise ValueError("truncated payload frame")
        out.append(bytes(view[i + 4 : i + 4 + n]))
        i += 4 + n
    return out
