"""The ``examples`` track: the crawler with a critic trained from k example pages, beside the taxonomy critic.

For each case of a held-out-group track (WebKB: target × held-out university, confined) or of the wiki
protocol (the topics with the cross-fitted folds), k positive pages of the target are sampled from the
pages the case's taxonomy critic trained on (k = 5, 20, 100; three seeded samples each), and a critic is
trained from them as ``scrapy crawl focused -a examples=`` trains one: the positive-unlabelled critic
(:func:`focused.learning.critic.examples.train_examples_critic`) against the default background
(:func:`focused.core.background.read_background`: WebKB and Wikipedia, ``FOCUSED_EXAMPLES_MAX_BACKGROUND``
pages), with the pages the crawl will be judged on left out of the background too:

- a confined case (WebKB): the positives come from the training groups; the held-out group's pages are
  left out of the background;
- a cross-fitted case (wiki): one examples critic per fold, its positives sampled outside the fold and the
  fold's pages left out of its background; the folds make a
  :class:`~focused.learning.critic.crossfit.CrossFitCritic`, so each page is judged by a critic that never
  saw it, as the taxonomy critic's folds judge it.

The crawls use one strategy (the crawl's default, :data:`~focused.settings.defaults.FOCUSED_STRATEGY`, when
``--strategies`` lists it), from the case's seeds, with each critic: ``taxonomy`` (the case's own critic)
and ``examples-kK`` (K examples; the samples are the repeats); the case's ``baseline`` and oracles give G.
Beside the crawls, each critic's accuracy (verdict Pr(topic | page) >= 0.5 against the labels) and average
precision on the held-out pages.
"""

from __future__ import annotations

import logging
import random
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from focused.bench.tracks import Case, ExtraJob, Track, TrackError
from focused.settings import defaults

logger = logging.getLogger(__name__)

#: Examples per critic, and seeded samples of each.
KS = (5, 20, 100)
SAMPLES = 3
#: The label of the crawls with the case's own (taxonomy) critic.
TAXONOMY = "taxonomy"
#: Bump when the track's recipe changes: cached examples critics of another version are retrained.
VERSION = 6


def label_of_k(k: int) -> str:
    return f"examples-k{k}"


def held_out_pages(track: Track, case: Case) -> tuple[list[str], list[str], list[str]]:
    """``(urls, texts, labels)`` of the labelled 200 HTML pages the case judges: its confined groups' pages,
    or every labelled page of a cross-fitted (unconfined) case."""
    from focused.page.text import content_type_charset, html_to_text

    urls, texts, labels = [], [], []
    for response in track.store.responses():
        if response.status != 200 or "html" not in (response.header("Content-Type") or "text/html"):
            continue
        label = track.store.label_of(response.url)
        if not label:
            continue
        if case.confine is not None and track.store.group_of(response.url) not in case.confine:
            continue
        urls.append(response.url)
        texts.append(html_to_text(response.body, content_type_charset(response.header("Content-Type"))))
        labels.append(label)
    return urls, texts, labels


def critic_figures(critic: Any, topic_name: str, urls: list[str], texts: list[str], labels: list[str]) -> dict:
    """Accuracy of the verdict (Pr(topic | page) >= 0.5) and average precision, against the labels."""
    from sklearn.metrics import average_precision_score

    topic = critic.resolve_topic(topic_name)
    truth = np.array([topic.matches(label) for label in labels])
    relevance = critic.verdict_posteriors(texts, urls)[:, topic.indices].sum(axis=1)
    accepted = relevance >= 0.5
    return {
        "pages": len(urls),
        "on_topic": int(truth.sum()),
        "accuracy": round(float(np.mean(accepted == truth)), 4),
        "average_precision": round(float(average_precision_score(truth, relevance)), 4) if truth.any() else None,
        "recall": round(float(accepted[truth].mean()), 4) if truth.any() else None,
        "accepted_off_topic": round(float(accepted[~truth].mean()), 4) if (~truth).any() else None,
    }


