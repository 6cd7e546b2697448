"""The paper's enhanced crawler as a frontier policy: links scored by the apprentice (Chakrabarti et al. 2002).

:func:`build_apprentice` makes it from the ``FOCUSED_APPRENTICE_*`` settings
(``apprentice``: it learns online from the critic's verdicts; ``apprentice-offline``:
a model trained off-line with ``focused train-apprentice``, which does not learn).
Scrapy-free: the settings are any object with Scrapy's typed getters.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from focused.errors import ConfigError
from focused.learning.apprentice.explore import NoveltyBonus
from focused.learning.apprentice.learner import Apprentice, NotReadyError
from focused.learning.apprentice.online import OnlineApprentice
from focused.learning.apprentice.payload import LinkPayload, encode_links
from focused.learning.apprentice.siblings import SiblingFeedback
from focused.learning.critic.snippet import make_snippet_critic
from focused.learning.modelfile import ModelFileError
from focused.paths import project_path
from focused.settings.access import setting
from focused.strategies.base import BuildContext, FetchedPage, Scored

logger = logging.getLogger(__name__)


class ApprenticeStrategy:
    """The paper's enhanced crawler: links scored by the apprentice, Pr(HIGH | ⟨t,d⟩ features).

    Before the apprentice has a model (online mode, first batches) a link gets
    the critic's blended views of u and of the anchor (or, without a snippet
    critic, the baseline's Pr(c*|u)). The per-link features go to the frontier
    as payloads so that a retrained model can re-score waiting URLs.
    """

    def __init__(self, online: OnlineApprentice, name: str = "apprentice") -> None:
        self.online = online
        self.name = name
        #: Where the links of a fetched page go until their targets are judged (shared learning replaces it).
        self.observe_links: Callable[[Sequence[str], Sequence[LinkPayload], Sequence[bytes]], object] = (
            online.observe_links
        )

    def score(self, page: FetchedPage, links: Sequence[str]) -> Scored:
        payloads = self.online.link_features(
            page.url, page.html, page.verdict.parent_view, page.verdict.top_classes, links, parsed=page.parsed
        )
        blobs = encode_links(payloads)  # once, for the links the apprentice keeps and for the frontier
        self.observe_links(links, payloads, blobs)
        scores = self.online.score(payloads)
        if scores is None:
            scores = [page.verdict.parent_view] * len(links)
        return Scored(scores, payloads, blobs)


def build_apprentice(name: str, ctx: BuildContext) -> ApprenticeStrategy:
    """``apprentice`` (online) or ``apprentice-offline`` (a pre-trained model that does not learn)."""
    return ApprenticeStrategy(online_apprentice(ctx, offline=name == "apprentice-offline"), name)


def online_apprentice(ctx: BuildContext, *, offline: bool) -> OnlineApprentice:
    """The apprentice from the FOCUSED_APPRENTICE_* settings (and a pre-trained file)."""
    settings = ctx.settings
    path = setting(settings, "FOCUSED_APPRENTICE_MODEL") or ""
    d_max = setting(settings, "FOCUSED_APPRENTICE_DMAX")
    class_feats = setting(settings, "FOCUSED_APPRENTICE_CLASS_FEATURES")
    anchor_critic = setting(settings, "FOCUSED_APPRENTICE_ANCHOR_CRITIC")
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
        learner = Apprentice(
            alpha=setting(settings, "FOCUSED_APPRENTICE_ALPHA"),
            binning="equal-prob",  # the paper's equally probable intervals; the class's own default is "fixed"
            min_instances=setting(settings, "FOCUSED_APPRENTICE_MIN_INSTANCES"),
            feature_params={
                "d_max": d_max,
                "class_features": class_feats,
                "offsets": True,
                "critic_views": anchor_critic,
            },
            n_side=2 if anchor_critic else 0,
        )
    max_instances = setting(settings, "FOCUSED_APPRENTICE_MAX_INSTANCES")
    if 0 < max_instances < learner.min_instances:  # a learner kept below its minimum could never fit
        logger.info(
            "FOCUSED_APPRENTICE_MAX_INSTANCES=%d is below the apprentice's minimum of instances: it keeps %d",
            max_instances,
            learner.min_instances,
        )
        max_instances = learner.min_instances
    learner.limit(max_instances)
    try:
        online = OnlineApprentice(
            learner,
            d_max=d_max,
            class_features=class_feats,
            batch_size=setting(settings, "FOCUSED_APPRENTICE_BATCH"),
            learn=not offline,
            aggregation=setting(settings, "FOCUSED_PARENT_AGGREGATION"),
            snippet_critic=make_snippet_critic(ctx.critic, ctx.topic) if learner.n_side else None,
            anchor_weight=setting(settings, "FOCUSED_APPRENTICE_ANCHOR_WEIGHT"),
            explore=None if offline else _exploration(settings, learner.n_features),
            siblings=None if offline else _siblings(settings),
            max_pending=setting(settings, "FOCUSED_APPRENTICE_MAX_PENDING"),
        )
    except ValueError as exc:  # e.g. FOCUSED_APPRENTICE_ANCHOR_WEIGHT outside [0, 1]
        raise ConfigError(str(exc)) from exc
    if path:
        try:
            online.install(learner.fit())
        except NotReadyError as exc:
            raise ConfigError(f"the apprentice in {path} cannot predict yet: {exc}") from exc
    return online


def _exploration(settings: Any, n_features: int) -> NoveltyBonus | None:
    """The apprentice's exploration bonus from FOCUSED_APPRENTICE_EXPLORE*, ``None`` when it is off."""
    weight = setting(settings, "FOCUSED_APPRENTICE_EXPLORE")
    if weight <= 0:
        return None
    return NoveltyBonus(n_features, weight, setting(settings, "FOCUSED_APPRENTICE_EXPLORE_HALF_LIFE"))


def _siblings(settings: Any) -> SiblingFeedback | None:
    """The apprentice's sibling feedback from FOCUSED_APPRENTICE_SIBLINGS*, ``None`` when it is off."""
    weight = setting(settings, "FOCUSED_APPRENTICE_SIBLINGS")
    if weight <= 0:
        return None
    return SiblingFeedback(
        weight,
        pseudo_count=setting(settings, "FOCUSED_APPRENTICE_SIBLINGS_PSEUDO"),
        spread_scale=setting(settings, "FOCUSED_APPRENTICE_SIBLINGS_SPREAD"),
    )
