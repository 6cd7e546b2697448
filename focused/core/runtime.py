"""The per-crawl state shared by the focused crawler's Scrapy components.

The spider middleware that scores links and the pipeline that labels pages both
need the critic's verdict on the same page; :class:`CrawlRuntime` loads the
critic and the topic once per crawler, and memoises verdicts by URL so that a
page is classified once. Components get it with ``CrawlRuntime.of(crawler)``.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from focused.errors import ConfigError
from focused.learning.apprentice.explore import NoveltyBonus
from focused.learning.apprentice.online import OnlineApprentice, make_snippet_critic
from focused.learning.apprentice.siblings import SiblingFeedback
from focused.learning.critic import ModelError, Topic, UnknownTopicError, Verdict, load_critic
from focused.paths import load_model, project_path
from focused.relevance import RelevanceDefinition, load_predicate
from focused.strategies import STRATEGIES, ApprenticeStrategy, Baseline, BreadthFirst, Oracle, Strategy

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

_ATTR = "_focused_runtime"
_MEMO_SIZE = 2048


def label_key_lookup(labels: dict[str, str]) -> Callable[[str], str | None]:
    """The key of ``labels`` that names the page at a URL, or ``None``: ``dir``, ``dir/``,
    ``dir/index.html`` and ``dir//`` name one page (:mod:`focused.urls`)."""
    from focused.replay.urlnorm import normalize_url
    from focused.urls import collapse_aliases

    def key_of(url: str) -> str | None:
        key = normalize_url(url)
        if key in labels:
            return key
        base = collapse_aliases(key)
        for candidate in (base, base.rstrip("/"), base.rstrip("/") + "/", base.rstrip("/") + "/index.html"):
            if candidate in labels:
                return candidate
        return None

    return key_of


def first_fetches_on_topic(urls: Iterable[str], labels: dict[str, str], on_topic: Callable[[str], bool]) -> list[bool]:
    """For each fetched URL in crawl order: a page whose label is on topic, fetched for the first time.

    A page fetched again under another of its names (an alias, :func:`label_key_lookup`) is counted
    as a wasted fetch, as is an unlabelled page: the true harvest counts distinct relevant pages.
    """
    key_of = label_key_lookup(labels)
    seen: set[str] = set()
    out = []
    for url in urls:
        key = key_of(url)
        out.append(key is not None and key not in seen and on_topic(labels[key]))
        if key is not None:
            seen.add(key)
    return out


def label_lookup(labels: dict[str, str]) -> Callable[[str], str | None]:
    """Ground-truth lookup that treats ``dir``, ``dir/``, ``dir/index.html`` and ``dir//`` alike."""
    key_of = label_key_lookup(labels)

    def label_of(url: str) -> str | None:
        key = key_of(url)
        return None if key is None else labels[key]

    return label_of