def _seed(*parts: object) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def _sample(pool: Sequence[str], k: int, seed: int) -> list[str]:
    return random.Random(seed).sample(list(pool), min(k, len(pool)))


class Background:
    """The background's pages, the shipped corpora's read once: each critic samples from them as the crawl's
    reader does (the user's own sources, folders, crawl databases and WARC files, read again each time)."""

    def __init__(self, sources: Sequence[str], limit: int) -> None:
        from focused.core.background import BACKGROUNDS, background_texts

        self.sources = list(sources)
        self.own = [source for source in sources if source not in BACKGROUNDS]
        self.limit = limit
        self.pages = [page for source in sources if source in BACKGROUNDS for page in background_texts(source)]
        corpora = [source for source in sources if source in BACKGROUNDS]
        logger.info(
            "examples track: %d background pages read from %s%s", len(self.pages), ", ".join(corpora) or "no corpus",
            f" (and {', '.join(self.own)}, sampled for each critic)" if self.own else "",
        )  # fmt: skip

    def sample(self, seed: int, *, exclude: set[str], exclude_urls: Iterable[str]) -> list[str]:
        """:func:`focused.core.background.read_background` over these pages."""
        from focused.core.background import read_background

        return read_background(
            self.own, self.limit, seed, exclude=exclude, exclude_urls=list(exclude_urls), extra=iter(self.pages)
        )


def _train(name: str, positives: list[str], texts: dict[str, str], background: list[str], seed: int) -> Any:
    from focused.learning.critic.examples import train_examples_critic

    meta = {"bench": "examples", "examples": positives}
    trained = train_examples_critic(
        [texts[u] for u in positives], background, name=name, examples=positives, seed=seed, metadata=meta
    )
    logger.info("examples critic %r from %d examples: %s", name, len(positives), "; ".join(trained.report.lines()))
    return trained.critic


