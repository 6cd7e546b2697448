"""The checks of one setting each, for :data:`focused.settings.validation.SPECS`: seeds, the strategy, the critic
and its topic, examples, the apprentice, a crawl database, the predicate, the page-analysis workers, the WARC
folder, the allow-list of internal addresses and the model size cap. The checks that load files (the critic, the
apprentice, a crawl database) keep what they loaded in the :class:`~focused.settings.checks.Context`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from focused.errors import ConfigError
from focused.paths import project_path
from focused.settings.checks import (
    Context,
    Invalid,
    as_text,
    choice,
    whole,
)
from focused.settings.seeds import parse_seeds, read_seeds_file
from focused.settings.suggest import listed, topic_suggestions

# ---------------------------------------------------------------------- seeds


def seeds(value: Any, ctx: Context) -> None:
    try:
        parse_seeds(as_text(value))
    except ConfigError as exc:
        raise Invalid(str(exc)) from None


def seeds_in_file(raw: str, ctx: Context) -> None:
    try:
        read_seeds_file(raw)
    except ConfigError as exc:
        raise Invalid(f"expected a file of http(s) URLs, one a line; {exc}") from None


def strategies() -> Sequence[str]:
    from focused.strategies import STRATEGIES

    return STRATEGIES


def profiles() -> Sequence[str]:
    from focused.settings.profiles import PROFILES

    return list(PROFILES)


def frontier_stores() -> Sequence[str]:
    from focused.frontier.settings import STORES

    return STORES


def aggregations() -> Sequence[str]:
    from focused.frontier.store import AGGREGATIONS

    return AGGREGATIONS


def tiebreaks() -> Sequence[str]:
    from focused.frontier.store import TIEBREAKS

    return TIEBREAKS


def strategy(value: Any, ctx: Context) -> None:
    choice(strategies, "strategy").check(value, ctx)
    name, settings = as_text(value), ctx.settings
    if name == "oracle" and not as_text(settings.get("FOCUSED_LABELS")):
        raise Invalid("'oracle' needs ground-truth labels: -a labels=FILE")
    if name == "apprentice-offline" and not as_text(settings.get("FOCUSED_APPRENTICE_MODEL")):
        raise Invalid("'apprentice-offline' needs a trained apprentice: -a apprentice=FILE")


def critic(value: Any, ctx: Context) -> None:
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


def topic(value: Any, ctx: Context) -> None:
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


def examples(value: Any, ctx: Context) -> None:
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


def apprentice(raw: str, ctx: Context) -> None:
    from focused.learning.apprentice.learner import Apprentice
    from focused.learning.modelfile import ModelFileError

    try:
        Apprentice.load(project_path(raw))
    except ModelFileError as exc:
        raise Invalid(f"expected an apprentice file (`focused train-apprentice`); {exc}") from None


def crawl_db(raw: str, ctx: Context) -> None:
    from focused.crawldb import CrawlDBError, open_readonly

    try:
        open_readonly(project_path(raw)).close()
    except CrawlDBError as exc:
        raise Invalid(f"expected a crawl database; {exc}") from None


def predicate(value: Any, ctx: Context) -> None:
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
            critic(ctx.settings.get("FOCUSED_CRITIC_MODEL"), ctx)
        except Invalid:
            return
        try:
            load_predicate(as_text(value), ctx.loaded["critic"])
        except ConfigError as exc:
            raise Invalid(str(exc)) from None


def intelligent_factors(value: Any, ctx: Context) -> None:
    from focused.strategies.intelligent import FACTORS as INTELLIGENT_FACTORS

    factors = [f.strip() for f in as_text(value).split(",") if f.strip()]
    bad = [f for f in factors if f not in INTELLIGENT_FACTORS]
    if not factors or bad:
        raise Invalid(f"expected a comma-separated list of {', '.join(INTELLIGENT_FACTORS)}")


def analysis_workers(value: Any, ctx: Context) -> None:
    text = as_text(value).lower()
    if text == "auto":
        return
    if not (text.isdigit() and int(text) <= 8):
        raise Invalid("expected auto or a whole number from 0 to 8 (0: pages are read in the crawl process)")


def warc_folder(value: Any, ctx: Context) -> None:
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


def allow_internal(value: Any, ctx: Context) -> None:
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


def model_max_bytes(value: Any, ctx: Context) -> None:
    """A positive size, which becomes the limit of every model file the crawl (and this check) reads."""
    from focused.learning.modelfile import set_max_bytes

    whole(1).check(value, ctx)
    set_max_bytes(int(as_text(value)) if not isinstance(value, int) else value)


#: One check per setting, in the order they run (files that must be loaded last).