class CrawlRuntime:
    """Critic, topic, strategy and verdict memo of one crawl."""

    def __init__(self, settings: BaseSettings) -> None:
        self.settings = settings
        try:
            self.critic: Any
            self.critic, source = load_model(settings.get("FOCUSED_CRITIC_MODEL"), load_critic)
        except ModelError as exc:  # one line naming the file and what to do
            raise ConfigError(str(exc)) from exc
        #: The critic's file as crawl databases record it (a packaged default keeps its ``models/NAME``).
        self.model_path = source.name
        if source.packaged:
            logger.info("Critic %s: the default model packaged with focused (%s)", source.name, source.resource)
        spec = settings.get("FOCUSED_TOPIC") or ""
        predicate_spec = (settings.get("FOCUSED_PREDICATE") or "").strip()
        if not spec.strip() and predicate_spec:  # a predicate defines relevance: the topic is all classes
            spec = ",".join(dict.fromkeys(c.split(".")[0] for c in self.critic.classes))
        if not spec.strip():
            raise ConfigError(
                "no topic given: use -a topic=NAME; valid topics for "
                f"{Path(source.name).name}: {', '.join(self.critic.topics())}"
            )
        try:
            self.topic: Topic = self.critic.resolve_topic(spec)
        except UnknownTopicError as exc:
            raise ConfigError(str(exc)) from exc
        self.threshold = settings.getfloat("FOCUSED_RELEVANCE_THRESHOLD", 0.5)
        #: What "relevant" means: the critic's Pr(c*|page), or the predicate (``-a predicate=``).
        self.relevance = RelevanceDefinition(
            self.critic, self.threshold, *(load_predicate(predicate_spec, self.critic) if predicate_spec else ())
        )
        #: The topic's name in file names and the crawl database ("predicate" when only a predicate defines it).
        self.topic_label = self.topic.name if (settings.get("FOCUSED_TOPIC") or "").strip() else "predicate"
        self.strategy: Strategy = self._make_strategy(settings.get("FOCUSED_STRATEGY", "baseline"))
        self._memo: OrderedDict[str, Verdict] = OrderedDict()

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlRuntime:
        """The runtime of ``crawler``, created on first use."""
        runtime = getattr(crawler, _ATTR, None)
        if runtime is None:
            runtime = cls(crawler.settings)
            setattr(crawler, _ATTR, runtime)
        return runtime

    def _make_strategy(self, name: str) -> Strategy:
        if name == "bfs":
            return BreadthFirst()
        if name == "baseline":
            return Baseline()
        if name in ("oracle", "oracle-lookahead"):
            path = self.settings.get("FOCUSED_LABELS")
            if not path:
                raise ConfigError(f"strategy {name!r} needs ground-truth labels: -s FOCUSED_LABELS=FILE")
            from focused.replay.labels import read_labels

            try:
                labels, _ = read_labels(project_path(path))
            except OSError as exc:
                raise ConfigError(f"cannot read labels file {path}: {exc}") from exc
            if name == "oracle":
                return Oracle(self.topic, label_lookup(labels))
            from focused.strategies.oracles import GraphFileError, lookahead_oracle

            graph = self.settings.get("FOCUSED_ORACLE_GRAPH")
            if not graph:
                raise ConfigError("strategy 'oracle-lookahead' needs a link graph: -s FOCUSED_ORACLE_GRAPH=FILE.npz")
            try:
                return lookahead_oracle(self.topic, labels, project_path(graph))
            except GraphFileError as exc:
                raise ConfigError(str(exc)) from exc
        if name == "intelligent" or name.startswith("intelligent:"):
            from focused.extensions.intelligent import build_intelligent

            strategy = build_intelligent(name, self.settings)
            strategy.relevance_of = self.relevance.relevance
            return strategy
        if name in ("apprentice", "apprentice-offline"):
            return ApprenticeStrategy(self._online_apprentice(offline=name == "apprentice-offline"), name)
        if name.startswith("markines:"):
            from focused.strategies.markines import make_strategy

            return make_strategy(name, self.settings, project_path)
        raise ConfigError(f"unknown strategy {name!r}; valid strategies: {', '.join(STRATEGIES)}")

    def _online_apprentice(self, *, offline: bool) -> OnlineApprentice:
        """The apprentice from the FOCUSED_APPRENTICE_* settings (and a pre-trained file)."""
        from focused.learning.apprentice import Apprentice, ModelFileError, NotReadyError

        settings = self.settings
        path = settings.get("FOCUSED_APPRENTICE_MODEL") or ""
        d_max = settings.getint("FOCUSED_APPRENTICE_DMAX", 5)
        class_feats = settings.getbool("FOCUSED_APPRENTICE_CLASS_FEATURES", False)
        anchor_critic = settings.getbool("FOCUSED_APPRENTICE_ANCHOR_CRITIC", True)
        if path:
            try:
                learner = Apprentice.load(project_path(path))
            except ModelFileError as exc:
                hint = "train one with `focused train-apprentice --from CRAWL.sqlite -o FILE`"
                raise ConfigError(f"{exc} ({hint})") from exc
            # serve the features the model was trained on
            d_max = int(learner.feature_params.get("d_max", d_max))
            class_feats = bool(learner.feature_params.get("class_features", class_feats))
        elif offline:
            raise ConfigError("strategy 'apprentice-offline' needs a trained apprentice: -a apprentice=FILE")
        else:
            weight = settings.getfloat("FOCUSED_APPRENTICE_ANCHOR_WEIGHT", 0.7)
            offset = anchor_critic and settings.getbool("FOCUSED_APPRENTICE_OFFSET", False)
            learner = Apprentice(
                alpha=settings.getfloat("FOCUSED_APPRENTICE_ALPHA", 0.1),
                threshold=settings.getfloat("FOCUSED_APPRENTICE_THRESHOLD", 0.5),
                binning=settings.get("FOCUSED_APPRENTICE_BINNING", "equal-prob"),
                min_instances=settings.getint("FOCUSED_APPRENTICE_MIN_INSTANCES", 200),
                feature_params={
                    "d_max": d_max,
                    "class_features": class_feats,
                    "offsets": True,
                    "critic_views": anchor_critic,
                },
                n_side=2 if anchor_critic else 0,
                side_offset=(1.0 - weight, weight) if offset else None,
                offset_penalty=settings.getfloat("FOCUSED_APPRENTICE_OFFSET_PENALTY", 10.0),
                correct_views=settings.getbool("FOCUSED_APPRENTICE_OFFSET_VIEWS", False),
                grouped_folds=settings.getbool("FOCUSED_APPRENTICE_GROUPED_FOLDS", False),
            )
        try:
            online = OnlineApprentice(
                learner,
                d_max=d_max,
                class_features=class_feats,
                batch_size=settings.getint("FOCUSED_APPRENTICE_BATCH", 200),
                learn=not offline,
                aggregation=settings.get("FOCUSED_PARENT_AGGREGATION", "max"),
                snippet_critic=make_snippet_critic(self.critic, self.topic) if learner.n_side else None,
                anchor_weight=settings.getfloat("FOCUSED_APPRENTICE_ANCHOR_WEIGHT", 0.7),
                gate=settings.getbool("FOCUSED_APPRENTICE_GATE", False) and not path,
                explore=None if offline else self._exploration(learner.n_features),
                siblings=None if offline else self._siblings(),
            )
        except ValueError as exc:  # e.g. FOCUSED_APPRENTICE_ANCHOR_WEIGHT outside [0, 1]
            raise ConfigError(str(exc)) from exc
        if path:
            try:
                online.install(learner.fit())
            except NotReadyError as exc:
                raise ConfigError(f"the apprentice in {path} cannot predict yet: {exc}") from exc
        return online

    def _exploration(self, n_features: int) -> NoveltyBonus | None:
        """The apprentice's exploration bonus from FOCUSED_APPRENTICE_EXPLORE*, ``None`` when it is off."""
        weight = self.settings.getfloat("FOCUSED_APPRENTICE_EXPLORE", 0.0)
        if weight <= 0:
            return None
        half_life = self.settings.getfloat("FOCUSED_APPRENTICE_EXPLORE_HALF_LIFE", 0.0)
        return NoveltyBonus(n_features, weight, half_life, self.settings.getbool("FOCUSED_APPRENTICE_EXPLORE_ADAPTIVE"))

    def _siblings(self) -> SiblingFeedback | None:
        """The apprentice's sibling feedback from FOCUSED_APPRENTICE_SIBLINGS*, ``None`` when it is off."""
        weight = self.settings.getfloat("FOCUSED_APPRENTICE_SIBLINGS", 2.0)
        if weight <= 0:
            return None
        return SiblingFeedback(
            weight,
            self.settings.getfloat("FOCUSED_APPRENTICE_SIBLINGS_PSEUDO", 2.0),
            self.settings.getbool("FOCUSED_APPRENTICE_SIBLINGS_EXPECTED", False),
            self.settings.getbool("FOCUSED_APPRENTICE_SIBLINGS_LEARNED", False),
            self.settings.getfloat("FOCUSED_APPRENTICE_SIBLINGS_SPREAD", 2.0),
            self.settings.getbool("FOCUSED_APPRENTICE_SIBLINGS_REGIONS", False),
            self.settings.getbool("FOCUSED_APPRENTICE_SIBLINGS_LOWER", True),
        )

    def judge(self, url: str, text: str) -> Verdict:
        """The critic's verdict on a page, computed once per URL."""
        verdict = self._memo.get(url)
        if verdict is None:
            verdict = self.critic.judge(text, self.topic, url=url)
            self._memo[url] = verdict
            if len(self._memo) > _MEMO_SIZE:
                self._memo.popitem(last=False)
        return verdict

    def remember(self, url: str, verdict: Verdict) -> None:
        """A verdict on ``url`` computed elsewhere (the page-analysis worker): :meth:`judge` returns it."""
        self._memo[url] = verdict
        if len(self._memo) > _MEMO_SIZE:
            self._memo.popitem(last=False)

    def seeds(self) -> list[str]:
        """The example URLs the model stores for the topic's classes."""
        examples = getattr(self.critic, "examples", {}) or {}
        urls: list[str] = []
        for cls_name in self.topic.classes:
            for url in examples.get(cls_name, []):
                if url not in urls:
                    urls.append(url)
        return urls
