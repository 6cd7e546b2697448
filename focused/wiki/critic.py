"""The Wikipedia critic: trained on the rendered pages, one model or cross-fitted.

The critic (:func:`train_wiki_critic`) trains on the rendered pages' visible text
(``html_to_text``: title, paragraphs, "See also" titles, navigation), what the
crawler sees, one copy per distinct class of an article (:mod:`focused.wiki.taxonomy`).
Top-1 accuracy with 5-fold cross-fitting over the 4,597 categorised articles, 105
classes (correct when the predicted class is one of the article's classes; on the
article's first class it is ~5 points lower); the standard error is ~0.7 point:

=================  ======  =====  =====  =====  =====  =====  =====  =====
features / alpha   0.003   0.01   0.02   0.03   0.05   0.08   0.1    0.3
=================  ======  =====  =====  =====  =====  =====  =====  =====
2**19                      0.624
2**18              0.603   0.632  0.642  0.643  0.636         0.605  0.485
2**17                      0.626         0.653  0.659  0.654  0.649
2**16                                           0.664
=================  ======  =====  =====  =====  =====  =====  =====  =====

The critic's default smoothing (0.1, chosen on 20 Newsgroups and WebKB) over-smooths
these 100-article classes; 2**17 features and alpha = 0.05 are the defaults here
(2**16 gains half a point, but the default model also scores the live web, whose
vocabulary is larger). Training on the plain article text instead of the rendered
page makes no difference (0.606 vs 0.605 at 2**18 / 0.1, 0.631 vs 0.632 at 0.01).
The accuracies are those of :meth:`Critic.predict` (length-normalised posteriors);
the raw naive Bayes argmax is more accurate at top-1 (0.729 against 0.659 at the
defaults) but ranks worse (topic AUC 0.87-1.00 against 0.96-1.00): the calibration
gives the class prior more weight, so big classes (``Science.Biology``, 698
articles) win more argmaxes. Ranking is much better than top-1 suggests: at the defaults the AUC of the topic's
posterior mass against ground truth is 0.96 (British_History) to 1.00 for the
benchmark topics, while recall at relevance > 0.5 ranges from 11% (People.Artists,
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from focused.corpora.wikispeedia import Wikispeedia
from focused.learning.critic.crossfit import CrossFitCritic
from focused.learning.critic.naive_bayes import Critic
from focused.page.text import html_to_text
from focused.wiki import render
from focused.wiki.graph import class_examples
from focused.wiki.taxonomy import Taxonomy, build_taxonomy

#: Naive Bayes smoothing and hashed features of the Wikipedia critic (sweep in the module docstring).
DEFAULT_ALPHA = 0.05
DEFAULT_N_FEATURES = 2**17


def page_texts(wiki: Wikispeedia, *, rendered: bool = True) -> dict[str, str]:
    """Each article's training text: the rendered page's visible text, or title + plain text."""
    if not rendered:
        return {name: f"{a.title}\n{a.text}" for name, a in wiki.articles.items()}
    site = render.Site.from_corpus(wiki)
    return {name: html_to_text(render.render_article(site, a, wiki.links[name])) for name, a in wiki.articles.items()}


def _training_set(
    wiki: Wikispeedia, taxonomy: Taxonomy, texts: Mapping[str, str]
) -> tuple[list[str], list[str], list[str]]:
    out: tuple[list[str], list[str], list[str]] = ([], [], [])
    for name, cats in wiki.categories.items():
        for cls in taxonomy.classes_of(cats):
            out[0].append(texts[name])
            out[1].append(cls)
            out[2].append(render.article_url(name))
    return out


def train_wiki_critic(
    wiki: Wikispeedia,
    *,
    taxonomy: Taxonomy | None = None,
    folds: int = 0,
    rendered: bool = True,
    texts: Mapping[str, str] | None = None,
    url_features: bool = False,
    **critic_args: object,
) -> Critic | CrossFitCritic:
    """Train the critic on the taxonomy's classes: one model, or ``folds`` cross-fitted ones.

    ``examples`` (the default seeds) hold each class's 3 seed URLs. ``critic_args``
    go to :meth:`Critic.train` (``n_features``, ``alpha``, ...). With ``url_features`` the
    critic learns from each article's URL words too (:mod:`focused.learning.critic.urlwords`).
    """
    taxonomy = taxonomy or build_taxonomy(wiki.categories)
    texts = texts if texts is not None else page_texts(wiki, rendered=rendered)
    x, y, urls = _training_set(wiki, taxonomy, texts)
    meta = {
        "corpus": "wikispeedia",
        "site": render.BASE_URL,
        "taxonomy": {"level": taxonomy.level, "min_size": taxonomy.min_size, "merged": dict(taxonomy.merged)},
        "text": "rendered" if rendered else "plain",
    }
    examples = class_examples(wiki, taxonomy)
    args: dict[str, Any] = {"alpha": DEFAULT_ALPHA, "n_features": DEFAULT_N_FEATURES, **critic_args}
    if folds:
        return CrossFitCritic.train(
            x, y, urls, k=folds, metadata=meta, examples=examples, url_features=url_features, **args
        )
    return Critic.train(x, y, urls=urls if url_features else None, metadata=meta, examples=examples, **args)


def cross_validate(
    wiki: Wikispeedia,
    critic: CrossFitCritic,
    *,
    taxonomy: Taxonomy | None = None,
    texts: Mapping[str, str] | None = None,
    verdicts: bool = False,
) -> float:
    """Top-1 accuracy of a cross-fitted critic over the categorised articles, each by its held-out model.

    A prediction is correct when it is one of the article's classes. With ``verdicts``, of the
    verdicts (the folds' verdict heads, :mod:`focused.learning.critic.verdict_head`) rather than naive Bayes.
    """
    taxonomy = taxonomy or build_taxonomy(wiki.categories)
    texts = texts if texts is not None else page_texts(wiki, rendered=critic.metadata.get("text") != "plain")
    names = [name for name, cats in wiki.categories.items() if cats]
    urls = [render.article_url(name) for name in names]
    if verdicts:
        post = critic.verdict_posteriors([texts[n] for n in names], urls)
        predicted = [critic.classes[int(i)] for i in post.argmax(axis=1)]
    else:
        predicted = critic.predict([texts[n] for n in names], urls)
    hits = [p in taxonomy.classes_of(wiki.categories[n]) for p, n in zip(predicted, names, strict=True)]
    return float(np.mean(hits))
