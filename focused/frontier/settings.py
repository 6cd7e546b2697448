"""Which frontier store a crawl uses, and opening it from the crawl's settings.

``FOCUSED_FRONTIER_STORE`` (``auto`` by default) picks the store: Redis with
``REDIS_URL``, SQLite in ``JOBDIR`` with a job directory, memory otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.utils.job import job_dir

from focused.errors import ConfigError
from focused.frontier.sqlitefile import check_store
from focused.frontier.store import FrontierStore, StoreError
from focused.settings.access import setting

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from scrapy.spiders import Spider

STORE_FILE = "frontier.sqlite"
#: The frontier file of focused before the store existed: a pickle, never loaded.
OLD_STATE_FILE = "focused-frontier.pickle"
STORES = ("auto", "memory", "sqlite", "redis")
#: How long the start-up check waits for Redis to answer its PING (connect, then reply).
PING_SECONDS = 2.0


def check_jobdir(settings: BaseSettings, spider_name: str = "focused") -> None:
    """Refuse, before the crawl starts, a job directory whose frontier cannot be resumed, or a Redis
    frontier that cannot be reached or was started with other options (ConfigError)."""
    jobdir = job_dir(settings)
    name = store_name(settings, jobdir)
    if name == "redis":
        try:
            open_redis(settings, spider_name, {"encode": str, "decode": str}).close()
        except (StoreError, ValueError) as exc:
            raise ConfigError(str(exc)) from exc
    if not jobdir or not Path(jobdir).is_dir():
        return
    if Path(jobdir, OLD_STATE_FILE).exists():
        raise ConfigError(
            f"JOBDIR {jobdir} was written by an older focused (a pickled frontier, which is never loaded): "
            "start the crawl with a new JOBDIR"
        )
    if name == "sqlite":
        try:
            check_store(Path(jobdir, STORE_FILE))
        except StoreError as exc:
            raise ConfigError(str(exc)) from exc


def store_name(settings: BaseSettings, jobdir: str | None) -> str:
    """The store a crawl with these settings uses: ``memory``, ``sqlite`` or ``redis``."""
    name = setting(settings, "FOCUSED_FRONTIER_STORE") or "auto"
    if name not in STORES:
        raise ConfigError(f"unknown FOCUSED_FRONTIER_STORE {name!r}; valid: {', '.join(STORES)}")
    if name == "auto":
        return "redis" if settings.get("REDIS_URL") else "sqlite" if jobdir else "memory"
    if name == "sqlite" and not jobdir:
        raise ConfigError("FOCUSED_FRONTIER_STORE=sqlite keeps the frontier in JOBDIR: set -s JOBDIR=DIR")
    if name == "redis" and not settings.get("REDIS_URL"):
        raise ConfigError("FOCUSED_FRONTIER_STORE=redis needs the server: set -s REDIS_URL=redis://HOST:6379/0")
    return name


def ping_redis(settings: BaseSettings, timeout: float = PING_SECONDS) -> None:
    """One ``PING`` of the crawl's Redis (``REDIS_URL``, scrapy-redis's connection settings) within ``timeout``
    seconds, no retry: a :class:`ConfigError` naming ``REDIS_URL`` if nothing answers. A crawl checks this
    before it starts; a Redis that goes away later is retried for ``FOCUSED_REDIS_RETRY_SECONDS``."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry
    from scrapy_redis.connection import get_redis_from_settings

    quick = settings.copy()
    params = {**settings.getdict("REDIS_PARAMS"), "socket_timeout": timeout, "socket_connect_timeout": timeout}
    quick.set("REDIS_PARAMS", {**params, "retry_on_timeout": False, "retry": Retry(NoBackoff(), 0)})
    url = settings.get("REDIS_URL")
    try:
        client = get_redis_from_settings(quick)
        try:
            client.ping()
        finally:
            client.close()
    except (redis.RedisError, OSError, ValueError) as exc:
        raise ConfigError(
            f"REDIS_URL={url}: Redis does not answer ({exc}); start redis-server there "
            "or give the right -s REDIS_URL=redis://HOST:PORT/DB"
        ) from None


def uses_redis(settings: BaseSettings) -> bool:
    """Whether the crawl's frontier is in Redis (shared by workers)."""
    return store_name(settings, job_dir(settings)) == "redis"


def redis_prefix(settings: BaseSettings, spider_name: str) -> str:
    """The prefix of the crawl's Redis keys: ``FOCUSED_REDIS_PREFIX``, or the spider's name (scrapy-redis's naming)."""
    return str(setting(settings, "FOCUSED_REDIS_PREFIX") or spider_name)


def options(settings: BaseSettings) -> dict[str, Any]:
    return {
        "aggregation": setting(settings, "FOCUSED_PARENT_AGGREGATION"),
        "tiebreak": setting(settings, "FOCUSED_TIEBREAK"),
        "seed": setting(settings, "FOCUSED_SEED"),
    }


def open_redis(settings: BaseSettings, spider_name: str, codec: dict[str, Any]) -> FrontierStore:
    """The shared frontier at ``REDIS_URL`` (scrapy-redis's connection settings), keys under the prefix."""
    from scrapy_redis.connection import get_redis_from_settings

    from focused.frontier.redis import RedisStore

    return RedisStore(
        get_redis_from_settings(settings),
        prefix=redis_prefix(settings, spider_name),
        **codec,
        **options(settings),
        lease_seconds=setting(settings, "FOCUSED_REDIS_LEASE_SECONDS"),
        retry_seconds=setting(settings, "FOCUSED_REDIS_RETRY_SECONDS"),
        max_size=setting(settings, "FOCUSED_FRONTIER_MAX_SIZE"),
    )


def open_store(settings: BaseSettings, name: str, jobdir: str | None, spider: Spider | None) -> FrontierStore:
    """The frontier store ``name`` (:func:`store_name`) for a crawl; ``ConfigError`` if it cannot be opened.

    Requests are stored as data (:mod:`focused.frontier.requests`), their callbacks named on ``spider``.
    """
    from focused.frontier.memory import MemoryStore
    from focused.frontier.requests import decode_request, encode_request
    from focused.frontier.sqlite import SQLiteStore

    opts = options(settings)
    codec: dict[str, Any] = {
        "encode": lambda request: encode_request(request, spider),
        "decode": lambda text: decode_request(text, spider),
    }
    try:
        if name == "memory":
            return MemoryStore(**opts)
        if name == "redis":
            return open_redis(settings, spider.name if spider else "focused", codec)
        assert jobdir
        check_jobdir(settings)
        return SQLiteStore(
            Path(jobdir, STORE_FILE),
            **codec,
            **opts,
            commit_ops=setting(settings, "FOCUSED_FRONTIER_COMMIT_OPS"),
            commit_seconds=setting(settings, "FOCUSED_FRONTIER_COMMIT_SECONDS"),
        )
    except (StoreError, ValueError) as exc:
        raise ConfigError(str(exc)) from exc
