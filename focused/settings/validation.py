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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from focused.errors import ConfigError
from focused.paths import project_path
from focused.settings import defaults
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
from focused.settings.seeds import parse_seeds, read_seeds_file
from focused.settings.suggest import did_you_mean, listed, topic_suggestions

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

# ---------------------------------------------------------------------- seeds


def _seeds(value: Any, ctx: Context) -> None:
    try:
        parse_seeds(as_text(value))
    except ConfigError as exc:
        raise Invalid(str(exc)) from None


def _seeds_in_file(raw: str, ctx: Context) -> None:
    try:
        read_seeds_file(raw)
    except ConfigError as exc:
        raise Invalid(f"expected a file of http(s) URLs, one a line; {exc}") from None


def _strategies() -> Sequence[str]:
    from focused.strategies import STRATEGIES

    return STRATEGIES


def _profiles() -> Sequence[str]:
    from focused.settings.profiles import PROFILES

    return list(PROFILES)


def _frontier_stores() -> Sequence[str]:
    from focused.frontier.settings import STORES

    return STORES


def _aggregations() -> Sequence[str]:
    from focused.frontier.store import AGGREGATIONS

    return AGGREGATIONS


def _tiebreaks() -> Sequence[str]:
    from focused.frontier.store import TIEBREAKS

    return TIEBREAKS


def _strategy(value: Any, ctx: Context) -> None:
    choice(_strategies, "strategy").check(value, ctx)
    name, settings = as_text(value), ctx.settings
    if name == "oracle" and not as_text(settings.get("FOCUSED_LABELS")):
        raise Invalid("'oracle' needs ground-truth labels: -a labels=FILE")
    if name == "apprentice-offline" and not as_text(settings.get("FOCUSED_APPRENTICE_MODEL")):
        raise Invalid("'apprentice-offline' needs a trained apprentice: -a apprentice=FILE")


def _critic(value: Any, ctx: Context) -> None:
    from focused.learning.critic.bundle import ModelError
    from focused.learning.critic.load import load_critic
    from focused.paths import load_model

    if ctx.loaded.get("critic_file") == as_text(value):  # loaded already (a predicate's class names)
        return
    try:
        ctx.loaded["critic"], _ = load_model(as_text(value), load_critic)
        ctx.loaded["critic_file"] = as_text(value)
    except ModelError as exc:
        raise Invalid(f"expected a critic model file (.npz); {exc}") from None


def _topic(value: Any, ctx: Context) -> None:
    from focused.learning.critic.topics import UnknownTopicError

    critic = ctx.loaded.get("critic")
    if critic is None or as_text(ctx.settings.get("FOCUSED_EXAMPLES")):  # a bad critic, or the examples' topic
        return
    spec = as_text(value)
    if not spec and as_text(ctx.settings.get("FOCUSED_PREDICATE")):  # the predicate defines relevance
        return
    if not spec:
        raise Invalid(f"expected a topic of the critic: {listed(critic.topics())}")
    try:
        critic.resolve_topic(spec)
    except UnknownTopicError as exc:
        near = topic_suggestions(critic, exc.topic or spec)
        hint = f"; nearest: {', '.join(near)}" if near else ""
        valid = f"valid topics: {listed(exc.valid)} (`focused topics --model M` lists all)"
        raise Invalid(f"unknown topic{hint}; {valid}{_other_models(spec, ctx)}") from None


def _other_models(spec: str, ctx: Context) -> str:
    """A hint naming the default models other than the crawl's, and which of them has topic ``spec``."""
    from focused.learning.critic.bundle import ModelError
    from focused.learning.critic.load import load_critic
    from focused.learning.critic.topics import UnknownTopicError
    from focused.paths import load_model, shipped_models

    current = Path(as_text(ctx.loaded.get("critic_file"))).name
    others = [name for name in shipped_models() if Path(name).name != current]
    for name in others:
        try:
            load_model(name, load_critic)[0].resolve_topic(spec)
        except (ModelError, UnknownTopicError):
            continue
        return f"; the default model {name} has it: add -a model={name}"
    return f"; other default models: {', '.join(others)}" if others else ""


