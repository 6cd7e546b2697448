"""The shared frontier store: Redis, for several crawler processes (on one or more machines) crawling together.

Every change is one Lua script (:mod:`focused.frontier.redis_lua`), atomic in
Redis: two workers never pop the same entry nor add a URL twice. Keys, under
``<prefix>:frontier:`` (the prefix defaults to the spider's name, as scrapy-redis
names its keys)::

    seen       SET    every key accepted: waiting, in flight or done (the seen-set)
    waiting    ZSET   waiting keys; score -priority * 2**33 + rank (lowest pops first)
    leases     ZSET   in-flight keys; score = lease expiry, ms of the Redis server's clock
    popped     HASH   in-flight key -> its waiting score (to give it back, or requeue it)
    items      HASH   key -> request as JSON (``encode``/``decode``; never pickle)
    payloads   HASH   key -> the parents' payloads, framed (:func:`~focused.frontier.store.frame`)
    parents    HASH   key -> "first n sum max" of the parents' priorities, for merging
    attempts   HASH   key -> times popped (``Popped.attempts``)
    counter    STRING discovery order, shared by the workers (FIFO ties)
    meta       HASH   name -> JSON (format, options, whatever the crawl keeps)
    quarantine HASH   key -> JSON {reason, at, worker, item}: entries that could not be read back
    pop:<worker> LIST the id of the worker's last pop, then the keys it took, for its retries; replaced by
                      its next pop, deleted when the worker closes, else expires a minute after the retry window

**Quarantine.** A popped entry whose request cannot be decoded (not JSON, a
class or callback :mod:`focused.frontier.requests` refuses, no request at all)
is recorded in ``quarantine`` and made done in one ``MULTI``, logged in one line,
counted in :attr:`RedisStore.quarantined`, and the pop goes on with the next
entry in the same call (the worker does not wait for Scrapy's next 5-second
heartbeat, as it did when a pop of only bad entries returned nothing). ``focused
quarantine`` lists and purges the key.

A done entry keeps only its member of ``seen``. The number of keys does not grow with the crawl: one per
name above, and one ``pop:<worker>`` per worker alive (or killed within the last retry window and a minute).

**Scores.** One sorted set gives best-first order with exact ties: the score
``-priority * 2**33 + rank`` is an integer, and with ``|priority| < 2**20``
(priorities are 0..1,000,001, a few more with Scrapy's redirect/retry
adjustments; larger ones are clipped) and ``0 <= rank < 2**33`` it stays
below 2**53, where doubles are exact. Higher priority gives a lower score, so
``ZPOPMIN`` pops it first; among equal priorities the lower rank: the shared
discovery counter (``fifo``, 8.6 billion URLs before it wraps) or the top 33
bits of :func:`~focused.frontier.store.tie_value` (``random``, seeded). A
lexicographic member (priority digits + rank + key) would order the same but
needs ``ZRANGEBYLEX`` scans and a second index for re-scoring; a numeric score
lets ``ZADD XX`` re-score in place. The rank is recovered from the score
(``score mod 2**33``), so a re-score or a merge keeps an entry's place among
its equals.

**Leases.** A popped entry stays in ``leases`` until acknowledged (done) or
given back; the worker holding it renews it while it is alive, every third of
a lease (:meth:`RedisStore.maybe_commit`, which the scheduler calls at least
that often, and between the chunks of a re-scoring), so a slow download stays
with its worker. The reaper (run by every pop, and by
:meth:`RedisStore.maybe_commit` in the same script call as the renewal, or
alone when no pop ran for :data:`REAP_SECONDS`) puts
leases that expired (a worker killed, or cut off from Redis or blocked for
longer than the lease) back in ``waiting``, counted in
:attr:`RedisStore.requeued`; the next pop counts the re-fetch in ``attempts``.

**Round trips.** A fetched page costs about three: its links pushed in one
script call (the scheduler sends a page's links together), one pop that also
acknowledges the pages handled since the last one (:meth:`RedisStore.ack_many`
only records them; a call that needs the leases exact sends them first), and
the shared page count's claim (:mod:`focused.core.sharedcount`); the push and
pop replies carry the number of waiting entries, so the frontier-size stats
need no ``ZCARD``. An acknowledgement not sent yet is lost with a worker killed
meanwhile: its page is fetched again once the lease expires, as if the worker
had been killed just before it.

**Size cap.** With ``max_size`` (``FOCUSED_FRONTIER_MAX_SIZE``) a push that
leaves more than ``max_size`` plus 1% waiting entries drops the lowest-priority
ones down to ``max_size``, in the same script call (atomic, so workers pushing
at once never drop twice), counted in :attr:`RedisStore.dropped`; they stay in
``seen``, done without being fetched, as in the other stores.

**Outages.** A call that cannot reach Redis is retried with exponential backoff
(one warning per outage, one line when Redis is back) for up to
``retry_seconds``, then raises :class:`~focused.frontier.store.StoreError`;
from then on each call tries once (no waiting) until Redis answers again. A
script whose reply was lost may have run: a pop retried then returns the
entries it had popped (each pop records its id and keys under
``pop:<worker>``, until the worker's next pop), so no lease is left to nobody; a push retried
then reports its URLs as seen or merged (and a merged parent counts twice in
``mean``).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, TypeVar, cast

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from focused.frontier import redis_lua
from focused.frontier.redis_lua import MAX_PRIORITY, SHIFT, priority_of
from focused.frontier.rescore_redis import RedisRescore
from focused.frontier.store import (
    BadEntry,
    Popped,
    Push,
    PushResult,
    StoreError,
    check_options,
    frame,
    tie_value,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

FORMAT = "focused.frontier.redis"
FORMAT_VERSION = 1
#: expired leases requeued per script call
REAP_LIMIT = 1000
#: :meth:`RedisStore.maybe_commit` reaps when no call of this worker reaped (every pop does) for this long
REAP_SECONDS = 1.0
#: errors that mean "Redis is not reachable right now" (down, restarting, loading its data, a failover)
TRANSIENT = (redis.ConnectionError, redis.TimeoutError, redis.exceptions.ReadOnlyError, redis.exceptions.TryAgainError)
KEY_NAMES = (
    "seen", "waiting", "leases", "popped", "items", "payloads", "parents", "attempts", "counter", "meta", "quarantine",
)  # fmt: skip


def connect(url: str, timeout: float = 10.0) -> redis.Redis:
    """A client for ``url`` (``redis://HOST:PORT/DB``), with socket timeouts; the store does the retrying."""
    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)


