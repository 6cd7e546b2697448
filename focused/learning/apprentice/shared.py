"""Shared learning: the apprentices of the workers of one Redis frontier learn as one.

Scrapy-free (the crawler's adapter is :class:`focused.extensions.apprentice.shared.SharedFeedback`).
The semantics are those of :class:`~focused.learning.apprentice.online.OnlineApprentice`: an
instance is a link (u, v) with the critic's verdict on v, once v is judged,
whichever workers fetched u and v. Keys, under ``<prefix>:apprentice:``::

    pending             ZSET    links (u, v) whose target v is not judged yet, scores all 0; a member is
                                the digest of v's page key (16 bytes), a tag that keeps equal links apart
                                (24 bytes: a sequence number and the worker's token) and the link payload
                                (its tagged bytes, ``encode_links``: the ids as 2-byte gaps where they fit),
                                so that one ZRANGEBYLEX finds the links of a page
    verdicts            HASH    page key -> Pr(c*|v), 8 bytes little-endian float64
    instances           LIST    every instance: the verdict's 8 bytes + the link payload; those the
                                leader's learner dropped (FOCUSED_APPRENTICE_MAX_INSTANCES) go after its batch
    trimmed             STRING  instances dropped from the head of ``instances`` so far
    pages               STRING  pages judged by all workers
    batches             STRING  batches trained (one per FOCUSED_APPRENTICE_BATCH pages of all workers)
    lock                STRING  the leader's token, with a TTL (SET NX PX, renewed)
    model, version      STRING  the last model (the no-pickle model file's bytes) and its version

Each worker runs one Lua script per page it fetched (its links) and one per
page judged (the verdict), so a link and its target's verdict always meet,
atomically, whichever comes first. One worker at a time is the leader (the
lock; another takes over once it expires): per batch of ``batch_size`` pages of
all workers it adds the new instances to its learner, fits a model and
publishes it (checking, atomically, that it still holds the lock). A new leader
first adds every instance its learner has not seen, so the learner always holds
each instance once. The instances stay in Redis for that (a link payload each), as many as the
learner keeps.
Links to pages never judged stay in ``pending`` (one key, however many pages).

Every worker polls ``version`` and installs a newer model; a blob that is not
an apprentice model of this crawl's features is refused with one log line and
the worker keeps its model.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import struct
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, cast

import numpy as np
import redis

from focused.learning.apprentice.model import ApprenticeModel
from focused.learning.apprentice.online import OnlineApprentice
from focused.learning.apprentice.payload import LinkPayload, decode_link, encode_links, page_key
from focused.learning.modelfile import ModelFileError

logger = logging.getLogger(__name__)

KEY_NAMES = ("pending", "verdicts", "instances", "trimmed", "pages", "batches", "lock", "model", "version")
#: bytes of a pending member before the link payload: the digest of the target's page key, then the tag
DIGEST_BYTES = 16
HEADER_BYTES = DIGEST_BYTES + 24
#: instances read per LRANGE when a leader catches up
CHUNK = 10_000

# KEYS: verdicts, instances, pending; ARGV: (page key, pending member header, payload) of each link
LINKS = """
local added = 0
for i = 1, #ARGV, 3 do
  local verdict = redis.call('HGET', KEYS[1], ARGV[i])
  if verdict then
    redis.call('RPUSH', KEYS[2], verdict .. ARGV[i + 2])
    added = added + 1
  else
    redis.call('ZADD', KEYS[3], 0, ARGV[i + 1] .. ARGV[i + 2])
  end
end
return added
"""

# KEYS: verdicts, instances, pages, pending; ARGV: verdict, header bytes, (page key, digest) of each URL.
# A page's pending links are the members between its digest and its digest followed by byte 255 (a tag
# starts with a hex digit).
PAGE = """
local verdict, cut, added = ARGV[1], tonumber(ARGV[2]) + 1, 0
for i = 3, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], verdict)
  local low, high = '[' .. ARGV[i + 1], '(' .. ARGV[i + 1] .. '\\255'
  local items = redis.call('ZRANGEBYLEX', KEYS[4], low, high)
  for _, item in ipairs(items) do
    redis.call('RPUSH', KEYS[2], verdict .. string.sub(item, cut))
  end
  if #items > 0 then redis.call('ZREMRANGEBYLEX', KEYS[4], low, high) end
  added = added + #items
