"""A topic critic from a handful of example pages: positive-unlabelled learning against a background.

Scrapy-free. The user brings example pages of their topic (the positives) and the crawler brings a
background of other pages (WebKB and Wikipedia by default). The background is not a set of negatives:
it holds pages about the user's topic too (Wikipedia's astronomy articles when the topic is astronomy),
so a classifier of positives against background learns *labelled against unlabelled*: its ranking
is what it learnt, and where to cut it is the question. Here the classifier is a logistic regression on the
sublinear tf-idf of the page's hashed words (its visible text, which starts with its title), the positives
weighted to balance the background (the background's size says nothing of how common the topic is). Every
page is scored by a model of a k-fold cross-validation that did not train on it; the cut is the percentile
of the held-out background scores that maximises Lee and Liu's recall² / Pr(accepted) (ICML 2003; recall on
the held-out positives), kept within [MIN_LEVEL, MAX_LEVEL] and raised to the middle of the gap below the
lowest held-out positive above it. The final model, trained on everything, gives

    Pr(topic | page) = sigmoid(score(page) − cut),

so Pr(topic | page) ≥ 0.5 means on topic. (Elkan and Noto's g / c, KDD 2008, was the first version: with a
few examples the cross-validated c was small and g / c accepted most pages.)

Optional negatives (pages known to be off topic) join the unlabelled side with the positives'
weight; optional keywords are one more positive page, always trained on, never held out. The lines most
examples share (a site's menu and footer, :func:`strip_template`) are left out of them first.

What :func:`train_examples_critic` returns is an ordinary two-class naive Bayes
:class:`~focused.learning.critic.naive_bayes.Critic` (the topic and ``background``, equal priors:
the parent view of a page's links and the anchor view, which order the crawl until the apprentice
switches in; smoothed with :data:`NB_ALPHA`, less than a taxonomy critic's, since the topic's side has
only the examples' words, a few hundred or thousand, and grown with the background pages the regression finds
most like the examples, :data:`UNLABELLED_MASS`) whose verdict head is that regression
(:class:`~focused.learning.critic.verdict_head.VerdictHead`, its intercept shifted by the cut): the crawl,
the report and the apprentice read it as any critic, from one model file of plain arrays.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from focused.learning.critic.naive_bayes import Critic
from focused.learning.critic.threshold import HoldoutReport, cut_at, holdout_report, level_of, percentile_of
from focused.learning.critic.verdict_head import MAX_WEIGHTS, VerdictHead

__all__ = [
    "BACKGROUND",
    "DEFAULT_FOLDS",
    "FROM_EXAMPLES",
    "MIN_POSITIVES",
    "NB_ALPHA",
    "RECIPE",
    "UNLABELLED_MASS",
    "TopicCritic",
    "examples_metadata",
    "strip_template",
    "train_examples_critic",
]

logger = logging.getLogger(__name__)

#: The class name of everything else.
BACKGROUND = "background"
#: Folds of the cross-validation that places the threshold and gives the held-out report.
DEFAULT_FOLDS = 5
#: Fewer positives than this cannot be held out and judged (each fold needs one).
MIN_POSITIVES = 2
#: The metadata key of a critic from examples in its model file: its held-out report, its background's sources.
FROM_EXAMPLES = "topic_from_examples"
#: Identifies the training recipe: a cached critic of another recipe is retrained.
RECIPE = "pu-percentile/v6"
#: Inverse L2 strength of the regression (scikit-learn's C): chosen on the astronomy case (docs/topic.md).
REGULARISATION = 1.0
#: The positives' total weight against the unlabelled pages' (1: balanced).
POSITIVE_WEIGHT = 0.5
#: Additive smoothing of the naive Bayes part (the parent and anchor views of links), a third of a taxonomy
#: critic's: chosen on simulated crawls of three WebKB universities and checked by the bench's crawls of two
#: (docs/results.md, "Topics from examples").
NB_ALPHA = 0.03
#: Nigam et al.'s EM for naive Bayes with unlabelled documents (Machine Learning 39, 2000), one round: the
#: background pages join the topic's side of the naive Bayes views, each by its Pr(topic | page) from the
#: regression (its held-out score), scaled so that together they count as this many times the examples (EM-λ;
#: the regression's Pr is a verdict, not a calibrated probability away from 0.5, and unscaled these soft counts
#: were hundreds of pages' worth, which outweighed five examples). 0: the views learn from the examples alone.
#: Chosen on simulated crawls of three WebKB universities (docs/results.md, "Topics from examples").
UNLABELLED_MASS = 1.0


@dataclass(frozen=True)
class TopicCritic:
    """What :func:`train_examples_critic` returns: the critic (``.save(path)`` writes the model file) and its report."""

    critic: Critic
    report: HoldoutReport
    topic: str


def train_examples_critic(
    positives: Sequence[str],
    background: Sequence[str],
    negatives: Sequence[str] | None = None,
    keywords: Sequence[str] | None = None,
    *,
    name: str = "examples",
    examples: Sequence[str] = (),
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    metadata: dict[str, Any] | None = None,
    n_features: int = 2**18,
) -> TopicCritic:
    """Train a critic of topic ``name`` from example page texts (visible text, title included).

    Parameters
    ----------
    positives
        The texts of the user's example pages (the lines most of them share are left out: :func:`strip_template`).
    background
        Unlabelled texts of other pages (not negatives: some may be on topic).
    negatives, keywords
        Optional texts known to be off topic, and words of the topic (one more positive page).
    name
        The topic's class name (``background`` is the other class).
    examples
        URLs of the examples: the model keeps them as the topic's seeds.
    folds
        Folds of the cross-validation that places the threshold (at most one per positive).

    Raises
    ------
    ValueError
        For fewer than :data:`MIN_POSITIVES` positives or an empty background.
    """
    pos = strip_template([t for t in positives if t.split()])
    bg = [t for t in background if t.split()]
    neg = [t for t in (negatives or ()) if t.split()]
    keyword_text = " ".join(k.strip() for k in (keywords or ()) if k.strip())
    if len(pos) < MIN_POSITIVES:
        raise ValueError(f"need at least {MIN_POSITIVES} example pages with text, got {len(pos)}")
    if not bg:
        raise ValueError("need background pages")
    if name == BACKGROUND:
        raise ValueError(f"the topic cannot be called {BACKGROUND!r}")
    extra = [keyword_text] if keyword_text else []
    texts = [*pos, *extra, *bg, *neg]
    n_pos, n_extra = len(pos), len(extra)
    labelled = np.zeros(len(texts), dtype=np.int64)
    labelled[: n_pos + n_extra] = 1
    probe = Critic([name, BACKGROUND], np.ones(2), sp.csr_matrix((2, n_features)), alpha=1.0, n_features=n_features)
    X = probe.transform(texts)
    weights = _weights(labelled, n_neg=len(neg))

    k = max(2, min(folds, n_pos))
    fold = _folds(n_pos, len(bg) + len(neg), k, seed)  # keyword page: fold -1, always trained on
    fold_all = np.concatenate([fold[:n_pos], np.full(n_extra, -1), fold[n_pos:]])
    is_bg = np.zeros(len(texts), dtype=bool)
    is_bg[n_pos + n_extra : n_pos + n_extra + len(bg)] = True
    held = np.zeros(len(texts))
    pos_fold = fold[:n_pos]
    for f in range(k):
        train = fold_all != f
        model = _fit(X[train], labelled[train], weights[train], seed)
        held[fold_all == f] = model.scores(X[fold_all == f])
    # every page scored by a model that did not train on it: the final model meets only pages it did not
    # train on in a crawl, and scores the background it trained on lower than unseen pages like them (on a
    # small background, far lower), so the threshold is a percentile of the held-out background's scores
    held_bg = np.sort(held[is_bg])
    percentile = percentile_of(held_bg, held[:n_pos])
    level = level_of(percentile)
    # the rule judged on pages it did not choose from: each fold's threshold from the other folds' positives,
    # at that level of the other folds' held-out background, applied to the fold's held-out pages
    accepted = np.zeros(n_pos, dtype=bool)
    bg_accepted = []
    bg_fold = fold_all[is_bg]
    for f in range(k):
        others_bg = np.sort(held[is_bg][bg_fold != f])
        others_pos = held[:n_pos][pos_fold != f]
        cut_f = cut_at(others_bg, others_pos, level_of(percentile_of(others_bg, others_pos)))
        accepted[pos_fold == f] = held[:n_pos][pos_fold == f] >= cut_f
        bg_accepted.append(held[is_bg & (fold_all == f)] >= cut_f)
    background_accepted = float(np.mean(np.concatenate(bg_accepted)))

    final = _fit(X, labelled, weights, seed)
    own = final.scores(X[:n_pos])
    cut = cut_at(held_bg, held[:n_pos], level)
    topic_first = name < BACKGROUND  # the critic's classes are sorted
    head = _as_head(final, cut, topic_index=0 if topic_first else 1)
    report = holdout_report(
        k, percentile, accepted, background_accepted, level, held[:n_pos], held[is_bg], int(np.sum(own < cut))
    )
    info = {"recipe": RECIPE, "negatives": len(neg), "keywords": list(keywords or ()), **report.to_dict()}
    meta = dict(metadata or {})
    meta[FROM_EXAMPLES] = {**meta.get(FROM_EXAMPLES, {}), **info}
    # each unlabelled page's share of the topic, from the regression's held-out score (known negatives: none)
    soft = np.zeros(len(texts))
    soft[is_bg] = 1.0 / (1.0 + np.exp(-(held[is_bg] - cut)))
    critic = _naive_bayes(X, labelled, name, seed, meta, list(examples)[:20], head, soft=soft)
    # DEBUG: its callers report it (train-topic prints it, a crawl and the bench log it)
    logger.debug("topic %r from %d examples: %s", name, n_pos, "; ".join(report.lines()))
    return TopicCritic(critic, report, name)


def examples_metadata(critic: object) -> dict[str, Any] | None:
    """What the model file of a critic from examples says of its training (:data:`FROM_EXAMPLES`); ``None`` for
    any other critic."""
    info = (getattr(critic, "metadata", None) or {}).get(FROM_EXAMPLES)
    return info if isinstance(info, dict) else None


def strip_template(texts: list[str]) -> list[str]:
    """The texts less the lines that more than half of them share (at least 3): a site's template.

    Examples fetched from one site share its navigation, header and footer, which the background lacks; left in,
    the critic learns the template as the topic and judges every page of that site on topic.
    """
    if len(texts) < 3:
        return texts
    counts = Counter(line for text in texts for line in {ln.strip() for ln in text.splitlines() if ln.strip()})
    shared = {line for line, n in counts.items() if n >= 3 and n > len(texts) / 2}
    if not shared:
        return texts
    logger.info("examples: %d template line(s) shared by most examples left out", len(shared))
    stripped = ["\n".join(ln for ln in text.splitlines() if ln.strip() not in shared) for text in texts]
    return [s for s in stripped if s.split()]


# ---------------------------------------------------------------------- the models


def _naive_bayes(
    X: sp.csr_matrix,
    labelled: np.ndarray,
    name: str,
    seed: int,
    metadata: dict[str, Any],
    examples: list[str],
    head: VerdictHead,
    *,
    soft: np.ndarray | None = None,
    mass: float | None = None,
) -> Critic:
    """The two-class naive Bayes critic (equal priors: the background's size is arbitrary; smoothing
    :data:`NB_ALPHA`) on the counts ``X`` already read, length-calibrated as :meth:`Critic.train` does, with
    ``head`` as its verdict.

    ``soft`` is each unlabelled page's Pr(topic | page) (ignored for the examples; zero for known negatives):
    a page counts ``λ`` × Pr on the topic's side and 1 − Pr on the background's, ``λ`` such that the unlabelled
    pages weigh ``mass`` (default :data:`UNLABELLED_MASS`) times the examples there (Nigam et al.'s EM, one
    round, its E-step from the regression). Five examples have a few hundred words; the background pages most
    like them bring the topic's other words."""
    from focused.learning.critic.calibration import HOLDOUT_FRACTION, fit_length_scale, stratified_split

    mass = UNLABELLED_MASS if mass is None else mass
    classes = sorted([name, BACKGROUND])
    topic_index = classes.index(name)
    y = np.where(labelled == 1, topic_index, classes.index(BACKGROUND))
    n_features = X.shape[1]
    share = np.zeros(len(y)) if soft is None or mass <= 0 else np.where(labelled == 1, 0.0, soft)
    weight = mass * float(np.sum(labelled == 1)) / share.sum() if share.sum() > 0 else 0.0

    def counts(rows: np.ndarray) -> sp.csr_matrix:
        """Per-class word counts of ``rows``: an unlabelled row split between the classes by its share."""
        w = np.zeros((2, len(rows)))
        w[topic_index] = np.where(labelled[rows] == 1, 1.0, weight * share[rows])
        w[1 - topic_index] = np.where(labelled[rows] == 1, 0.0, 1.0 - share[rows])
        return sp.csr_matrix(sp.csr_matrix(w) @ X[rows], dtype=np.float32)

    fit, held = stratified_split(y, HOLDOUT_FRACTION, seed)
    part = Critic(classes, np.ones(2), counts(fit), alpha=NB_ALPHA, n_features=n_features)
    loglik, lengths = part._log_likelihood(X[held])
    length_scale, stats = fit_length_scale(part.class_log_prior_, loglik, lengths, y[held])
    meta = dict(metadata)
    meta["critic"] = {
        "n_documents": len(y),
        "alpha": NB_ALPHA,
        "n_features": n_features,
        "calibration": {"method": "length", "holdout": len(held), **stats},
        "unlabelled": {"mass": mass, "pages": round(float(share.sum()), 1)},
        "verdict_head": {
            "model": f"positive-unlabelled logistic regression, tf-idf, threshold at a background percentile ({RECIPE})"
        },
        "seed": seed,
    }
    return Critic(
        classes,
        np.ones(2),
        counts(np.arange(len(y))),
        alpha=NB_ALPHA,
        n_features=n_features,
        length_scale=length_scale,
        metadata=meta,
        examples={name: examples},
        head=head,
    )