class RedisStore:
    """:class:`~focused.frontier.store.FrontierStore` in Redis, shared by workers (see the module docstring).

    ``client`` is a ``redis.Redis`` (bytes replies); its own retries are
    turned off, this store retries. Workers of one crawl use the same
    ``prefix`` and the same ``aggregation`` and ``tiebreak`` (a different
    one is refused with :class:`StoreError`).
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str,
        encode: Callable[[Any], str],
        decode: Callable[[str], Any],
        aggregation: str = "max",
        tiebreak: str = "fifo",
        seed: int = 0,
        lease_seconds: float = 30.0,
        retry_seconds: float = 60.0,
        max_size: int = 0,
    ) -> None:
        check_options(aggregation, tiebreak)
        self.client = client
        client.set_retry(Retry(NoBackoff(), 0))
        self.prefix = prefix
        self.encode = encode
        self.decode = decode
        self.aggregation = aggregation
        self.tiebreak = tiebreak
        self.seed = int(seed)
        self.lease_ms = max(1, round(lease_seconds * 1000))
        self.retry_seconds = float(retry_seconds)
        self.requeued = 0
        #: FOCUSED_FRONTIER_MAX_SIZE: waiting entries kept at most (0: no cap), applied by every push
        self.max_size = max(0, int(max_size))
        #: waiting entries the cap dropped in this process's pushes
        self.dropped = 0
        #: waiting entries (of every worker) as of this process's last push or pop: the stats' figure, no call
        self.last_len: int | None = None
        #: entries this process quarantined; waiting entries whose payloads a re-score could not unframe
        self.quarantined = 0
        self.bad_payloads = 0
        self.worker = uuid.uuid4().hex[:12]
        self.k = {name: f"{prefix}:frontier:{name}" for name in KEY_NAMES}
        self.k["pop"] = f"{prefix}:frontier:pop:{self.worker}"
        self._scripts = {
            name: client.register_script(getattr(redis_lua, name.upper()))
            for name in ("push", "pop", "reap", "ack", "give_back", "renew", "drop")
        }
        self._held: set[str] = set()
        #: acknowledged keys not yet sent: they go with the next pop (no call of their own), else with the
        #: next call that needs them (:meth:`_send_acks`)
        self._acks: list[str] = []
        self._renewed = time.monotonic()
        self._reaped = -float("inf")  # when a call of this worker last requeued expired leases
        self._down_since: float | None = None
        self._gave_up = False
        self._closed = False
        #: background re-scores under way: the keys this worker pushed since each started are not re-scored by it
        self._jobs: list[RedisRescore] = []
        self._call(self._check_format)

    # -- Redis calls, retried --------------------------------------------------------------

    def _keys(self, *names: str) -> list[str]:
        return [self.k[name] for name in names]

    def _call(self, fn: Callable[[], T]) -> T:
        """``fn()``, retried with backoff while Redis is unreachable (module docstring)."""
        delay = 0.05
        while True:
            try:
                result = fn()
            except TRANSIENT as exc:
                now = time.monotonic()
                if self._down_since is None:
                    self._down_since = now
                    logger.warning(
                        "Redis frontier %s unreachable (%s): retrying for up to %.0f s", self.prefix, exc,
                        self.retry_seconds,
                    )  # fmt: skip
                if self._gave_up or now - self._down_since >= self.retry_seconds:
                    self._gave_up = True
                    raise StoreError(
                        f"Redis frontier {self.prefix}: Redis unreachable for {now - self._down_since:.0f} s ({exc}); "
                        "start Redis, then this crawl again (URLs it had popped come back when their leases expire)"
                    ) from exc
                time.sleep(min(delay, max(0.0, self._down_since + self.retry_seconds - now)))
                delay = min(delay * 2, 2.0)
                continue
            except redis.ResponseError as exc:
                raise StoreError(f"Redis frontier {self.prefix}: {exc}") from exc
            if self._down_since is not None:
                logger.info("Redis frontier %s: Redis is back after %.1f s", self.prefix, self._since_down())
                self._down_since, self._gave_up = None, False
            return result

    def _since_down(self) -> float:
        return time.monotonic() - self._down_since if self._down_since is not None else 0.0

    def _check_format(self) -> None:
        """Stamp a new frontier with its format and options; refuse one written otherwise."""
        expected = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "aggregation": self.aggregation,
            "tiebreak": self.tiebreak,
        }
        with self.client.pipeline() as pipe:
            for name, value in expected.items():
                pipe.hsetnx(self.k["meta"], name, json.dumps(value))
            pipe.hmget(self.k["meta"], list(expected))
            found = pipe.execute()[-1]
        for (name, value), raw in zip(expected.items(), found, strict=True):
            if raw is None or _json_or_none(raw) != value:
                shown = raw.decode(errors="replace") if raw is not None else "nothing"
                raise StoreError(
                    f"Redis frontier {self.prefix}: {name} is {shown}, this crawl needs {json.dumps(value)}; "
                    "use the same settings as the other workers, or another FOCUSED_REDIS_PREFIX"
                )

    # -- the store interface ------------------------------------------------------------------

    def push_many(self, pushes: Sequence[Push]) -> list[PushResult]:
        if not pushes:
            return []
        ranks = self._random_ranks(len(pushes)) if self.tiebreak == "random" else [""] * len(pushes)
        args: list[Any] = [self.aggregation, self.max_size]
        for push, rank in zip(pushes, ranks, strict=True):
            priority = max(-MAX_PRIORITY, min(MAX_PRIORITY, int(push.priority)))
            payload = frame([push.payload]) if push.payload is not None else b""
            args += [push.key, priority, self.encode(push.item), payload, rank]
        reply = self._call(lambda: self._scripts["push"](self._push_keys(), args))
        self.last_len, dropped = int(reply[-2]), int(reply[-1])
        self.dropped += dropped
        for job in self._jobs:
            job.touched.update(push.key.encode() for push in pushes)
        return [PushResult(int(r)) for r in reply[:-2]]

    def _push_keys(self) -> list[str]:
        return self._keys("seen", "waiting", "parents", "items", "payloads", "counter", "attempts")

    def drop_lowest(self, n: int) -> int:
        """Drop the ``n`` lowest-priority waiting entries (they stay seen: done, never fetched); returns how
        many. Pushes apply ``max_size`` themselves, in the same script call."""
        if n <= 0:
            return 0
        dropped = int(self._call(lambda: self._scripts["drop"](self._push_keys(), [n])))
        self.dropped += dropped
        return dropped

    def _random_ranks(self, n: int) -> list[int]:
        """Ranks for ``random`` ties: the seeded tie values of ``n`` numbers of the shared counter."""
        last = int(self._call(lambda: self.client.incrby(self.k["counter"], n)))
        return [int(tie_value("random", self.seed, c) * SHIFT) for c in range(last - n, last)]

    def pop_many(self, n: int = 1) -> list[Popped]:
        """Lease up to ``n`` best waiting entries; one that cannot be decoded is quarantined (module
        docstring) and the next one popped in its place, in the same call."""
        out: list[Popped] = []
        while len(out) < n:
            want = n - len(out)
            got, popped = self._pop_once(want)
            out += got
            if popped < want:  # the waiting set is empty
                break
        return out

    def _pop_once(self, n: int) -> tuple[list[Popped], int]:
        """One pop script call: the entries that decode, and how many it popped."""
        # one id per call, kept through its retries: a retry after a lost reply gets the same entries
        keys = self._keys("waiting", "leases", "popped", "attempts", "items", "payloads", "parents", "pop")
        args: list[int | str] = [
            n,
            self.lease_ms,
            REAP_LIMIT,
            round((self.retry_seconds + 60) * 1000),
            uuid.uuid4().hex,
            *self._acks,  # acknowledged first, in the same call
        ]
        reply = self._call(lambda: self._scripts["pop"](keys, args))
        self._reaped = time.monotonic()
        self._acks.clear()
        self._count_requeued(int(reply[0]))
        self.last_len = int(reply[1])
        out: list[Popped] = []
        bad: list[tuple[str, bytes | None, str]] = []
        for i in range(2, len(reply), 4):
            key, raw_score, attempts, item = reply[i].decode(), reply[i + 1], int(reply[i + 2]), reply[i + 3]
            try:
                if item is None:
                    raise BadEntry("no request stored")
                try:
                    text = item.decode("utf-8")
                except UnicodeDecodeError:
                    raise BadEntry("binary data, not JSON text (a pickle?)") from None
                out.append(Popped(key, self.decode(text), priority_of(float(raw_score)), attempts))
            except (ValueError, TypeError) as exc:  # a malformed entry never stops the crawl
                bad.append((key, item, str(exc) or type(exc).__name__))
                continue
            self._held.add(key)
        if bad:
            self._quarantine(bad)
        return out, (len(reply) - 2) // 4

    def _quarantine(self, bad: Sequence[tuple[str, bytes | None, str]]) -> None:
        """Record popped entries ``(key, item, reason)`` in ``quarantine`` and make them done, in one MULTI."""
        now = time.time()
        records = {key: json.dumps({"reason": reason, "at": now, "worker": self.worker, **_item_record(item)})
                   for key, item, reason in bad}  # fmt: skip
        keys = list(records)
        names = self._keys("waiting", "leases", "popped", "attempts", "items", "payloads", "parents")

        def move() -> None:
            with self.client.pipeline(transaction=True) as pipe:
                pipe.hset(self.k["quarantine"], mapping=cast(Any, records))
                self._scripts["ack"](names, keys, client=pipe)
                pipe.execute()

        self._call(move)
        self.quarantined += len(bad)
        for key, _, reason in bad:
            logger.error(
                "Redis frontier %s: entry %s quarantined: %s (focused quarantine list shows it)",
                self.prefix,
                key,
                reason,
            )

    def ack_many(self, keys: Iterable[str]) -> None:
        """The entries are done. Sent with this worker's next pop, in the same script call, or before
        anything else that reads or changes the leases (:meth:`_send_acks`); the scheduler pops or ticks
        right after it acknowledges, so an acknowledgement waits one tick at most."""
        keys = list(keys)
        self._acks += keys
        self._held.difference_update(keys)

    def _send_acks(self) -> None:
        """Send the acknowledgements that no pop took (one script call; none if there are none)."""
        if self._acks:
            keys = list(self._acks)
            names = self._keys("waiting", "leases", "popped", "attempts", "items", "payloads", "parents")
            self._call(lambda: self._scripts["ack"](names, keys))
            del self._acks[: len(keys)]

    def give_back_many(self, keys: Iterable[str]) -> None:
        self._send_acks()
        keys = list(keys)
        if keys:
            self._call(lambda: self._scripts["give_back"](self._keys("waiting", "leases", "popped"), keys))
            self._held.difference_update(keys)

    def rescore_start(self) -> RedisRescore:
        """A re-score of the waiting entries (:class:`~focused.frontier.rescore_redis.RedisRescore`)."""
        self._send_acks()
        job = RedisRescore(self)
        self._jobs.append(job)
        return job

    def seen(self, key: str) -> bool:
        return bool(self._call(lambda: self.client.sismember(self.k["seen"], key)))

    def __len__(self) -> int:
        self._send_acks()
        return int(self._call(lambda: self.client.zcard(self.k["waiting"])))

    @property
    def in_flight(self) -> int:
        """Entries in flight at every worker of this frontier."""
        self._send_acks()
        return int(self._call(lambda: self.client.zcard(self.k["leases"])))

    def in_flight_elsewhere(self, mine: Collection[str]) -> int:
        """Entries in flight at the other workers: every lease but those on the keys ``mine`` (this worker's
        leases not yet acknowledged), counted in one ``MULTI``. Not ``in_flight - len(mine)``: a lease of
        this worker that expired is no longer in ``leases`` (another worker may have fetched and acknowledged
        its entry), and subtracting it would hide another worker's lease. A key of ``mine`` that another
        worker leased again is counted as this worker's: it fetched that page and pushed its links already."""
        self._send_acks()
        keys = list(set(mine))  # a key this worker popped again after its lease expired: one lease

        def count() -> int:
            with self.client.pipeline(transaction=True) as pipe:
                pipe.zcard(self.k["leases"])
                if keys:
                    pipe.zmscore(self.k["leases"], keys)
                replies = pipe.execute()
            held = sum(score is not None for score in replies[1]) if keys else 0
            return int(replies[0]) - held

        return int(self._call(count))

    def get_meta(self, key: str, default: Any = None) -> Any:
        raw = self._call(lambda: self.client.hget(self.k["meta"], key))
        if raw is None:
            return default
        try:
            return json.loads(raw)
        except ValueError as exc:
            logger.error("Redis frontier %s: meta %s is not JSON (%s); using %r", self.prefix, key, exc, default)
            return default

    def set_meta(self, key: str, value: Any) -> None:
        text = json.dumps(value)
        self._call(lambda: self.client.hset(self.k["meta"], key, text))

    def commit(self) -> None:
        """Nothing to do: every write is in Redis when its call returns."""

    @property
    def renew_seconds(self) -> float:
        """How often this worker renews its leases: a third of a lease (call :meth:`maybe_commit` that often)."""
        return self.lease_ms / 3000

    def maybe_commit(self) -> None:
        """Renew this worker's leases (every third of a lease) and requeue expired ones of any worker: one
        script call either way, the reaping skipped if a pop did it within :data:`REAP_SECONDS` (and one
        call for the acknowledgements no pop took)."""
        self._send_acks()
        if self._held and time.monotonic() - self._renewed >= self.renew_seconds:
            keys = self._keys("waiting", "leases", "popped")
            args = [str(self.lease_ms), str(REAP_LIMIT), *sorted(self._held)]
            self._count_requeued(int(self._call(lambda: self._scripts["renew"](keys, args))))
            self._renewed = self._reaped = time.monotonic()
            return
        if time.monotonic() - self._reaped >= REAP_SECONDS:  # a worker popping often reaps as it pops
            self.reap()

    def reap(self) -> int:
        """Requeue expired leases (of any worker); returns how many."""
        keys = self._keys("waiting", "leases", "popped")
        n = int(self._call(lambda: self._scripts["reap"](keys, [REAP_LIMIT])))
        self._reaped = time.monotonic()
        self._count_requeued(n)
        return n

    def _count_requeued(self, n: int) -> None:
        if n:
            self.requeued += n
            logger.info("Redis frontier %s: %d expired leases went back to waiting", self.prefix, n)

    def close(self) -> None:
        """Give back the leases this worker still holds (other workers fetch them), delete its pop record,
        and disconnect."""
        if self._closed:
            return
        self._closed = True
        try:
            if not self._gave_up:
                self._send_acks()
                if self._held:
                    self.give_back_many(sorted(self._held))
                self._call(lambda: self.client.delete(self.k["pop"]))
        finally:
            self.client.close()

    def quarantine(self) -> dict[str, dict[str, Any]]:
        """The quarantined entries of this frontier (:func:`read_quarantine`)."""
        return self._call(lambda: read_quarantine(self.client, self.prefix))

    def clear(self) -> int:
        """Delete this frontier from Redis (every key under the prefix); returns how many keys existed."""
        pops = self._call(lambda: list(self.client.scan_iter(match=f"{self.prefix}:frontier:pop:*", count=1000)))
        return int(self._call(lambda: self.client.delete(*(self.k[name] for name in KEY_NAMES), *pops)))


