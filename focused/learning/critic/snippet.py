"""The critic reading anchor texts: the apprentice's view of a link before (and beside) its link context.

Used by :mod:`focused.learning.apprentice.online`. Scrapy-free.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from focused.learning.critic.crossfit import CrossFitCritic
from focused.learning.critic.naive_bayes import Critic
from focused.learning.critic.topics import Topic

__all__ = ["MEMO_URL", "SNIPPET_MEMO", "SnippetCritic", "make_snippet_critic"]


#: ``snippet_critic(texts, target_urls) -> Pr(c*|text)``: the critic reading anchor texts.
SnippetCritic = Callable[[Sequence[str], Sequence[str]], np.ndarray]
#: Anchor texts whose relevance a snippet critic remembers (a fixed critic gives each text one value).
SNIPPET_MEMO = 100_000
#: With URL features, links whose target URL is longer than this many characters are not remembered.
MEMO_URL = 256
#: Anchor texts longer than this many characters are not remembered either (a hostile page's anchors of
#: thousands of words would each hold their text in the memo).
MEMO_TEXT = 1024


def make_snippet_critic(critic: Critic | CrossFitCritic, topic: Topic) -> SnippetCritic:
    """The critic reading anchor texts for ``topic``.

    A cross-fitted critic reads each anchor with the fold model blind to the
    link's target, as it judges the target itself. A critic with URL features
    reads each anchor followed by its target's URL words.
    """

    if isinstance(critic, CrossFitCritic):
        crossfit = critic
        return lambda texts, target_urls: crossfit.snippet_relevance(texts, topic, target_urls)
    plain = critic
    # anchor text (and, with URL features, target URL) -> relevance: a site's navigation repeats its anchors
    memo: dict[tuple[str, str], float] = {}
    with_urls = plain.url_features

    def read(texts: Sequence[str], target_urls: Sequence[str]) -> np.ndarray:
        keys = list(zip(texts, target_urls, strict=True)) if with_urls else [(text, "") for text in texts]
        known = {key: memo.get(key) for key in keys}
        missing = [key for key, value in known.items() if value is None]
        if missing:
            urls = [url for _, url in missing] if with_urls else None
            fresh = plain.snippet_relevance([text for text, _ in missing], topic, urls).tolist()
            known.update(zip(missing, fresh, strict=True))
            if len(memo) + len(missing) > SNIPPET_MEMO:
                memo.clear()
            # a long URL is read each time rather than kept: the memo's bytes stay bounded by its entries
            memo.update(
                (key, value)
                for key, value in zip(missing, fresh, strict=True)
                if len(key[1]) <= MEMO_URL and len(key[0]) <= MEMO_TEXT
            )
        return np.fromiter((known[key] for key in keys), dtype=np.float64, count=len(keys))

    return read
