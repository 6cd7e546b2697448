"""Train and evaluate critics on the research corpora; build the default model.

The corpora are read at run time (see :mod:`focused.corpora`); the default
model, ``models/webkb-pagetype.npz``, is the WebKB page-type critic trained
on every page of ``webkb-dev`` (all universities, ``misc`` included), with the
department home pages as its example seeds.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from focused.corpora.dirtree import iter_dirtree
from focused.corpora.webkb import UNIVERSITIES, iter_webkb
from focused.learning.critic.naive_bayes import Critic
from focused.page.text import content_type_charset, html_to_text

__all__ = [
    "DEFAULT_MODEL_NAME",
    "MAX_EXAMPLES",
    "build_default_models",
    "evaluate_20news",
    "evaluate_critic",
    "evaluate_webkb_louo",
    "train_dirtree_critic",
    "train_webkb_critic",
    "webkb_documents",
]

logger = logging.getLogger(__name__)

#: File name of the default WebKB page-type critic under the models folder.
DEFAULT_MODEL_NAME = "webkb-pagetype.npz"
#: Example URLs kept per class in a critic's ``examples``.
MAX_EXAMPLES = 5
#: The universities held out in turn by :func:`evaluate_webkb_louo` (``misc`` always trains).
LOUO_UNIVERSITIES = ("cornell", "texas", "washington")
#: Classes whose one-vs-rest AUC the evaluations report.
WEBKB_AUC_CLASSES = ("course", "student", "faculty", "project")
NEWS_AUC_CLASSES = ("sci.med", "rec.sport.hockey", "comp.graphics")
NEWS_TRAIN, NEWS_TEST = "20news-bydate-train", "20news-bydate-test"


@dataclass(frozen=True)
class _Doc:
    text: str
    label: str
    url: str
    university: str


def _webkb_docs(archive: str | Path) -> list[_Doc]:
    """Every fetched (status 200) WebKB page as visible text."""
    return [
        _Doc(
            html_to_text(page.body, content_type_charset(page.header("Content-Type"))),
            page.label,
            page.url,
            page.university,
        )
        for page in iter_webkb(archive)
        if page.status == 200
    ]


def _select(universities: Iterable[str] | None, exclude: Iterable[str] | None) -> set[str]:
    chosen = set(UNIVERSITIES if universities is None else universities)
    dropped = set(exclude or ())
    unknown = (chosen | dropped) - set(UNIVERSITIES)
    if unknown:
        raise ValueError(f"unknown WebKB universities {sorted(unknown)}; valid: {', '.join(UNIVERSITIES)}")
    chosen -= dropped
    if not chosen:
        raise ValueError("no WebKB university left to train on")
    return chosen


def webkb_documents(
    archive: str | Path, universities: Iterable[str] | None = None
) -> tuple[list[str], list[str], list[str]]:
    """``(texts, labels, urls)`` of the fetched WebKB pages of ``universities`` (default: all)."""
    chosen = _select(universities, None)
    docs = [d for d in _webkb_docs(archive) if d.university in chosen]
    return [d.text for d in docs], [d.label for d in docs], [d.url for d in docs]


def _examples(docs: Sequence[_Doc]) -> dict[str, list[str]]:
    """A few example URLs per class, the most home-page-like (shortest) first.

    Universities take turns, the crawlable ones (cornell, texas, washington)
    before ``misc``, so that ``examples["department"]`` starts with each
    university's department home page: the default crawl seeds.
    """
    order = {u: i for i, u in enumerate((*LOUO_UNIVERSITIES, "misc"))}
    by_class: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for doc in docs:
        by_class[doc.label][doc.university].append(doc.url)
    examples: dict[str, list[str]] = {}
    for label in sorted(by_class):
        queues = [
            sorted(urls, key=lambda u: (len(u), u))
            for _, urls in sorted(by_class[label].items(), key=lambda kv: order.get(kv[0], len(order)))
        ]
        picked: list[str] = []
        while len(picked) < MAX_EXAMPLES and any(queues):
            for queue in queues:
                if queue and len(picked) < MAX_EXAMPLES:
                    picked.append(queue.pop(0))
        examples[label] = picked
    return examples


def _train_on_docs(docs: Sequence[_Doc], archive: str | Path, *, url_features: bool = True, **kw: Any) -> Critic:
    metadata = {
        "corpus": "webkb",
        "archive": Path(archive).name,
        "universities": sorted({d.university for d in docs}),
        "task": "page type",
        **kw.pop("metadata", {}),
    }
    return Critic.train(
        [d.text for d in docs],
        [d.label for d in docs],
        urls=[d.url for d in docs] if url_features else None,
        metadata=metadata,
        examples=_examples(docs),
        **kw,
    )


def train_webkb_critic(
    archive: str | Path,
    *,
    universities: Iterable[str] | None = None,
    exclude: Iterable[str] | None = None,
    **kw: Any,
) -> Critic:
    """Train a WebKB page-type critic on ``universities`` (default all) minus ``exclude``.

    The critic reads each page's URL words too (``url_features=False``: its text only;
    :mod:`focused.learning.critic.urlwords`). Extra keywords go to :meth:`Critic.train`. ``metadata`` records the
    universities; ``examples`` keeps up to five URLs per class, the department
    home pages first for ``department`` (the default seeds).
    """
    chosen = _select(universities, exclude)
    docs = [d for d in _webkb_docs(archive) if d.university in chosen]
    if not docs:
        raise ValueError(f"no fetched pages of {', '.join(sorted(chosen))} in {archive}")
    return _train_on_docs(docs, archive, **kw)


def train_dirtree_critic(path: str | Path, subset: str | None = None, **kw: Any) -> Critic:
    """Train a topic critic on a ``class/.../doc`` tree (see :func:`iter_dirtree`).

    The documents are used as they are (plain text); extra keywords go to
    :meth:`Critic.train`.
    """
    texts: list[str] = []
    labels: list[str] = []
    for _, label, text in iter_dirtree(path, subset):
        texts.append(text)
        labels.append(label)
    metadata = {"corpus": "dirtree", "archive": Path(path).name, "subset": subset, **kw.pop("metadata", {})}
    return Critic.train(texts, labels, metadata=metadata, **kw)


# ---------------------------------------------------------------------- evaluation


def _ties(values: np.ndarray, sample: int = 1000, seed: int = 0) -> int:
    """Pages, among a random sample, whose score exactly equals another sampled page's."""
    rng = np.random.default_rng(seed)
    picked = values[rng.permutation(len(values))[:sample]]
    _, inverse, counts = np.unique(picked, return_inverse=True, return_counts=True)
    return int((counts[inverse] > 1).sum())


