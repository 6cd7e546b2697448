"""Start-up checks of every spider argument and ``FOCUSED_*`` setting, from one table.

``scrapy crawl focused`` runs :func:`validate` before Scrapy starts anything
(:mod:`focused.scrapy_commands.crawl`): a bad value stops the crawl with exit
status 1 and one line that names the argument as the user gave it
(``-a max_pages=-3`` or ``FOCUSED_APPRENTICE_BATCH=0``), the bad value and what
is valid. Checks that load files (the critic for the topic, the apprentice, a
crawl database) come last, so a mistyped number is reported at once; with
the frontier in Redis, one ``PING`` of ``REDIS_URL`` (2 s at most) ends them.

:data:`SPECS` has one entry per setting of :mod:`focused.settings.defaults` (a test
checks it); a ``FOCUSED_*`` name that is neither there nor a default is a typo
and gets the nearest names. Strategy names come from the strategy registry
(:data:`focused.strategies.STRATEGIES`), profiles from
:data:`focused.settings.profiles.PROFILES`.

The checks of one setting each are in :mod:`focused.settings.settingchecks`; Scrapy's own numeric and
true/false settings are checked too (``-s CONCURRENT_REQUESTS=abc`` is one line, not a traceback).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from focused.errors import ConfigError
from focused.settings import defaults
from focused.settings import settingchecks as own
from focused.settings.checks import (
    Context,
    Invalid,
    Spec,
    as_text,
    boolean,
    choice,
    db_template,
    number,
    readable,
    text,
    url,
    whole,
    writable,
)
from focused.settings.suggest import did_you_mean

__all__ = ["ARGUMENT_SETTINGS", "SPECS", "default_names", "validate"]

#: Spider argument -> the setting it sets (``-a topic=X`` is ``-s FOCUSED_TOPIC=X``).
ARGUMENT_SETTINGS = {
    "topic": "FOCUSED_TOPIC",
    "seeds": "FOCUSED_SEEDS",
    "seeds_file": "FOCUSED_SEEDS_FILE",
    "strategy": "FOCUSED_STRATEGY",
    "model": "FOCUSED_CRITIC_MODEL",
    "labels": "FOCUSED_LABELS",
    "max_pages": "FOCUSED_MAX_PAGES",
    "db": "FOCUSED_DB",
    "apprentice": "FOCUSED_APPRENTICE_MODEL",
    "markines": "FOCUSED_MARKINES_MODEL",
    "restrict_to": "FOCUSED_RESTRICT_TO",
    "predicate": "FOCUSED_PREDICATE",
    "knowledge": "FOCUSED_INTELLIGENT_LOAD",
    "save_knowledge": "FOCUSED_INTELLIGENT_SAVE",
    "jobdir": "FOCUSED_JOBDIR",
    "examples": "FOCUSED_EXAMPLES",
}

#: The setting -> the spider argument that sets it.
ARGUMENT_OF = {setting: argument for argument, setting in ARGUMENT_SETTINGS.items()}

SPECS: dict[str, Spec] = {
    "FOCUSED_SEEDS": Spec(own.seeds, "comma-separated http(s) URLs (or empty: the topic's example URLs)"),
    "FOCUSED_SEEDS_FILE": readable("file of seed URLs", extra=own.seeds_in_file),
    "FOCUSED_LABELS": readable("labels file (url<TAB>label)"),
    "FOCUSED_PARENT_AGGREGATION": choice(own.aggregations, "aggregation"),
    "FOCUSED_TIEBREAK": choice(own.tiebreaks, "tie-break"),
    "FOCUSED_SEED": whole(),
    "FOCUSED_RELEVANCE_THRESHOLD": number(0, 1),
    "FOCUSED_MAX_PAGES": whole(0, note="0: no limit"),
    "FOCUSED_LOG_EVERY": whole(0, note="0: never"),
    "FOCUSED_DB": db_template(),
    "FOCUSED_JOB": text(),
    "FOCUSED_DB_STORE_HTML": boolean(),
    "FOCUSED_DB_COMMIT_EVERY": whole(1),
    "FOCUSED_DB_COMMIT_SECONDS": number(0, above=True),
    "FOCUSED_REPLAY_PROXY": url(("http",), "a replay proxy URL"),
    "FOCUSED_PROFILE": choice(own.profiles, "profile", empty="the live-web defaults"),
    "FOCUSED_REPLAY_CONCURRENCY": whole(1),
    "FOCUSED_STATS_FILE": writable("file"),
    "FOCUSED_APPRENTICE_BATCH": whole(1),
    "FOCUSED_APPRENTICE_MAX_PENDING": whole(0, note="0: no limit"),
    "FOCUSED_APPRENTICE_MAX_INSTANCES": whole(0, note="0: no limit"),
    "FOCUSED_APPRENTICE_MIN_INSTANCES": whole(1),
    "FOCUSED_APPRENTICE_DMAX": whole(0),
    "FOCUSED_APPRENTICE_WAIT": boolean(),
    "FOCUSED_APPRENTICE_CLASS_FEATURES": boolean(),
    "FOCUSED_APPRENTICE_ANCHOR_CRITIC": boolean(),
    "FOCUSED_APPRENTICE_ANCHOR_WEIGHT": number(0, 1),
    "FOCUSED_APPRENTICE_EXPLORE": number(0),
    "FOCUSED_APPRENTICE_EXPLORE_HALF_LIFE": number(0),
    "FOCUSED_APPRENTICE_SIBLINGS": number(0),
    "FOCUSED_APPRENTICE_SIBLINGS_PSEUDO": number(0, above=True),
    "FOCUSED_APPRENTICE_SIBLINGS_SPREAD": number(0),
    "FOCUSED_APPRENTICE_REFRESH_PAGES": whole(1),
    "FOCUSED_APPRENTICE_REFRESH_UNTIL": whole(0, note="0: the whole crawl"),
    "FOCUSED_APPRENTICE_ALPHA": number(0, above=True),
    "FOCUSED_FRONTIER_STORE": choice(own.frontier_stores, "frontier store"),
    "FOCUSED_FRONTIER_COMMIT_OPS": whole(1),
    "FOCUSED_FRONTIER_COMMIT_SECONDS": number(0, above=True),
    "REDIS_URL": url(("redis", "rediss", "unix"), "a Redis URL"),
    "FOCUSED_REDIS_PREFIX": text(),
    "FOCUSED_REDIS_LEASE_SECONDS": number(0, above=True),
    "FOCUSED_REDIS_RETRY_SECONDS": number(0),
    "FOCUSED_REDIS_IDLE_SECONDS": number(0),
    "FOCUSED_REDIS_POLL_SECONDS": number(0, above=True),
    "FOCUSED_APPRENTICE_SHARED": boolean(),
    "FOCUSED_APPRENTICE_LOCK_SECONDS": number(0, above=True),
    "FOCUSED_APPRENTICE_POLL_SECONDS": number(0, above=True),
    "FOCUSED_ALLOW_INTERNAL": Spec(own.allow_internal, "comma-separated networks, addresses or host names[:port]"),
    "FOCUSED_SESSION_PARAMS": text(),
    "FOCUSED_URL_ALIASES": boolean(),
    "FOCUSED_MAX_DEPTH": whole(0, note="0: no limit"),
    "FOCUSED_MAX_PATH_REPEATS": whole(0, note="0: no limit"),
    "FOCUSED_MAX_PAGES_PER_HOST": whole(0, note="0: no limit"),
    "FOCUSED_NEAR_DUPLICATES": boolean(),
    "FOCUSED_NEAR_DUPLICATE_BITS": whole(0, 15),
    "FOCUSED_TRAP_PATTERN_DUPLICATES": whole(0, note="0: never"),
    "FOCUSED_ORACLE_GRAPH": readable("link graph (.npz) of the replayed web, for oracle-lookahead"),
    "FOCUSED_MAX_LINKS_PER_PAGE": whole(0, note="0: no cap"),
    "FOCUSED_ANALYSIS_WORKERS": Spec(
        own.analysis_workers, "auto or a whole number from 0 to 8 (0: in the crawl process)"
    ),
    "FOCUSED_FRONTIER_MAX_SIZE": whole(0, note="0: no cap"),
    "FOCUSED_MAX_UNSCORED_PAGES": whole(0, note="0: strict best-first"),
    "FOCUSED_MAX_QUEUED_DOWNLOADS": whole(0, note="0: no limit"),
    "FOCUSED_GC_THRESHOLD": whole(0, note="0: Python's own garbage collection"),
    "FOCUSED_PREDICATE": Spec(own.predicate, "a predicate (text:/url:/class: atoms, and/or/not, parentheses)"),
    "FOCUSED_INTELLIGENT_FACTORS": Spec(
        own.intelligent_factors, "a comma-separated list of content, url, link, sibling"
    ),
    "FOCUSED_INTELLIGENT_SIGNIFICANCE": number(0),
    "FOCUSED_INTELLIGENT_SOFT": boolean(),
    "FOCUSED_INTELLIGENT_RESCORE_EVERY": whole(0, note="0: never"),
    "FOCUSED_INTELLIGENT_LOAD": readable("statistics file K (.npz) of an earlier intelligent crawl"),
    "FOCUSED_INTELLIGENT_SAVE": writable("file"),
    "FOCUSED_MARKINES_MODEL": readable("Markines model file (.npz, focused train-markines)"),
    "FOCUSED_MARKINES_SELECTION": choice(("df", "mi"), "feature selection"),
    "FOCUSED_MARKINES_K": whole(1),
    "FOCUSED_MARKINES_BATCH": whole(1),
    "FOCUSED_MARKINES_MIN_INSTANCES": whole(1),
    "FOCUSED_MARKINES_THRESHOLD": number(0, 1),
    "FOCUSED_STRATEGY": Spec(own.strategy, "one of the strategy registry's names (focused.strategies.STRATEGIES)"),
    "FOCUSED_CRITIC_MODEL": Spec(own.critic, "a critic model file (.npz)"),
    "FOCUSED_TOPIC": Spec(own.topic, "a class of the critic, a prefix of its hierarchy, or a comma-separated union"),
    "FOCUSED_APPRENTICE_MODEL": readable("apprentice file", extra=own.apprentice),
    "FOCUSED_RESTRICT_TO": readable("crawl database", extra=own.crawl_db),
    "FOCUSED_JOBDIR": text(),
    "FOCUSED_WARC": Spec(own.warc_folder, "a writable folder for WARC files (or empty: none)"),
    "FOCUSED_WARC_MAX_BYTES": whole(1),
    "FOCUSED_WARC_PAGES": choice(("all", "relevant"), "page selection"),
    "FOCUSED_EXAMPLES": Spec(own.examples, "a folder of example pages, comma-separated URLs, or a file listing them"),
    "FOCUSED_EXAMPLES_CACHE": text(),
    "FOCUSED_EXAMPLES_BACKGROUND": text(),
    "FOCUSED_EXAMPLES_MAX_BACKGROUND": whole(2),
    "FOCUSED_MODEL_MAX_BYTES": Spec(own.model_max_bytes, "a whole number of bytes >= 1"),
    "FOCUSED_PAGE_TIME_BUDGET": number(0, note="seconds; 0: no limit"),
    "FOCUSED_MALLOC_TUNING": boolean(),
}
#: Checked before the others: the limit of model files applies to the files they read.
RUN_FIRST = ("FOCUSED_MODEL_MAX_BYTES",)


def default_names() -> list[str]:
    """Every setting :mod:`focused.settings.defaults` defines."""
    return [n for n in vars(defaults) if n.isupper() and (n.startswith("FOCUSED_") or n == "REDIS_URL")]


# ---------------------------------------------------------------------- entry point


def _check_scrapy_scalars(settings: Any) -> None:
    """Scrapy's own numeric and true/false settings (``-s CONCURRENT_REQUESTS=abc``): one line naming the setting,
    not the traceback of the component that reads it. A number is checked as a number (Scrapy reads some settings
    whose default is a whole number, as ``DOWNLOAD_DELAY``, as floats)."""
    from scrapy.settings import default_settings

    for name in dir(default_settings):
        default = getattr(default_settings, name)
        if not name.isupper() or name.startswith("FOCUSED_") or not isinstance(default, bool | int | float):
            continue
        value = settings.get(name)
        try:
            if isinstance(default, bool):
                settings.getbool(name)
            else:
                settings.getfloat(name)
        except (TypeError, ValueError):
            kind = "True or False" if isinstance(default, bool) else "a number"
            raise ConfigError(
                f"{name}={value}: expected {kind} (a Scrapy setting; its default is {default!r})"
            ) from None


def validate(settings: Any, spider_args: Mapping[str, Any] | None = None, *, ignore_args: Sequence[str] = ()) -> None:
    """Check the spider arguments and every ``FOCUSED_*`` setting; :class:`ConfigError` (one line) on the first bad one.

    ``settings`` are Scrapy settings (not changed); ``spider_args`` the ``-a``
    arguments, which override their settings as the spider applies them.
    """
    args = {k: v for k, v in (spider_args or {}).items() if k not in ignore_args}
    unknown = sorted(set(args) - set(ARGUMENT_SETTINGS))
    if unknown:
        name = unknown[0]
        raise ConfigError(
            f"-a {name}={args[name]}: unknown spider argument{did_you_mean(name, ARGUMENT_SETTINGS)}; "
            f"valid: {', '.join(ARGUMENT_SETTINGS)}"
        )
    effective = settings.copy()
    given_as = {}
    for arg, value in args.items():
        effective.set(ARGUMENT_SETTINGS[arg], value, priority="cmdline")
        given_as[ARGUMENT_SETTINGS[arg]] = f"-a {arg}"
    known = set(SPECS) | set(default_names())
    for name in sorted(effective.attributes if hasattr(effective, "attributes") else effective):
        if name.startswith("FOCUSED_") and name not in known:
            raise ConfigError(
                f"{name}={effective.get(name)}: unknown setting{did_you_mean(name, known)}; "
                "the FOCUSED_* settings are listed in docs/settings.md"
            )
    _check_scrapy_scalars(effective)
    ctx = Context(effective)
    for name, spec in {**{n: SPECS[n] for n in RUN_FIRST}, **SPECS}.items():
        value = effective.get(name)
        try:
            spec.check(value, ctx)
        except Invalid as exc:
            argument = ARGUMENT_OF.get(name)
            if argument and name not in given_as and not as_text(value):  # left out, not given wrong
                raise ConfigError(f"-a {argument}=... is missing: {exc}") from None
            shown = given_as.get(name, name)
            raise ConfigError(f"{shown}={as_text(value)!s}: {exc}") from None
    from focused.frontier.settings import ping_redis, uses_redis

    if uses_redis(effective):  # the shared frontier must answer now, not after a minute of retries
        ping_redis(effective)