def _weights(labelled: np.ndarray, n_neg: int) -> np.ndarray:
    """Positives weighted to balance the unlabelled side; known negatives weigh as positives do."""
    n_lab, n_unl = int(labelled.sum()), int((labelled == 0).sum())
    weights = np.ones(len(labelled))
    weights[labelled == 1] = n_unl / max(1, n_lab) * POSITIVE_WEIGHT
    if n_neg:
        weights[len(labelled) - n_neg :] = weights[0]
    return weights


def _folds(n_pos: int, n_rest: int, k: int, seed: int) -> np.ndarray:
    """A fold (0 … k−1) for each positive and each other page, both sides spread evenly."""
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.permutation(np.arange(n_pos) % k), rng.permutation(np.arange(n_rest) % k)])


@dataclass
class _Model:
    """A fitted regression g: tf-idf weights and the linear model."""

    head: VerdictHead

    def posteriors(self, X: sp.csr_matrix) -> np.ndarray:
        return self.head.posteriors(X)

    def scores(self, X: sp.csr_matrix) -> np.ndarray:
        """The regression's log-odds that a page is an example (monotone in g)."""
        g = np.clip(self.posteriors(X)[:, 1], 1e-12, 1.0 - 1e-12)
        return np.log(g) - np.log1p(-g)


