"""The Markines classifiers as frontier strategies: ``markines:{nb,svm,cosine}-{link,page}``.

* ``-link``: each outlink of u is scored by the classifier applied to the words near the
  link in u (DOM distance <= 10, no offsets); the paper's "apprentice".
* ``-page``: every outlink of u gets the classifier's score of u's whole text; the
  paper's "baseline" with another page classifier than the critic.

Offline (the paper's protocol) the classifiers come from a model file trained on crawl
databases (``focused train-markines``) and stay frozen. Without a model file the
strategy learns online, as the apprentice does: a link's words wait until its target is
fetched and judged by the critic (``relevance >= threshold`` is on topic); every
``batch`` new instances (once there are ``min_instances`` of both classes) a thread
refits feature selection and the classifiers, and the new model is swapped in at the next
page. Until then links get the baseline's Pr(c*|u). Waiting URLs are not re-scored.
Scrapy-free.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from focused.learning.apprentice.payload import page_key
from focused.learning.markines.classifiers import CLASSIFIERS, DEFAULT_K, LINK_D_MAX, MODES, MarkinesPart, fit_part
from focused.learning.markines.data import link_contexts, page_words
from focused.paths import project_path
from focused.settings.access import setting
from focused.strategies.base import BuildContext, FetchedPage, Scored

__all__ = ["MarkinesStrategy", "OnlineMarkines", "make_strategy", "parse_name", "strategy_names"]

logger = logging.getLogger(__name__)

PREFIX = "markines"


def strategy_names() -> tuple[str, ...]:
    """Every ``markines:CLASSIFIER-MODE`` name."""
    return tuple(f"{PREFIX}:{c}-{m}" for m in MODES for c in CLASSIFIERS)


def parse_name(name: str) -> tuple[str, str]:
    """``"markines:svm-link"`` -> ``("svm", "link")``; ``ValueError`` naming the valid ones."""
    prefix, _, rest = name.partition(":")
    classifier, _, mode = rest.partition("-")
    if prefix != PREFIX or classifier not in CLASSIFIERS or mode not in MODES:
        raise ValueError(f"unknown Markines strategy {name!r}; valid: {', '.join(strategy_names())}")
    return classifier, mode


class OnlineMarkines:
    """Instances gathered during the crawl and a model refitted in a background thread."""

    def __init__(
        self,
        mode: str,
        *,
        selection: str = "df",
        k: int = DEFAULT_K,
        threshold: float = 0.5,
        batch: int = 200,
        min_instances: int = 200,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")
        self.mode = mode
        self.selection = selection
        self.k = k
        self.threshold = threshold
        self.batch = max(1, batch)
        self.min_instances = max(2, min_instances)
        self.docs: list[list[str]] = []
        self.labels: list[bool] = []
        self.version = 0
        self._judged: dict[str, bool] = {}
        self._pending: dict[str, list[list[str]]] = {}
        self._fitted_at = 0
        self._part: MarkinesPart | None = None
        self._future: Future[MarkinesPart] | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="focused-markines")

    @property
    def part(self) -> MarkinesPart | None:
        """The newest fitted model (swapped in here, on the caller's thread)."""
        future = self._future
        if future is not None and future.done():
            self._future = None
            try:
                self._part = future.result()
                self.version += 1
                logger.info("Markines %s model %d: %s", self.mode, self.version, self._part.info)
            except ValueError as exc:
                logger.warning("Markines %s model not refitted: %s", self.mode, exc)
        return self._part

    def observe(self, url: str, relevance: float, words: list[str] | None, contexts: dict[str, list[str]]) -> None:
        """Page ``url`` was judged; ``words`` its text (page mode), ``contexts`` its links' words (link mode)."""
        label = relevance >= self.threshold
        key = page_key(url)
        self._judged.setdefault(key, label)
        if self.mode == "page":
            if words is not None:
                self._add(words, label)
        else:
            for words_near in self._pending.pop(key, []):
                self._add(words_near, label)
            for target, near in contexts.items():
                tkey = page_key(target)
                if tkey == key:
                    continue
                known = self._judged.get(tkey)
                if known is None:
                    self._pending.setdefault(tkey, []).append(near)
                else:
                    self._add(near, known)
        self._maybe_refit()

    def _add(self, words: list[str], label: bool) -> None:
        self.docs.append(words)
        self.labels.append(label)

    def _maybe_refit(self) -> None:
        n = len(self.labels)
        if self._future is not None or n < self.min_instances or n - self._fitted_at < self.batch:
            return
        n_pos = sum(self.labels)
        if n_pos == 0 or n_pos == n:
            return
        self._fitted_at = n
        docs, labels = list(self.docs), np.array(self.labels)
        self._future = self._executor.submit(fit_part, docs, labels, selection=self.selection, k=self.k)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


class MarkinesStrategy:
    """Scores links with one Markines classifier (see the module docstring)."""

    def __init__(
        self,
        name: str,
        *,
        part: MarkinesPart | None = None,
        online: OnlineMarkines | None = None,
        d_max: int = LINK_D_MAX,
    ) -> None:
        self.classifier, self.mode = parse_name(name)
        if part is None and online is None:
            raise ValueError(f"strategy {name!r} needs a trained model or online learning")
        self.name = name
        self.part = part
        self.online = online
        self.d_max = d_max

    def score(self, page: FetchedPage, links: Sequence[str]) -> Scored:
        contexts: dict[str, list[str]] = {}
        words: list[str] | None = None
        if self.mode == "link":
            contexts = link_contexts(page.html, page.url, self.d_max) if page.html else {}
        else:
            words = page_words(page.html) if page.html else []
        if self.online is not None:
            self.online.observe(page.url, page.verdict.relevance, words, contexts)
        part = self.online.part if self.online is not None else None
        part = part or self.part
        if part is None or not links:
            return Scored([page.verdict.relevance] * len(links))
        if self.mode == "page":
            value = float(part.score([words or []], self.classifier)[0])
            return Scored([value] * len(links))
        by_key = {page_key(url): near for url, near in contexts.items()}
        docs = [by_key.get(page_key(link), []) for link in links]
        return Scored([float(s) for s in part.score(docs, self.classifier)])


def make_strategy(name: str, settings: Any, resolve_path: Callable[[str], Path]) -> MarkinesStrategy:
    """The strategy ``name`` from the ``FOCUSED_MARKINES_*`` settings (any object with Scrapy's
    ``get``/``getint``/``getfloat``); :class:`~focused.errors.ConfigError` (one line) for bad values."""
    from focused.errors import ConfigError
    from focused.learning.markines.classifiers import SELECTIONS, MarkinesModel, MarkinesModelError

    try:
        classifier, mode = parse_name(name)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    path = setting(settings, "FOCUSED_MARKINES_MODEL") or ""
    if path:
        try:
            model = MarkinesModel.load(resolve_path(path))
        except MarkinesModelError as exc:
            raise ConfigError(str(exc)) from exc
        part = model.parts.get(mode)
        if part is None:
            raise ConfigError(
                f"{path} has no {mode} classifiers (it has: {', '.join(model.parts)}); "
                f"use markines:{classifier}-{next(iter(model.parts))} or retrain with both"
            )
        return MarkinesStrategy(name, part=part, d_max=model.d_max)
    selection = setting(settings, "FOCUSED_MARKINES_SELECTION") or "df"
    if selection not in SELECTIONS:
        raise ConfigError(f"FOCUSED_MARKINES_SELECTION must be one of {', '.join(SELECTIONS)}, not {selection!r}")
    try:
        numbers = {key: setting(settings, f"FOCUSED_MARKINES_{key}") for key in ("K", "BATCH", "MIN_INSTANCES")}
        threshold = setting(settings, "FOCUSED_MARKINES_THRESHOLD")
    except ValueError as exc:
        raise ConfigError(f"bad Markines setting ({exc}): K, BATCH, MIN_INSTANCES are whole numbers >= 1") from exc
    bad = [f"FOCUSED_MARKINES_{key}={value}" for key, value in numbers.items() if value < 1]
    if not 0.0 <= threshold <= 1.0:
        bad.append(f"FOCUSED_MARKINES_THRESHOLD={threshold}")
    if bad:
        raise ConfigError(f"bad Markines setting {', '.join(bad)}: counts must be >= 1, the threshold in [0, 1]")
    online = OnlineMarkines(
        mode,
        selection=selection,
        k=numbers["K"],
        threshold=threshold,
        batch=numbers["BATCH"],
        min_instances=numbers["MIN_INSTANCES"],
    )
    return MarkinesStrategy(name, online=online)


def build_markines(name: str, ctx: BuildContext) -> MarkinesStrategy:
    """``markines:CLASSIFIER-MODE`` from the ``FOCUSED_MARKINES_*`` settings."""
    return make_strategy(name, ctx.settings, project_path)