def _examples(value: Any, ctx: Context) -> None:
    from focused.core.background import check_background
    from focused.core.examples import check_examples_spec, topic_name

    spec = as_text(value)
    if not spec:
        return
    if ctx.settings.getpriority("FOCUSED_CRITIC_MODEL") >= 40:  # given on the command line
        raise Invalid("the examples make the critic: leave out -a model=")
    try:
        files_only = check_examples_spec(spec) is not None
        topic_name(spec, as_text(ctx.settings.get("FOCUSED_TOPIC")).strip())
        check_background([s.strip() for s in as_text(ctx.settings.get("FOCUSED_EXAMPLES_BACKGROUND")).split(",")])
    except ConfigError as exc:
        raise Invalid(str(exc)) from None
    seeds = any(as_text(ctx.settings.get(n)) for n in ("FOCUSED_SEEDS", "FOCUSED_SEEDS_FILE", "REDIS_URL"))
    if files_only and not seeds:
        raise Invalid("example pages given as files have no URLs to start from: add -a seeds=URL[,URL...]")


def _apprentice(raw: str, ctx: Context) -> None:
    from focused.learning.apprentice.learner import Apprentice
    from focused.learning.modelfile import ModelFileError

    try:
        Apprentice.load(project_path(raw))
    except ModelFileError as exc:
        raise Invalid(f"expected an apprentice file (`focused train-apprentice`); {exc}") from None


def _crawl_db(raw: str, ctx: Context) -> None:
    from focused.crawldb import CrawlDBError, open_readonly

    try:
        open_readonly(project_path(raw)).close()
    except CrawlDBError as exc:
        raise Invalid(f"expected a crawl database; {exc}") from None


def _predicate(value: Any, ctx: Context) -> None:
    from focused.relevance import load_predicate
    from focused.relevance.predicates import PredicateError, parse_predicate

    if not as_text(value):
        return
    try:
        predicate = parse_predicate(as_text(value))
    except PredicateError as exc:
        raise Invalid(str(exc)) from None
    if predicate.class_atoms():  # its class names must be the critic's (the critic's own check reports a bad file)
        try:
            _critic(ctx.settings.get("FOCUSED_CRITIC_MODEL"), ctx)
        except Invalid:
            return
        try:
            load_predicate(as_text(value), ctx.loaded["critic"])
        except ConfigError as exc:
            raise Invalid(str(exc)) from None


def _intelligent_factors(value: Any, ctx: Context) -> None:
    from focused.strategies.intelligent import FACTORS as INTELLIGENT_FACTORS

    factors = [f.strip() for f in as_text(value).split(",") if f.strip()]
    bad = [f for f in factors if f not in INTELLIGENT_FACTORS]
    if not factors or bad:
        raise Invalid(f"expected a comma-separated list of {', '.join(INTELLIGENT_FACTORS)}")


def _analysis_workers(value: Any, ctx: Context) -> None:
    text = as_text(value).lower()
    if text == "auto":
        return
    if not (text.isdigit() and int(text) <= 8):
        raise Invalid("expected auto or a whole number from 0 to 8 (0: pages are read in the crawl process)")


def _warc_folder(value: Any, ctx: Context) -> None:
    """A folder that exists and takes files, or can be created (FOCUSED_WARC)."""
    import tempfile

    raw = as_text(value)
    if not raw:
        return
    path = project_path(raw)
    if path.exists() and not path.is_dir():
        raise Invalid(f"expected a writable folder for WARC files (or empty); {path} is not a folder")
    parent = path
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    try:
        if not parent.is_dir():
            raise OSError(f"{parent} is not a folder")
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        why = f"cannot write in {parent} ({exc})"
        raise Invalid(f"expected a writable folder for WARC files (or empty); {why}") from None


