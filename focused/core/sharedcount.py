"""The pages stored by all workers of one Redis frontier: the count behind their shared page budget.

A page counts once it is *stored*, committed to its worker's crawl database,
not when it is fetched: a worker killed with ``kill -9`` loses the pages it
had not committed yet (another worker fetches them again, as their leases
expire), and they must not use up the budget. Keys, under ``<prefix>:crawl:``::

    pages    STRING  pages stored by all workers (committed to their crawl databases)
    claims   HASH    worker -> places it claimed for pages not committed yet
    workers  ZSET    worker -> when its claims expire (ms of the Redis server's clock)

A worker claims a place before it stores a page (:meth:`SharedCount.add`, which
returns the total: pages stored plus the claims of live workers; the budget is
spent for good once the pages stored plus this worker's own claims reach it,
:attr:`SharedCount.settled`, as other workers' claims may still expire); the crawl
database's writer thread turns claims into stored pages as it commits them
(:meth:`SharedCount.stored`, through :attr:`~focused.crawldb.CrawlDB.on_commit`).
Every call renews the worker's claims for ``FOCUSED_REDIS_LEASE_SECONDS`` and
drops the claims of workers that have not called for that long (killed), so a
killed worker's claims go away when its leases do. A closing worker drops its
claims left (pages claimed but not stored), so ``claims`` and ``workers`` are
empty, and gone, when no worker runs. A worker without a crawl database counts
its pages in ``pages`` when it claims them. One Lua script does it all,
atomically; the keys hold integers only.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import TYPE_CHECKING

import redis
from scrapy import signals as scrapy_signals

from focused import signals
from focused.settings.access import setting

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from focused.crawldb import CrawlDB

logger = logging.getLogger(__name__)

KEY_NAMES = ("pages", "claims", "workers")
#: A look at the count (:meth:`SharedCount.look`) reuses the reply of a call at most this old.
LOOK_SECONDS = 0.5

#: KEYS: pages, claims, workers. ARGV: worker, claimed (+/-), stored (claims that became stored pages),
#: counted (pages counted without a claim), claim lifetime in ms. Returns {pages + the claims of live workers,
#: pages + this worker's claims}.
COUNT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do
  redis.call('HDEL', KEYS[2], gone)
  redis.call('ZREM', KEYS[3], gone)
end
local worker, stored = ARGV[1], tonumber(ARGV[3])
local held = tonumber(redis.call('HGET', KEYS[2], worker) or '0') + tonumber(ARGV[2])
held = math.max(0, held - stored)
if held > 0 then
  redis.call('HSET', KEYS[2], worker, held)
  redis.call('ZADD', KEYS[3], now + tonumber(ARGV[5]), worker)
else
  redis.call('HDEL', KEYS[2], worker)
  redis.call('ZREM', KEYS[3], worker)
end
local pages = stored + tonumber(ARGV[4])
if pages ~= 0 then redis.call('INCRBY', KEYS[1], pages) end
local total = tonumber(redis.call('GET', KEYS[1]) or '0')
local settled = total + held
for _, n in ipairs(redis.call('HVALS', KEYS[2])) do total = total + tonumber(n) end
return {total, settled}
"""


class SharedCount:
    """One worker's part in the shared page count (see the module docstring).

    ``client`` is a ``redis.Redis``; it is used from the reactor thread and
    from the crawl database's writer thread (redis-py's clients are
    thread-safe). Redis unreachable: one warning, and the worker counts its
    own pages (the frontier store decides when the crawl gives up).
    """

    def __init__(self, client: redis.Redis, prefix: str, *, claim_seconds: float = 30.0) -> None:
        self.client = client
        self.prefix = prefix
        self.k = {name: f"{prefix}:crawl:{name}" for name in KEY_NAMES}
        self.worker = uuid.uuid4().hex[:12]
        self.claim_ms = max(1, round(claim_seconds * 1000))
        self._script = client.register_script(COUNT)
        #: pages count when the crawl database commits them (True once it is open), else when claimed
        self.counts_commits = False
        self._local = 0
        #: pages stored by all workers plus this worker's claims, as of the last call: the budget is spent
        #: for good once this reaches it (other workers' claims may still expire, their worker killed)
        self.settled = 0
        self._unsent = 0  # stored pages not yet counted in Redis (it was unreachable); writer thread only
        self._warned = False
        #: the total of the last call, and when (monotonic seconds)
        self._last = (0, -float("inf"))

    @classmethod
    def of(cls, crawler: Crawler) -> SharedCount | None:
        """The shared count of a crawl whose frontier is in Redis (``None`` otherwise), wired to its crawl
        database (``crawldb_opened``) and to its close."""
        from focused.frontier.settings import redis_prefix, uses_redis

        if not uses_redis(crawler.settings):
            return None
        from scrapy_redis.connection import get_redis_from_settings

        count = cls(
            get_redis_from_settings(crawler.settings),
            redis_prefix(crawler.settings, getattr(crawler.spidercls, "name", None) or "focused"),
            claim_seconds=setting(crawler.settings, "FOCUSED_REDIS_LEASE_SECONDS"),
        )
        crawler.signals.connect(count.attach, signal=signals.crawldb_opened)
        crawler.signals.connect(count.close, signal=scrapy_signals.spider_closed)
        return count

    def attach(self, db: CrawlDB) -> None:
        """Count the pages of this worker when ``db`` commits them, not when they are claimed."""
        self.counts_commits = True
        db.on_commit = self.stored

    def _run(self, claimed: int, stored: int, counted: int) -> int:
        keys = [self.k[name] for name in KEY_NAMES]
        total, settled = self._script(keys, [self.worker, claimed, stored, counted, self.claim_ms])
        self.settled = int(settled)
        self._last = (int(total), time.monotonic())
        return int(total)

    def _unavailable(self, exc: Exception) -> None:
        if not self._warned:
            logger.warning("The shared page count is unavailable (%s); counting this worker's pages", exc)
            self._warned = True

    def add(self, n: int) -> int:
        """Claim ``n`` places (negative: give them back; 0: just look); the pages stored by all workers plus
        the places live workers claimed (this worker's own pages if Redis fails)."""
        self._local += n
        try:
            return self._run(n, 0, 0) if self.counts_commits else self._run(0, 0, n)
        except redis.RedisError as exc:
            self._unavailable(exc)
            self.settled = self._local
            return self._local

    def look(self, below: int) -> int:
        """The total, as :meth:`add` with 0 gives it; without a call, that of the last call (a claim, a commit
        or a look) when it came within :data:`LOOK_SECONDS` and was below ``below``. The scheduler looks
        before every request it hands out: far from the budget a total half a second old changes nothing
        (the claims decide what is stored), and the look then costs no round trip."""
        total, at = self._last
        if total < below and time.monotonic() - at < LOOK_SECONDS:
            return total
        return self.add(0)

    def stored(self, n: int) -> None:
        """``n`` claimed pages were committed to the crawl database (its writer thread calls this)."""
        n += self._unsent
        try:
            self._run(0, n, 0)
        except redis.RedisError as exc:
            self._unsent = n  # counted with the next commit
            self._unavailable(exc)
        else:
            self._unsent = 0

    def close(self) -> None:
        """Drop this worker's claims left (pages claimed but never stored)."""
        try:
            with self.client.pipeline() as pipe:
                pipe.hdel(self.k["claims"], self.worker)
                pipe.zrem(self.k["workers"], self.worker)
                pipe.execute()
        except redis.RedisError as exc:  # they expire with the worker's leases
            logger.debug("Could not drop this worker's page claims: %s", exc)
