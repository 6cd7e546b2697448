"""The per-crawl state shared by the focused crawler's Scrapy components.

The spider middleware that scores links and the pipeline that labels pages both
need the critic's verdict on the same page; :class:`CrawlRuntime` loads the
critic and the topic once per crawler, and memoises verdicts by URL so that a
page is classified once. Components get it with ``CrawlRuntime.of(crawler)``.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from focused.errors import ConfigError
from focused.learning.critic.bundle import ModelError
from focused.learning.critic.load import load_critic
from focused.learning.critic.topics import Topic, UnknownTopicError, Verdict
from focused.learning.modelfile import set_max_bytes
from focused.paths import load_model
from focused.relevance import RelevanceDefinition, load_predicate
from focused.settings.access import setting
from focused.strategies import build_strategy
from focused.strategies.base import BuildContext, Strategy

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

_ATTR = "_focused_runtime"
_MEMO_SIZE = 2048


class CrawlRuntime:
    """Critic, topic, strategy and verdict memo of one crawl."""

    def __init__(self, settings: BaseSettings) -> None:
        self.settings = settings
        set_max_bytes(setting(settings, "FOCUSED_MODEL_MAX_BYTES"))  # before any model file is read
        try:
            self.critic: Any
            self.critic, source = load_model(setting(settings, "FOCUSED_CRITIC_MODEL"), load_critic)
        except ModelError as exc:  # one line naming the file and what to do
            raise ConfigError(str(exc)) from exc
        #: The critic's file as crawl databases record it (a packaged default keeps its ``models/NAME``).
        self.model_path = source.name
        if source.packaged:
            logger.info("Critic %s: the default model packaged with focused (%s)", source.name, source.resource)
        spec = setting(settings, "FOCUSED_TOPIC") or ""
        predicate_spec = (setting(settings, "FOCUSED_PREDICATE") or "").strip()
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
        self.threshold = setting(settings, "FOCUSED_RELEVANCE_THRESHOLD")
        #: What "relevant" means: the critic's Pr(c*|page), or the predicate (``-a predicate=``).
        self.relevance = RelevanceDefinition(
            self.critic, self.threshold, *(load_predicate(predicate_spec, self.critic) if predicate_spec else ())
        )
        #: The topic's name in file names and the crawl database ("predicate" when only a predicate defines it).
        self.topic_label = self.topic.name if (setting(settings, "FOCUSED_TOPIC") or "").strip() else "predicate"
        context = BuildContext(settings, self.critic, self.topic, self.relevance.relevance)
        self.strategy: Strategy = build_strategy(setting(settings, "FOCUSED_STRATEGY"), context)
        self.critic.release_counts()  # from here on the crawl (and its page-analysis worker) only scores
        self._memo: OrderedDict[str, Verdict] = OrderedDict()

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlRuntime:
        """The runtime of ``crawler``, created on first use."""
        runtime = getattr(crawler, _ATTR, None)
        if runtime is None:
            runtime = cls(crawler.settings)
            setattr(crawler, _ATTR, runtime)
        return runtime

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
