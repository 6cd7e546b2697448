"""A cross-case link model for the ceiling study: what a crawler could learn offline about links.

The issue's "cross-topic link model, pre-trained on the shipped corpora" asks whether a link's
promise can be learned once, from other topics' labelled webs, and carried to a new topic. Such a
model may only read features that do not name the topic: the critic's two views of the link (the
page's relevance and the anchor's, both relative to whatever topic the crawl has) and the link's
place in its page. This module fits a logistic regression on those features, with the true label of
each link's target, on the cases of the *other* groups of a track (other universities; other
top-level categories), and scores the held-out case's links with it:

* ``sim:link-model-views``: the two views alone (a learned blend in place of the fixed
  ``σ((1 − w)·logit Pr(c*|u) + w·logit Pr(c*|anchor))``; what any calibration of the views can do);
* ``sim:link-model``: the views, plus log(1 + the page's number of links) and the link's relative
  position in the page (0 first, 1 last).

Scikit-learn and numpy only; the ceiling study (:mod:`focused.bench.studies.ceiling`) simulates crawls with
the scores.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from focused.bench.studies.simcrawl import page_links
from focused.learning.apprentice.model import critic_views

__all__ = ["FEATURES", "STRATEGIES", "cross_case_scores", "link_features"]

logger = logging.getLogger(__name__)

FEATURES = ("page view", "anchor view", "log(1 + links of the page)", "position of the link in the page")
#: strategy -> the FEATURES columns its model reads
STRATEGIES = {"sim:link-model-views": (0, 1), "sim:link-model": (0, 1, 2, 3)}
#: Links sampled from each training case (the Wikipedia webs have ~200,000).
MAX_LINKS_PER_CASE = 60_000


def link_features(page_view: np.ndarray, anchor_view: np.ndarray, src: np.ndarray) -> np.ndarray:
    """The :data:`FEATURES` of each link ``src[i] -> ·`` (links of a page in page order), one row per link."""
    views = critic_views(page_view[src], anchor_view)  # the clipped logits the crawler has
    n_pages = len(page_view)
    outlinks = np.bincount(src, minlength=n_pages).astype(np.float64)
    order, starts = page_links(n_pages, src)
    rank = np.empty(len(src), dtype=np.float64)
    rank[order] = np.arange(len(order)) - starts[src[order]]
    position = rank / np.maximum(outlinks[src] - 1, 1)
    return np.column_stack([views[:, 0], views[:, 1], np.log1p(outlinks[src]), position])


def cross_case_scores(
    groups: Sequence[str],
    features: Sequence[np.ndarray],
    labels: Sequence[np.ndarray],
    *,
    seed: int = 0,
) -> list[dict[str, np.ndarray]]:
    """For each case: each strategy's score of its links, from a model fitted on the cases of other groups.

    ``features[i]`` are case i's :func:`link_features`, ``labels[i]`` its links' targets' true labels.
    A case with no other group to learn from gets no scores (an empty dict).
    """
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(seed)
    samples = []
    for X, y in zip(features, labels, strict=True):
        idx = rng.choice(len(y), size=min(len(y), MAX_LINKS_PER_CASE), replace=False)
        samples.append((X[idx], np.asarray(y, dtype=bool)[idx]))
    out: list[dict[str, np.ndarray]] = []
    models: dict[tuple[str, tuple[int, ...]], LogisticRegression] = {}
    for group, X in zip(groups, features, strict=True):
        others = [s for g, s in zip(groups, samples, strict=True) if g != group]
        y_train = np.concatenate([y for _, y in others]) if others else np.zeros(0, dtype=bool)
        scores: dict[str, np.ndarray] = {}
        if y_train.any() and not y_train.all():
            X_train = np.vstack([x for x, _ in others])
            for strategy, columns in STRATEGIES.items():
                key = (group, columns)
                if key not in models:  # the cases of one group share their training set
                    model = LogisticRegression(max_iter=1000)
                    models[key] = model.fit(X_train[:, list(columns)], y_train)
                    weights = ", ".join(f"{FEATURES[c]} {w:+.2f}" for c, w in zip(columns, model.coef_[0], strict=True))
                    logger.info(
                        "%s, not from group %s: %s, intercept %+.2f", strategy, group, weights, model.intercept_[0]
                    )
                scores[strategy] = models[key].predict_proba(X[:, list(columns)])[:, 1]
        out.append(scores)
    return out
