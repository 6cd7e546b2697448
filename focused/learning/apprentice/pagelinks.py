"""The apprentice's payload of every link of a fetched page: hashed ⟨t,d⟩ ids, the critic's views, a source tag.

Scrapy-free; what :meth:`focused.learning.apprentice.online.OnlineApprentice.link_features` computes for the crawler.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from focused.learning.apprentice.features import class_features
from focused.learning.apprentice.linkids import page_link_ids, with_extra
from focused.learning.apprentice.model import critic_views
from focused.learning.apprentice.payload import LinkPayload, page_key
from focused.learning.apprentice.siblings import source_tag
from focused.learning.critic.snippet import SnippetCritic
from focused.page.hashing import feature_ids
from focused.page.parsed import ParsedPage

__all__ = ["page_payloads"]


def page_payloads(
    parsed: ParsedPage,
    url: str,
    links: Sequence[str],
    *,
    relevance: float,
    top_classes: Sequence[str],
    n_features: int,
    d_max: int,
    with_classes: bool = False,
    snippet_critic: SnippetCritic | None = None,
    tagged: bool = False,
) -> list[LinkPayload]:
    """The payload of each link (u, v) of page u (``url``), in the order of ``links``.

    ``relevance`` and ``top_classes`` are the critic's verdict on u. A link the
    feature extractor did not see (e.g. a URL Scrapy's link extractor normalised
    differently) gets only the page-level features and an empty anchor. With a
    ``snippet_critic`` every payload carries the critic's views of u and of the
    anchor as side features, and with ``tagged`` u's tag after them
    (:mod:`focused.learning.apprentice.siblings`).
    """
    targets, target_ids, target_anchors = page_link_ids(parsed, url, d_max, n_features)
    by_key: dict[str, int] = {}
    for i, target in enumerate(targets):
        by_key.setdefault(page_key(target), i)
    found = [by_key.get(page_key(link)) for link in links]
    extra = class_features(top_classes) if with_classes else []
    extra_ids = np.asarray(feature_ids(n_features).ids(extra), dtype=np.int32)
    ids = with_extra([target_ids[i] if i is not None else None for i in found], extra_ids)
    if snippet_critic is None:
        return [LinkPayload(x) for x in ids]
    anchors = [target_anchors[i] if i is not None else "" for i in found]
    side = critic_views(relevance, snippet_critic(anchors, links)).astype(np.float32)
    if tagged:
        side = np.column_stack([side, np.full(len(side), source_tag(url), dtype=np.float32)])
    return [LinkPayload(x, s) for x, s in zip(ids, side, strict=True)]