def _fit(X: sp.csr_matrix, y: np.ndarray, weights: np.ndarray, seed: int) -> _Model:
    from sklearn.linear_model import LogisticRegression

    n, n_features = X.shape
    df = np.bincount(sp.csr_matrix(X).indices, minlength=n_features)
    idf_unseen = float(np.log(1.0 + n) + 1.0)
    idf = np.where(df > 0, np.log((1.0 + n) / (1.0 + df)) + 1.0, 0.0)
    blank = VerdictHead(sp.csr_matrix((2, n_features)), np.zeros(2), idf, idf_unseen)
    used = np.flatnonzero(df)  # the solver works on the features some page has (a few 10,000 of 2**18)
    model = LogisticRegression(C=REGULARISATION, solver="liblinear", max_iter=1000, random_state=seed)
    model.fit(blank.tfidf(X)[:, used], y, sample_weight=weights)
    coef = np.zeros((2, n_features))
    coef[1, used] = model.coef_[0]
    coef[0] = -coef[1]
    intercept = np.array([-model.intercept_[0], model.intercept_[0]])
    if n_features > MAX_WEIGHTS:
        small = np.argsort(-np.abs(coef), axis=1, kind="stable")[:, MAX_WEIGHTS:]
        np.put_along_axis(coef, small, 0.0, axis=1)
    return _Model(VerdictHead(sp.csr_matrix(coef, dtype=np.float32), intercept, idf, idf_unseen, 1.0 / REGULARISATION))


def _as_head(model: _Model, cut: float, *, topic_index: int) -> VerdictHead:
    """The fitted regression as the critic's verdict head: rows in the critic's class order, its intercept
    shifted by the threshold ``cut`` (log-odds) so that Pr(topic) = sigmoid(score − cut) is 0.5 there."""
    head = model.head
    order = [1, 0] if topic_index == 0 else [0, 1]  # row 1 of the fit is the topic
    coef = sp.csr_matrix(head.coef[order])
    intercept = head.intercept + np.array([cut, -cut])  # row 1 (topic) − cut, row 0 its negation
    return VerdictHead(coef, intercept[order], head.idf, head.idf_unseen, head.alpha, 1.0, topic_index)