def _allow_internal(value: Any, ctx: Context) -> None:
    from focused.addresses import (
        YES_NO,
        AddressPolicy,
        AllowListError,
        allow_entry,
        is_internal_ip,
        is_internal_name,
        parse_ip,
    )

    if value is True or as_text(value).strip().lower() in YES_NO:
        try:  # the seeds at internal addresses give the example
            seeds = parse_seeds(as_text(ctx.settings.get("FOCUSED_SEEDS")))
        except ConfigError:
            seeds = []
        hosts = [urlsplit(seed).hostname or "" for seed in seeds]
        internal = [
            allow_entry(seed)
            for seed, host in zip(seeds, hosts, strict=True)
            if is_internal_name(host) or ((ip := parse_ip(host)) is not None and is_internal_ip(ip))
        ]
        example = ",".join(dict.fromkeys(internal)) or "127.0.0.1:8000"
        raise Invalid(f"expected the hosts to allow, not a yes/no value: e.g. FOCUSED_ALLOW_INTERNAL={example}")
    try:
        AddressPolicy.from_setting(value)
    except AllowListError as exc:
        raise Invalid(str(exc).split(": ", 1)[-1]) from None


def _model_max_bytes(value: Any, ctx: Context) -> None:
    """A positive size, which becomes the limit of every model file the crawl (and this check) reads."""
    from focused.learning.modelfile import set_max_bytes

    whole(1).check(value, ctx)
    set_max_bytes(int(as_text(value)) if not isinstance(value, int) else value)


#: One check per setting, in the order they run (files that must be loaded last).
SPECS: dict[str, Spec] = {
    "FOCUSED_SEEDS": Spec(_seeds, "comma-separated http(s) URLs (or empty: the topic's example URLs)"),
    "FOCUSED_SEEDS_FILE": readable("file of seed URLs", extra=_seeds_in_file),
    "FOCUSED_LABELS": readable("labels file (url<TAB>label)"),
    "FOCUSED_PARENT_AGGREGATION": choice(_aggregations, "aggregation"),
    "FOCUSED_TIEBREAK": choice(_tiebreaks, "tie-break"),
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
    "FOCUSED_PROFILE": choice(_profiles, "profile", empty="the live-web defaults"),
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
    "FOCUSED_FRONTIER_STORE": choice(_frontier_stores, "frontier store"),
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
    "FOCUSED_ALLOW_INTERNAL": Spec(_allow_internal, "comma-separated networks, addresses or host names[:port]"),
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
    "FOCUSED_ANALYSIS_WORKERS": Spec(_analysis_workers, "auto or a whole number from 0 to 8 (0: in the crawl process)"),
    "FOCUSED_FRONTIER_MAX_SIZE": whole(0, note="0: no cap"),
    "FOCUSED_MAX_UNSCORED_PAGES": whole(0, note="0: strict best-first"),
    "FOCUSED_MAX_QUEUED_DOWNLOADS": whole(0, note="0: no limit"),
    "FOCUSED_GC_THRESHOLD": whole(0, note="0: Python's own garbage collection"),
    "FOCUSED_PREDICATE": Spec(_predicate, "a predicate (text:/url:/class: atoms, and/or/not, parentheses)"),
    "FOCUSED_INTELLIGENT_FACTORS": Spec(_intelligent_factors, "a comma-separated list of content, url, link, sibling"),
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
    "FOCUSED_STRATEGY": Spec(_strategy, "one of the strategy registry's names (focused.strategies.STRATEGIES)"),
    "FOCUSED_CRITIC_MODEL": Spec(_critic, "a critic model file (.npz)"),
    "FOCUSED_TOPIC": Spec(_topic, "a class of the critic, a prefix of its hierarchy, or a comma-separated union"),
    "FOCUSED_APPRENTICE_MODEL": readable("apprentice file", extra=_apprentice),
    "FOCUSED_RESTRICT_TO": readable("crawl database", extra=_crawl_db),
    "FOCUSED_JOBDIR": text(),
    "FOCUSED_WARC": Spec(_warc_folder, "a writable folder for WARC files (or empty: none)"),
    "FOCUSED_WARC_MAX_BYTES": whole(1),
    "FOCUSED_WARC_PAGES": choice(("all", "relevant"), "page selection"),
    "FOCUSED_EXAMPLES": Spec(_examples, "a folder of example pages, comma-separated URLs, or a file listing them"),
    "FOCUSED_EXAMPLES_CACHE": text(),
    "FOCUSED_EXAMPLES_BACKGROUND": text(),
    "FOCUSED_EXAMPLES_MAX_BACKGROUND": whole(2),
    "FOCUSED_MODEL_MAX_BYTES": Spec(_model_max_bytes, "a whole number of bytes >= 1"),
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