def read_quarantine(client: redis.Redis, prefix: str) -> dict[str, dict[str, Any]]:
    """The quarantined entries of the frontier under ``prefix``: key -> its record (``reason``, ``at``,
    ``worker``, ``item``; ``binary`` when the item was not UTF-8 and is shown as latin-1 text)."""
    raw = cast(Any, client.hgetall(f"{prefix}:frontier:quarantine"))
    out = {}
    for key, value in sorted(raw.items()):
        record = _json_or_none(value)
        out[key.decode(errors="replace")] = record if isinstance(record, dict) else {"reason": "unreadable record"}
    return out


def purge_quarantine(client: redis.Redis, prefix: str) -> int:
    """Delete the quarantined entries of the frontier under ``prefix``; returns how many there were."""
    return int(cast(Any, client.eval(_PURGE, 1, f"{prefix}:frontier:quarantine")))


#: HLEN then DEL, atomically.
_PURGE = "local n = redis.call('HLEN', KEYS[1]) redis.call('DEL', KEYS[1]) return n"


def _json_or_none(raw: bytes | str) -> Any:
    """``raw`` as JSON, or ``None`` if it is not (a damaged value)."""
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _item_record(item: bytes | None) -> dict[str, Any]:
    """A quarantined item as JSON fields: its text, or its bytes as latin-1 text with ``binary`` true."""
    if item is None:
        return {"item": None}
    try:
        return {"item": item.decode("utf-8")}
    except UnicodeDecodeError:
        return {"item": item.decode("latin-1"), "binary": True}