def examples_track(
    base: Track,
    cache: Path,
    *,
    strategy: str = defaults.FOCUSED_STRATEGY,
    ks: Sequence[int] = KS,
    samples: int = SAMPLES,
    background: Sequence[str] | None = None,
    max_background: int = defaults.FOCUSED_EXAMPLES_MAX_BACKGROUND,
) -> Track:
    """The examples track over ``base``'s cases (see the module docstring); ``TrackError`` for a case that
    cannot give k positives or names a union of topics."""
    from focused.learning.critic.crossfit import CrossFitCritic, fold_of
    from focused.learning.critic.load import load_critic

    cache.mkdir(parents=True, exist_ok=True)
    sources = list(background or [s.strip() for s in defaults.FOCUSED_EXAMPLES_BACKGROUND.split(",") if s.strip()])
    pool = Background(sources, max_background)
    track = Track(f"examples-{base.name}", base.store, base.labels)
    track.strategies = ("baseline", "oracle", "oracle-lookahead")
    read: dict[tuple[str, ...] | None, tuple[list[str], list[str], list[str]]] = {}

    def pages_of(case: Case) -> tuple[list[str], list[str], list[str]]:
        """:func:`held_out_pages`, read once per set of confined groups (the wiki's 8 topics judge the same pages)."""
        key = None if case.confine is None else tuple(sorted(case.confine))
        if key not in read:
            read[key] = held_out_pages(base, case)
        return read[key]

    for case in base.cases:
        critic = load_critic(case.model)
        topic = critic.resolve_topic(case.topic)
        if len(topic.prefixes) != 1:
            raise TrackError(f"the examples track takes one topic per case, not the union {case.topic!r}")
        name = topic.prefixes[0]
        case = replace(case, topic=name)
        track.cases.append(case)
        urls, texts, labels = pages_of(case)
        figures: dict[str, Any] = {TAXONOMY: critic_figures(critic, name, urls, texts, labels)}
        track.extra.append(ExtraJob(case, TAXONOMY, strategy, 0))
        # the pages a critic may train on: the training groups' (confined), every labelled page (cross-fitted)
        if case.confine is not None:
            train_urls, train_texts, train_labels = _training_pages(base, case, pages_of(replace(case, confine=None)))
        else:
            train_urls, train_texts, train_labels = urls, texts, labels
        text_of = dict(zip(train_urls, train_texts, strict=True))
        on_topic = sorted(u for u, label in zip(train_urls, train_labels, strict=True) if topic.matches(label))
        if len(on_topic) < 2:
            raise TrackError(f"{case.group}/{name}: {len(on_topic)} page(s) of the topic to sample examples from")
        judged = set(urls) if case.confine is not None else set()
        for k in ks:
            for s in range(samples):
                safe = name.replace(".", "_")
                model = cache / f"examples-v{VERSION}-{base.name}-{case.group}-{safe}-k{k}-s{s}.npz"
                if not model.exists():
                    seed = _seed(base.name, case.group, name, k, s)
                    if case.confine is not None:
                        positives = _sample(on_topic, k, seed)
                        bg = pool.sample(s, exclude={text_of[u] for u in positives}, exclude_urls=[*positives, *judged])
                        _train(name, positives, text_of, bg, s).save(model)
                    else:
                        folds = []
                        k_folds = critic.k if isinstance(critic, CrossFitCritic) else 5
                        for f in range(k_folds):
                            inside = [u for u in urls if fold_of(u, k_folds) == f]
                            outside = [u for u in on_topic if fold_of(u, k_folds) != f]
                            positives = _sample(outside, k, seed + f)
                            bg = pool.sample(
                                s, exclude={text_of[u] for u in positives}, exclude_urls=[*positives, *inside]
                            )
                            folds.append(_train(name, positives, text_of, bg, s))
                        CrossFitCritic(folds, metadata={"bench": "examples", "k": k}).save(model)
                    logger.info("examples critic %s", model.name)
                examples_critic = load_critic(model)
                figures.setdefault(label_of_k(k), []).append(critic_figures(examples_critic, name, urls, texts, labels))
                track.extra.append(ExtraJob(replace(case, model=model), label_of_k(k), strategy, s))
        track.figures[f"{case.group}/{name}"] = {
            key: value if isinstance(value, dict) else _mean_figures(value) for key, value in figures.items()
        }
    return track


def _training_pages(
    base: Track, case: Case, everything: tuple[list[str], list[str], list[str]]
) -> tuple[list[str], list[str], list[str]]:
    """The labelled pages of every group but the case's confined ones (what its taxonomy critic trained on), of
    ``everything`` (:func:`held_out_pages` of the case unconfined)."""
    urls, texts, labels = everything
    keep = [i for i, u in enumerate(urls) if base.store.group_of(u) not in (case.confine or ())]
    return [urls[i] for i in keep], [texts[i] for i in keep], [labels[i] for i in keep]


def _mean_figures(values: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"samples": len(values)}
    for key in values[0]:
        numbers = [v[key] for v in values if v[key] is not None]
        out[key] = round(sum(numbers) / len(numbers), 4) if numbers else None
    return out


def figures_markdown(name: str, figures: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """The critics' accuracy and average precision on the held-out pages, a row per case (Markdown lines)."""
    labels = list(dict.fromkeys(key for per in figures.values() for key in per))
    lines = [
        f"\n{name}, the critics on the held-out pages: accuracy of the verdict (Pr(topic) ≥ 0.5) / average "
        "precision, in % (examples critics: mean over samples):\n",
        "| case | " + " | ".join(labels) + " |",
        "|" + "---|" * (len(labels) + 1),
    ]
    for case, per in figures.items():
        cells = []
        for label in labels:
            f = per.get(label) or {}
            acc, ap = f.get("accuracy"), f.get("average_precision")
            cells.append(" / ".join("–" if v is None else f"{100 * v:.0f}" for v in (acc, ap)))
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    return lines
