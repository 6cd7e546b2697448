"""Frontier policies, and the one registry of their names.

Scrapy-free. A strategy scores the outlinks of a fetched page (:mod:`.base`).
The modules, one policy family each:

- ``base``: what every policy shares (:class:`~focused.strategies.base.FetchedPage`,
  :class:`~focused.strategies.base.Scored`, :class:`~focused.strategies.base.BuildContext`),
  breadth-first and the paper's baseline best-first crawler;
- ``apprentice``: the paper's enhanced crawler, links scored by the apprentice (Chakrabarti et al. 2002);
- ``intelligent``: intelligent crawling on interest ratios of page factors (Aggarwal et al. 2001);
- ``markines``: the SVM / naive Bayes / cosine link classifiers of Markines et al. (2004);
- ``oracles``: benchmark bounds that know the ground truth (greedy and look-ahead).

:data:`BUILDERS` maps every strategy name to the function that builds it; the
crawl (:class:`focused.core.runtime.CrawlRuntime`), the settings' validation,
the bench and ``docs/settings.md`` all read the names from it.
"""

from __future__ import annotations

from collections.abc import Callable

from focused.errors import ConfigError
from focused.strategies.apprentice import build_apprentice
from focused.strategies.base import BuildContext, Strategy, build_baseline, build_bfs
from focused.strategies.intelligent import FACTORS, build_intelligent
from focused.strategies.markines import build_markines, strategy_names
from focused.strategies.oracles import build_oracle

Builder = Callable[[str, BuildContext], Strategy]

#: Every strategy name, and its builder.
BUILDERS: dict[str, Builder] = {
    "bfs": build_bfs,
    "baseline": build_baseline,
    "oracle": build_oracle,
    "oracle-lookahead": build_oracle,
    "apprentice": build_apprentice,
    "apprentice-offline": build_apprentice,
    "intelligent": build_intelligent,
    **{f"intelligent:{factor}": build_intelligent for factor in FACTORS},
    **dict.fromkeys(strategy_names(), build_markines),
}
#: Families whose builder also takes other variants, ``FAMILY:VARIANT`` (e.g. ``intelligent:content+url``).
FAMILIES: dict[str, Builder] = {"intelligent": build_intelligent, "markines": build_markines}
STRATEGIES = tuple(BUILDERS)


def build_strategy(name: str, context: BuildContext) -> Strategy:
    """The strategy ``name``; :class:`~focused.errors.ConfigError` (one line) for an unknown name or bad settings."""
    family, colon, _ = name.partition(":")
    builder = BUILDERS.get(name) or (FAMILIES.get(family) if colon else None)
    if builder is None:
        raise ConfigError(f"unknown strategy {name!r}; valid strategies: {', '.join(STRATEGIES)}")
    return builder(name, context)