def evaluate_critic(
    critic: Critic,
    texts: Sequence[str],
    labels: Sequence[str],
    auc_classes: Sequence[str] = (),
    urls: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Accuracy, log-loss, macro P/R/F1, AUCs and tie counts, raw and calibrated posteriors (and, with a
    verdict head, the head's: ``verdict``).

    AUCs are of one class's posterior against all other pages (the relevance
    ranking of a single-class topic); ``macro_auc`` averages over the classes
    present in ``labels``; ``ties`` counts pages among 1,000 sampled whose
    score for the first ``auc_classes`` class exactly equals another's. ``urls``
    are the pages' URLs, which a critic with URL features reads.
    """
    from sklearn.metrics import precision_recall_fscore_support, roc_auc_score

    index = {c: i for i, c in enumerate(critic.classes)}
    y = np.array([index.get(label, -1) for label in labels])
    results: dict[str, Any] = {"n_test": len(y)}
    views = [("raw", critic.raw_posteriors(texts, urls)), ("calibrated", critic.posteriors(texts, urls))]
    if critic.head is not None:  # the verdicts of a critic with a head (focused.learning.critic.verdict_head)
        views.append(("verdict", critic.verdict_posteriors(texts, urls)))
    for name, post in views:
        pred = post.argmax(axis=1)
        known = y >= 0
        true_p = np.clip(post[np.flatnonzero(known), y[known]], 1e-15, 1.0)
        precision, recall, f1, _ = precision_recall_fscore_support(
            y, pred, labels=np.unique(y[known]), average="macro", zero_division=0
        )
        aucs = {}
        for k in np.unique(y[known]):
            positive = y == k
            if 0 < positive.sum() < len(y):
                aucs[critic.classes[k]] = float(roc_auc_score(positive, post[:, k]))
        stats: dict[str, Any] = {
            "accuracy": float((pred == y).mean()),
            "log_loss": float(-np.log(true_p).mean()),
            "macro_precision": float(precision),
            "macro_recall": float(recall),
            "macro_f1": float(f1),
            "macro_auc": float(np.mean(list(aucs.values()))) if aucs else float("nan"),
            "auc": {c: aucs.get(c, float("nan")) for c in auc_classes},
        }
        if auc_classes and auc_classes[0] in index:
            stats["ties"] = _ties(post[:, index[auc_classes[0]]])
        results[name] = stats
    return results


def evaluate_20news(archive: str | Path, **kw: Any) -> dict[str, Any]:
    """Train on ``20news-bydate-train``, test on ``20news-bydate-test``.

    Returns :func:`evaluate_critic`'s statistics (``raw`` and ``calibrated``),
    the top-level ``accuracy`` (calibrated), the fitted length scale and timings.
    """
    start = time.perf_counter()
    critic = train_dirtree_critic(archive, NEWS_TRAIN, **kw)
    train_seconds = time.perf_counter() - start
    test = list(iter_dirtree(archive, NEWS_TEST))
    results = evaluate_critic(critic, [t for _, _, t in test], [lab for _, lab, _ in test], NEWS_AUC_CLASSES)
    results.update(
        accuracy=results["calibrated"]["accuracy"],
        n_train=critic.metadata["critic"]["n_documents"],
        length_scale=critic.length_scale,
        alpha=critic.alpha,
        train_seconds=train_seconds,
    )
    return results


def evaluate_webkb_louo(archive: str | Path, held_out: Sequence[str] = LOUO_UNIVERSITIES, **kw: Any) -> dict[str, Any]:
    """Leave one university out: train on the others (``misc`` included), test on it.

    Returns per-university :func:`evaluate_critic` statistics and their mean
    (``mean``: accuracy, log-loss and the course/student/faculty/project AUCs).
    """
    docs = _webkb_docs(archive)
    per: dict[str, Any] = {}
    for university in held_out:
        train = [d for d in docs if d.university != university]
        test = [d for d in docs if d.university == university]
        critic = _train_on_docs(train, archive, **kw)
        texts, labels, urls = [d.text for d in test], [d.label for d in test], [d.url for d in test]
        stats = evaluate_critic(critic, texts, labels, WEBKB_AUC_CLASSES, urls)
        stats["length_scale"] = critic.length_scale
        per[university] = stats
    mean: dict[str, Any] = {}
    for name in [n for n in ("raw", "calibrated", "verdict") if all(n in per[u] for u in held_out)]:
        rows = [per[u][name] for u in held_out]
        mean[name] = {
            key: float(np.mean([r[key] for r in rows]))
            for key in ("accuracy", "log_loss", "macro_f1", "macro_auc", "ties")
        }
        mean[name]["auc"] = {c: float(np.mean([r["auc"][c] for r in rows])) for c in WEBKB_AUC_CLASSES}
    return {"universities": per, "mean": mean}


# ---------------------------------------------------------------------- default models


def build_default_models(out_dir: str | Path = "models", archive: str | Path | None = None) -> list[Path]:
    """Train the default critic(s) reproducibly and write them under ``out_dir``.

    Today that is ``webkb-pagetype.npz``: the page-type critic over all of
    ``webkb-dev`` (every university, ``misc`` included), seed 0, with a verdict head.
    """
    from focused.corpora.webkb import default_archive

    archive = default_archive() if archive is None else Path(archive)
    out = Path(out_dir)
    start = time.perf_counter()
    critic = train_webkb_critic(archive, seed=0, verdict_head=True)
    path = critic.save(out / DEFAULT_MODEL_NAME)
    logger.info(
        "wrote %s (%d classes, %.0f kB) in %.1f s",
        path,
        len(critic.classes),
        path.stat().st_size / 1024,
        time.perf_counter() - start,
    )
    return [path]
