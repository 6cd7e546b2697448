"""Named groups of settings applied with ``-s FOCUSED_PROFILE=NAME``.

The project's settings are polite defaults for the live web. A loopback
replay needs none of that politeness and wants a fixed, low concurrency so
that the fetch order stays close to the frontier's best-first order, which is
what benchmarks compare.
"""

from __future__ import annotations

from typing import Any

from scrapy.settings import BaseSettings

from focused.settings.access import setting


def replay_profile(settings: BaseSettings) -> dict[str, Any]:
    concurrency = setting(settings, "FOCUSED_REPLAY_CONCURRENCY")
    return {
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
        "DOWNLOAD_DELAY": 0,
        "DOWNLOAD_DELAY_JITTER": 0,  # (RANDOMIZE_DOWNLOAD_DELAY is deprecated in Scrapy 2.19)
        "AUTOTHROTTLE_ENABLED": False,
        "RETRY_ENABLED": False,
        "DOWNLOAD_TIMEOUT": 30,
        "TELNETCONSOLE_ENABLED": False,
        "COOKIES_ENABLED": False,
        "DNSCACHE_ENABLED": True,
        # Only http(s) goes through the replay proxy; nothing may leave loopback.
        "DOWNLOAD_HANDLERS": {"ftp": None, "file": None, "s3": None, "data": None},
        # Pull the next request only once every downloaded page has been
        # parsed and its outlinks scored: otherwise the engine pops the
        # frontier before the newest links are in it, and the fetch order lags
        # best-first by a page per download slot. (The plain spider maps this
        # to Scrapy's SCRAPER_SLOT_MAX_ACTIVE_SIZE = 0.)
        "FOCUSED_MAX_UNSCORED_PAGES": 0,
        # no politeness delay: a request waits in the downloader only for a free connection
        "FOCUSED_MAX_QUEUED_DOWNLOADS": 0,
    }


PROFILES = {"replay": replay_profile}


def apply_profile(settings: BaseSettings) -> None:
    """Apply ``FOCUSED_PROFILE`` at spider priority (``-s`` options still win)."""
    name = setting(settings, "FOCUSED_PROFILE")
    if not name:
        return
    if name not in PROFILES:
        from focused.errors import ConfigError

        raise ConfigError(f"unknown FOCUSED_PROFILE {name!r}; valid: {', '.join(PROFILES)}")
    settings.setdict(PROFILES[name](settings), priority="spider")
