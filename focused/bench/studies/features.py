"""The paper's feature studies on WebKB: DOM window size (Fig. 6) and offsets vs plain text (Fig. 7).

Chakrabarti et al. (2002, §3.4) cross-validate the apprentice while growing
the DOM window ``d_max``, report accuracy on negative (LOW) and positive
(HIGH) instances and their micro-average, and compare ⟨t, d⟩ features with
plain text near the link. :func:`feature_study` repeats that on WebKB without
crawling:

* **instances**: every link (u, v) between two stored HTML pages of the
  archive (v found as the replay answers it: ``dir`` → ``dir/`` →
  ``dir/index.html``, stored redirects followed), features from u's HTML;
* **split**: leave one university out: train on the links whose source u is
  in another university or ``misc``, test on the held-out university's;
* **labels**: the target's Pr(c*|v) by the critic trained without the
  held-out university, LOW/HIGH at 0.5; and, because the critic is the
  bottleneck (``FINDINGS.md``), the hand labels (HIGH iff v's WebKB class is
  the target);
* **learner**: :class:`~focused.learning.apprentice.learner.Apprentice` with its
  defaults (α = 0.1, length-normalised evidence, held-out sigmoid), fixed
  binning at 0.5; accuracy uses its own Pr(HIGH) ≥ 0.5, AUC ranks by Pr(HIGH).

The corpus comes from :mod:`focused.bench.studies.linkcorpus` (each page parsed once,
every feature string hashed once); the tables and figures from
:mod:`focused.bench.studies.features_report`.

Figures are arithmetic means over (held-out university, target) cells; the
JSON keeps every cell and the per-target means.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from focused.bench.studies.features_report import write_reports
from focused.bench.studies.linkcorpus import link_corpus
from focused.learning.apprentice.features import N_FEATURES
from focused.learning.apprentice.learner import Apprentice, NotReadyError
from focused.replay.load import open_store

__all__ = ["feature_study"]

logger = logging.getLogger(__name__)

TARGETS = ("course", "student", "faculty", "project")
UNIVERSITIES = ("cornell", "texas", "washington")
LABELINGS = ("critic", "truth")
VARIANTS = ("offsets", "plain")
#: The paper's bucket boundary and the apprentice's decision threshold.
THRESHOLD = 0.5
_METRICS = ("acc_low", "acc_high", "acc", "balanced", "auc")
#: The apprentice of the study: its defaults, buckets at the paper's 0.5, no readiness floor (offline).
_APPRENTICE_KW: dict[str, Any] = {"binning": "fixed", "threshold": THRESHOLD, "min_instances": 1}
#: Label-balance fields summed (not averaged) over universities.
_COUNTS = ("n_test", "critic_high_test", "truth_high_test")


def _critic(archive: Path, cache: Path, university: str) -> Any:
    """The critic trained without ``university``, from ``cache`` (shared with ``focused bench``) or trained."""
    from focused.learning.critic.load import load_critic
    from focused.learning.critic.training import train_webkb_critic

    path = cache / f"critic-webkb-without-{university}.npz"
    if not path.exists():
        logger.info("training the critic without %s", university)
        train_webkb_critic(archive, exclude=[university], url_features=False).save(path)  # the study reads text
    return load_critic(path)


def _cell_metrics(y: np.ndarray, p: np.ndarray) -> dict[str, Any]:
    """Accuracy on LOW, on HIGH, micro-average, their mean, and AUC of Pr(HIGH) ``p`` for truth ``y``."""
    from sklearn.metrics import roc_auc_score

    pred = p >= THRESHOLD
    n_high = int(y.sum())
    n_low = int(len(y) - n_high)
    acc_low = float(np.mean(~pred[~y])) if n_low else math.nan
    acc_high = float(np.mean(pred[y])) if n_high else math.nan
    return {
        "acc_low": acc_low,
        "acc_high": acc_high,
        "acc": float(np.mean(pred == y)) if len(y) else math.nan,
        "balanced": (acc_low + acc_high) / 2,
        "auc": float(roc_auc_score(y, p)) if n_low and n_high else math.nan,
        "n_test": len(y),
        "n_test_high": n_high,
        "predicted_high": int(pred.sum()),
    }


def _fit_predict(
    X: list[np.ndarray], rel: np.ndarray, train: np.ndarray, test: np.ndarray, n_features: int
) -> np.ndarray | None:
    app = Apprentice(n_features=n_features, **_APPRENTICE_KW)
    app.add([X[i] for i in train], rel[train])
    try:
        model = app.fit()
    except NotReadyError:
        return None
    return model.predict([X[i] for i in test])


def _nanmean(values: Iterable[float]) -> float:
    arr = np.array([v for v in values if v is not None and not math.isnan(v)], dtype=np.float64)
    return float(arr.mean()) if arr.size else math.nan


def feature_study(
    archive: Path,
    out: Path,
    *,
    targets: Sequence[str] = TARGETS,
    universities: Sequence[str] = UNIVERSITIES,
    d_values: Iterable[int] = range(0, 8),
    n_features: int = N_FEATURES,
) -> dict[str, Any]:
    """Run the feature studies on a WebKB archive; write ``out/features.{json,md,png}`` and return the results.

    Critics trained without each held-out university are cached under
    ``out/cache/webkb`` (the files ``focused bench`` uses). See the module
    docstring for the protocol.
    """
    start = time.perf_counter()
    archive, out = Path(archive), Path(out)
    d_values = sorted(set(d_values))
    if not d_values or d_values[0] < 0:
        raise ValueError(f"d_values must be non-negative, got {d_values}")
    cache = out / "cache" / "webkb"
    cache.mkdir(parents=True, exist_ok=True)
    store = open_store(archive)
    corpus = link_corpus(store, d_max=max(d_values), n_features=n_features)
    if not len(corpus):
        raise ValueError(f"no link between two stored HTML pages in {archive}")
    features = {(variant, d): corpus.features(d, variant) for variant in VARIANTS for d in d_values}
    src_group = np.array(corpus.groups, dtype=object)[corpus.src]

    cells: list[dict[str, Any]] = []
    balance: list[dict[str, Any]] = []
    fit_seconds = 0.0
    for uni in universities:
        test = np.flatnonzero(src_group == uni)
        train = np.flatnonzero(src_group != uni)
        if not test.size:
            raise ValueError(f"no link from a page of {uni!r} in {archive}")
        critic = _critic(archive, cache, uni)
        posteriors = critic.posteriors(corpus.texts)
        for target in targets:
            topic = critic.resolve_topic(target)
            page_rel = {
                "critic": np.clip(posteriors[:, topic.indices].sum(axis=1), 0.0, 1.0),
                "truth": np.array([float(lab is not None and topic.matches(lab)) for lab in corpus.labels]),
            }
            rels = {name: r[corpus.dst] for name, r in page_rel.items()}
            balance.append(_balance(uni, target, rels, train, test))
            for labeling in LABELINGS:
                rel = rels[labeling]
                y = rel[test] >= THRESHOLD
                for (variant, d), X in features.items():
                    t0 = time.perf_counter()
                    p = _fit_predict(X, rel, train, test, n_features)
                    fit_seconds += time.perf_counter() - t0
                    cell = {"university": uni, "target": target, "labels": labeling, "variant": variant, "d_max": d}
                    if p is None:
                        cell.update(dict.fromkeys(_METRICS, math.nan), note="one bucket empty in training")
                    else:
                        cell.update(_cell_metrics(y, p))
                    cells.append(cell)
        logger.info("held out %s: done (%.0f s so far)", uni, time.perf_counter() - start)

    result = {
        "config": {
            "archive": str(archive),
            "targets": list(targets),
            "universities": list(universities),
            "d_values": d_values,
            "threshold": THRESHOLD,
            "n_features": n_features,
            "apprentice": Apprentice(n_features=1, **_APPRENTICE_KW).get_params() | {"n_features": n_features},
        },
        "corpus": {
            "pages": len(corpus.urls),
            "links": len(corpus),
            "links_by_source_group": {g: int(np.sum(src_group == g)) for g in sorted(set(src_group))},
            "mean_features_per_link": {
                str(d): float(np.mean([len(x) for x in features[("offsets", d)]])) for d in d_values
            },
            "parse_seconds": round(corpus.seconds, 1),
        },
        "summary": _summarize(cells, d_values, targets),
        "label_balance": _summarize_balance(balance, targets),
        "cells": cells,
        "fit_seconds": round(fit_seconds, 1),
        "fits": len(cells),
    }
    result["seconds"] = round(time.perf_counter() - start, 1)
    write_reports(result, out)
    return result


def _balance(uni: str, target: str, rels: dict[str, np.ndarray], train: np.ndarray, test: np.ndarray) -> dict[str, Any]:
    truth = rels["truth"] >= THRESHOLD
    critic = rels["critic"] >= THRESHOLD
    t_truth, t_critic = truth[test], critic[test]
    return {
        "university": uni,
        "target": target,
        "truth_high_rate": float(truth.mean()),
        "critic_high_rate_train": float(critic[train].mean()),
        "critic_high_rate_test": float(t_critic.mean()),
        "truth_high_rate_test": float(t_truth.mean()),
        "n_test": int(test.size),
        "critic_high_test": int(t_critic.sum()),
        "truth_high_test": int(t_truth.sum()),
        # How well the critic's HIGH (out of sample, on the held-out university) matches the hand labels.
        "critic_precision_test": float(t_truth[t_critic].mean()) if t_critic.any() else math.nan,
        "critic_recall_test": float(t_critic[t_truth].mean()) if t_truth.any() else math.nan,
    }


def _summarize(cells: list[dict[str, Any]], d_values: Sequence[int], targets: Sequence[str]) -> dict[str, Any]:
    """Means over cells: ``summary[labels][variant][d]`` and ``summary["per_target"][target][labels][variant][d]``."""
    out: dict[str, Any] = {}
    per_target: dict[str, Any] = {}
    for labeling in LABELINGS:
        out[labeling] = {}
        for variant in VARIANTS:
            out[labeling][variant] = {}
            for d in d_values:
                sel = [c for c in cells if c["labels"] == labeling and c["variant"] == variant and c["d_max"] == d]
                out[labeling][variant][str(d)] = {m: _nanmean(c[m] for c in sel) for m in _METRICS}
                for target in targets:
                    tsel = [c for c in sel if c["target"] == target]
                    row = {m: _nanmean(c[m] for c in tsel) for m in _METRICS}
                    per_target.setdefault(target, {}).setdefault(labeling, {}).setdefault(variant, {})[str(d)] = row
    out["per_target"] = per_target
    return out


def _summarize_balance(rows: list[dict[str, Any]], targets: Sequence[str]) -> dict[str, Any]:
    keys = [k for k in rows[0] if k not in ("university", "target")] if rows else []
    out: dict[str, Any] = {}
    for target in targets:
        sel = [r for r in rows if r["target"] == target]
        out[target] = {k: (sum(r[k] for r in sel) if k in _COUNTS else _nanmean(r[k] for r in sel)) for k in keys}
        out[target]["per_university"] = {r["university"]: {k: r[k] for k in keys} for r in sel}
    return out