end
return {redis.call('INCR', KEYS[3]), added}
"""

# KEYS: lock; ARGV: token, ttl ms. 1 if this token holds the lock (renewed), else 0
RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

# KEYS: lock; ARGV: token
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# KEYS: lock, batches, version, model; ARGV: token, version, model bytes ('' : no model yet).
# Returns the batch number, or -1 when the lock is lost (the result is dropped).
PUBLISH = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if ARGV[3] ~= '' then
  redis.call('SET', KEYS[4], ARGV[3])
  redis.call('SET', KEYS[3], ARGV[2])
end
return redis.call('INCR', KEYS[2])
"""


# KEYS: lock, instances, trimmed; ARGV: token, the number of the first instance to keep. The leader drops the
# instances its learner dropped (past FOCUSED_APPRENTICE_MAX_INSTANCES); ``trimmed`` counts them, so that an
# instance's number is ``trimmed`` + its index in the list, whatever was dropped.
TRIM = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local over = tonumber(ARGV[2]) - tonumber(redis.call('GET', KEYS[3]) or '0')
if over > 0 then
  redis.call('LTRIM', KEYS[2], over, -1)
  return redis.call('INCRBY', KEYS[3], over)
end
return tonumber(redis.call('GET', KEYS[3]) or '0')
"""

# KEYS: instances, trimmed. {instances dropped so far, instances in the list}, read together
COUNT = """
return {tonumber(redis.call('GET', KEYS[2]) or '0'), redis.call('LLEN', KEYS[1])}
"""


def digest(key: str) -> bytes:
    """The fixed-length name of a page key in ``pending`` (any key, whatever bytes it holds, sorts apart)."""
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()


class Trained(NamedTuple):
    """What a leader's batch gave: its number (-1: leadership lost), instances added, the model published."""

    batch: int
    added: int
    model: ApprenticeModel | None


def instance_payload(blob: bytes) -> LinkPayload:
    """The link payload of an instance or a pending link: its tagged bytes
    (:func:`~focused.learning.apprentice.payload.encode_links`), or :meth:`LinkPayload.to_bytes` as an earlier
    focused wrote them in the same Redis: those are never read as tagged ones, whose length is even (a header of
    6 bytes, then 2-byte gaps or 4-byte ids and views) where theirs is odd (5 bytes, then 4-byte ids and views);
    ``ValueError`` if neither."""
    try:
        return decode_link(blob)
    except ValueError:
        return LinkPayload.from_bytes(blob)


def model_to_bytes(model: ApprenticeModel) -> bytes:
    """The model file of ``model`` (:meth:`ApprenticeModel.save`: npz of plain arrays, no pickle) as bytes."""
    with tempfile.TemporaryDirectory(prefix="focused-model-") as tmp:
        path = Path(tmp, "model.npz")
        model.save(path)
        return path.read_bytes()


def model_from_bytes(blob: bytes, where: str) -> ApprenticeModel:
    """Inverse of :func:`model_to_bytes`; :class:`ModelFileError` (one line naming ``where``) if it is not one."""
    with tempfile.TemporaryDirectory(prefix="focused-model-") as tmp:
        path = Path(tmp, "model.npz")
        path.write_bytes(blob)
        try:
            return ApprenticeModel.load(path)
        except ModelFileError as exc:
            raise ModelFileError(str(exc).replace(str(path), where)) from exc


