"""The critic reading anchor texts: the apprentice's view of a link before (and beside) its link context.

Split from :mod:`focused.learning.online` (which re-exports it). Scrapy-free.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from focused.learning.critic import Critic, Topic
from focused.learning.crossfit import CrossFitCritic

__all__ = ["SNIPPET_MEMO", "SnippetCritic", "make_snippet_critic"]


#: ``snippet_critic(texts, target_urls) -> Pr(c*|text)``: the critic reading anchor texts.
SnippetCritic = Callable[[Sequence[str], Sequence[str]], np.ndarray]
#: Anchor texts whose relevance a snippet critic remembers (a fixed critic gives each text one value).
SNIPPET_MEMO = 100_000


def make_snippet_critic(critic: Critic | CrossFitCritic, topic: Topic) -> SnippetCritic:
    """The critic reading anchor texts for ``topic``.

    A cross-fitted critic reads each anchor with the fold model blind to the
    link's target, as it judges the target itself.
    """

    if isinstance(critic, CrossFitCritic):
        crossfit = critic
        return lambda texts, target_urls: crossfit.snippet_relevance(texts, topic, target_urls)
    plain = critic
    memo: dict[str, float] = {}  # anchor text -> relevance: a site's navigation repeats its anchors

    def read(texts: Sequence[str], _target_urls: Sequence[str]) -> np.ndarray:
        known = {text: memo.get(text) for text in texts}
        missing = [text for text, value in known.items() if value is None]
        if missing:
            fresh = plain.snippet_relevance(missing, topic).tolist()
            known.update(zip(missing, fresh, strict=True))
            if len(memo) + len(missing) > SNIPPET_MEMO:
                memo.clear()
            memo.update(zip(missing, fresh, strict=True))
        return np.fromiter((known[text] for text in texts), dtype=np.float64, count=len(texts))

    return read