class SharedLearning:
    """One worker's part in shared learning (see the module docstring).

    ``client`` is a ``redis.Redis`` (bytes replies); ``online`` the worker's
    apprentice, whose learner only the leader feeds; ``batch_size`` pages of
    all workers make a batch.
    """

    def __init__(
        self,
        client: redis.Redis,
        online: OnlineApprentice,
        *,
        prefix: str,
        batch_size: int | None = None,
        lock_seconds: float = 10.0,
    ) -> None:
        self.client = client
        self.online = online
        self.prefix = prefix
        self.batch_size = max(1, int(batch_size or online.batch_size))
        self.lock_ms = max(1, round(lock_seconds * 1000))
        self.token = uuid.uuid4().hex[:12]
        self.k = {name: f"{prefix}:apprentice:{name}" for name in KEY_NAMES}
        scripts = {
            "links": LINKS,
            "page": PAGE,
            "renew": RENEW,
            "release": RELEASE,
            "publish": PUBLISH,
            "trim": TRIM,
            "count": COUNT,
        }
        self._scripts = {name: client.register_script(text) for name, text in scripts.items()}
        self.leader = False
        self._renewed = 0.0
        #: instances this worker's learner holds: those numbered below ``learned`` (an instance's number is its
        #: index in ``instances`` plus the ``trimmed`` ones before it)
        self.learned = 0
        self.installed_version = 0
        self._refused_version = 0
        self._tags = 0  # pending links this worker sent: the tags of their members

    # -- every worker: instances -------------------------------------------------------

    def observe_links(
        self, links: Sequence[str], payloads: Sequence[LinkPayload], blobs: Sequence[bytes] | None = None
    ) -> int:
        """Links of a page this worker fetched (``blobs``: the payloads' ``encode_links``, when the caller has
        them); returns how many became instances at once (target judged)."""
        if not links:
            return 0
        args: list[Any] = []
        encoded = encode_links(payloads) if blobs is None else blobs  # tagged: 2-byte gaps where they fit
        for link, blob in zip(links, encoded, strict=True):
            key = page_key(link)
            self._tags += 1
            args += [key, digest(key) + f"{self._tags:012x}{self.token}".encode(), blob]
        return int(self._scripts["links"]([self.k["verdicts"], self.k["instances"], self.k["pending"]], args))

    def observe_page(self, urls: Sequence[str], relevance: float) -> int:
        """The critic judged a page (requested under ``urls``); returns the pages judged by all workers."""
        args: list[Any] = [struct.pack("<d", float(relevance)), HEADER_BYTES]
        for key in dict.fromkeys(page_key(url) for url in urls):
            args += [key, digest(key)]
        keys = [self.k[name] for name in ("verdicts", "instances", "pages", "pending")]
        pages, _ = self._scripts["page"](keys, args)
        return int(pages)

    # -- the leader -------------------------------------------------------------------------

    def acquire(self) -> bool:
        """Take the lock if free, renew it if held (at most every third of its TTL); ``True`` if leader."""
        now = time.monotonic()
        if self.leader and now - self._renewed < self.lock_ms / 3000:
            return True
        if self.leader:
            self.leader = bool(self._scripts["renew"]([self.k["lock"]], [self.token, self.lock_ms]))
            if not self.leader:
                logger.warning("Shared apprentice %s: lost the trainer's lock", self.prefix)
        if not self.leader and self.client.set(self.k["lock"], self.token, nx=True, px=self.lock_ms):
            self.leader = True
            logger.info("Shared apprentice %s: this worker trains the apprentice (worker %s)", self.prefix, self.token)
        if self.leader:
            self._renewed = now
        return self.leader

    def release(self) -> None:
        """Give up the lock (another worker takes over at once)."""
        if self.leader:
            self._scripts["release"]([self.k["lock"]], [self.token])
            self.leader = False

    def due(self) -> bool:
        """A batch of pages of all workers waits for its training."""
        pages, batches = self.client.mget(self.k["pages"], self.k["batches"])
        return int(pages or 0) >= (int(batches or 0) + 1) * self.batch_size

    def train_batch(self) -> Trained:
        """As leader: add the instances the learner has not seen, fit, publish (slow; runs in a thread)."""
        self._renewed = 0.0
        if not self.acquire():
            return Trained(-1, 0, None)
        trimmed, listed = (int(v) for v in self._scripts["count"]([self.k["instances"], self.k["trimmed"]]))
        end = trimmed + listed  # only the leader trims: the numbers stay put while it reads
        payloads: list[LinkPayload] = []
        relevances: list[float] = []
        n_side, bad = self.online.learner.n_side, 0
        for start in range(max(self.learned, trimmed), end, CHUNK):
            first, last = start - trimmed, min(end, start + CHUNK) - 1 - trimmed
            raw = cast(list[bytes], self.client.lrange(self.k["instances"], first, last))
            for item in raw:
                try:
                    payload = instance_payload(item[8:])
                    (relevance,) = struct.unpack_from("<d", item)
                except (ValueError, struct.error):
                    bad += 1
                    continue
                if (0 if payload.side is None else len(payload.side)) != n_side or not 0.0 <= relevance <= 1.0:
                    bad += 1  # a worker with other apprentice settings
                    continue
                payloads.append(payload)
                relevances.append(relevance)
        if bad:
            logger.error(
                "Shared apprentice %s: skipped %d malformed instances or instances of other apprentice settings "
                "(give every worker the same FOCUSED_APPRENTICE_* settings)", self.prefix, bad,
            )  # fmt: skip
        model = self.online.train(payloads, np.array(relevances, dtype=np.float64))
        self.learned = end  # the learner holds them now, whatever happens to the lock
        version = int(self.client.get(self.k["version"]) or 0) + 1
        blob = b""
        if model is not None:
            model = dataclasses.replace(model, version=version)
            blob = model_to_bytes(model)
        keys = [self.k[name] for name in ("lock", "batches", "version", "model")]
        batch = int(self._scripts["publish"](keys, [self.token, version, blob]))
        if batch < 0:
            self.leader = False
            logger.warning("Shared apprentice %s: lost the trainer's lock while training; result dropped", self.prefix)
            return Trained(-1, len(payloads), None)
        if model is not None:
            self.installed_version = version
        learner = self.online.learner
        if learner.dropped:  # Redis keeps what the learner keeps (and what came since), for a new leader
            first = end - learner.n_instances
            self._scripts["trim"]([self.k["lock"], self.k["instances"], self.k["trimmed"]], [self.token, first])
        return Trained(batch, len(payloads), model)

    # -- every worker: models ---------------------------------------------------------------

    def poll(self) -> ApprenticeModel | None:
        """The model published in Redis if newer than this worker's, else ``None``; a bad one is refused."""
        raw = self.client.get(self.k["version"])
        version = int(raw or 0)
        if version <= self.installed_version or version == self._refused_version:
            return None
        blob, raw = cast(list[Any], self.client.mget(self.k["model"], self.k["version"]))
        version = int(raw or 0)
        where = f"Redis key {self.k['model']} (v{version})"
        try:
            if not blob:
                raise ModelFileError(f"{where} is empty")
            model = model_from_bytes(bytes(blob), where)
            learner = self.online.learner
            if (model.n_features, model.n_side) != (learner.n_features, learner.n_side):
                raise ModelFileError(
                    f"{where} is a model of {model.n_features} features and {model.n_side} side features, "
                    f"this crawl's apprentice has {learner.n_features} and {learner.n_side}"
                )
        except ModelFileError as exc:
            self._refused_version = version
            logger.error(
                "Shared apprentice %s: refused the model in Redis, keeping %s: %s", self.prefix,
                f"v{self.online.model.version}" if self.online.model else "the critic's scores", exc,
            )  # fmt: skip
            return None
        self.installed_version = version
        return model

    def clear(self) -> int:
        """Delete this crawl's shared learning from Redis; returns how many keys existed."""
        return int(cast(Any, self.client.delete(*self.k.values())))
