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
* **learner**: :class:`~focused.learning.apprentice.Apprentice` with its
  defaults (α = 0.1, length-normalised evidence, held-out sigmoid), fixed
  binning at 0.5; accuracy uses its own Pr(HIGH) ≥ 0.5, AUC ranks by Pr(HIGH).

Each page is parsed once with the largest ``d_max``; the features of a smaller
window are the ones with ``|d| <= d_max`` (the same multiset
:func:`~focused.learning.linkfeatures.extract_link_features` gives for that
window), and plain text is the same tokens without ``@d``. Every distinct
feature string is hashed once.

Figures are arithmetic means over (held-out university, target) cells; the
JSON keeps every cell and the per-target means.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import numpy as np

from focused.learning.apprentice import Apprentice, NotReadyError
from focused.learning.linkfeatures import N_FEATURES, extract_link_features, hash_features
from focused.learning.text import html_to_text
from focused.replay import ReplayStore, StoredResponse, normalize_url, open_store

__all__ = ["feature_study", "link_corpus"]

logger = logging.getLogger(__name__)

TARGETS = ("course", "student", "faculty", "project")
UNIVERSITIES = ("cornell", "texas", "washington")
LABELINGS = ("critic", "truth")
VARIANTS = ("offsets", "plain")
#: The paper's bucket boundary and the apprentice's decision threshold.
THRESHOLD = 0.5
_METRICS = ("acc_low", "acc_high", "acc", "balanced", "auc")
_MAX_REDIRECTS = 3
#: The apprentice of the study: its defaults, buckets at the paper's 0.5, no readiness floor (offline).
_APPRENTICE_KW: dict[str, Any] = {"binning": "fixed", "threshold": THRESHOLD, "min_instances": 1}
#: Label-balance fields summed (not averaged) over universities.
_COUNTS = ("n_test", "critic_high_test", "truth_high_test")
_FIG6_LINES = (("acc_low", "LOW", "tab:red"), ("acc_high", "HIGH", "tab:green"), ("acc", "micro", "k"))


# ---------------------------------------------------------------------- the link corpus


@dataclass
class LinkCorpus:
    """Every link between stored HTML pages, with its features at every offset.

    Pages are indexed ``0 .. n_pages-1`` (``urls``, ``groups``, ``labels``,
    ``texts``); link ``i`` goes from ``src[i]`` to ``dst[i]``. Its features are
    ``off_ids[indptr[i]:indptr[i+1]]`` (hashed ``t@d``), aligned with
    ``plain_ids`` (hashed ``t``) and ``dist`` (``|d|``).
    """

    urls: list[str]
    groups: list[str]
    labels: list[str | None]
    texts: list[str]
    src: np.ndarray
    dst: np.ndarray
    indptr: np.ndarray
    off_ids: np.ndarray
    plain_ids: np.ndarray
    dist: np.ndarray
    d_max: int
    n_features: int
    seconds: float

    def __len__(self) -> int:
        return len(self.src)

    def features(self, d_max: int, variant: str = "offsets") -> list[np.ndarray]:
        """Compact feature ids of every link for a window ``d_max`` (``variant``: offsets or plain)."""
        if d_max > self.d_max:
            raise ValueError(f"features were extracted up to d_max={self.d_max}, not {d_max}")
        ids = self.off_ids if variant == "offsets" else self.plain_ids
        keep = self.dist <= d_max
        link_of = np.repeat(np.arange(len(self)), np.diff(self.indptr))
        lengths = np.bincount(link_of[keep], minlength=len(self))
        return np.split(ids[keep], np.cumsum(lengths)[:-1])


def _charset(resp: StoredResponse) -> str | None:
    content_type = resp.header("Content-Type")
    if not content_type:
        return None
    msg = Message()
    msg["Content-Type"] = content_type
    return msg.get_content_charset()


def _is_html(resp: StoredResponse) -> bool:
    content_type = (resp.header("Content-Type") or "").split(";")[0].strip().lower()
    return resp.status == 200 and (not content_type or "html" in content_type)


def _target(store: ReplayStore, url: str) -> StoredResponse | None:
    """The stored response a crawler ends on when following ``url`` (redirects followed)."""
    for _ in range(_MAX_REDIRECTS + 1):
        try:
            lookup = store.resolve(url)
        except ValueError:
            return None
        resp = lookup.response
        if resp is None:
            if lookup.redirect is None:
                return None
            url = lookup.redirect
            continue
        location = resp.header("Location") if 300 <= resp.status < 400 else None
        if location is None:
            return resp
        url = urljoin(resp.url, location.strip())
    return None


def link_corpus(store: ReplayStore, *, d_max: int = 7, n_features: int = N_FEATURES) -> LinkCorpus:
    """Parse every stored HTML page once and collect the links between stored HTML pages."""
    start = time.perf_counter()
    page_id: dict[str, int] = {}
    pages: list[StoredResponse] = []
    for resp in store.responses():
        if _is_html(resp):
            page_id[normalize_url(resp.url)] = len(pages)
            pages.append(resp)
    off_vocab: dict[str, int] = {}
    plain_vocab: dict[str, int] = {}
    parsed: dict[str, tuple[int, int, int]] = {}  # "t@d" -> (offset id, plain id, |d|)
    src: list[int] = []
    dst: list[int] = []
    lengths: list[int] = []
    chunks: list[list[tuple[int, int, int]]] = []
    texts: list[str] = []
    for u, resp in enumerate(pages):
        charset = _charset(resp)
        texts.append(html_to_text(resp.body, charset))
        links = extract_link_features(resp.body, resp.url, d_max=d_max, encoding=charset)
        merged: dict[int, list[tuple[int, int, int]]] = {}
        for url, feats in zip(links.urls, links.features, strict=True):
            target = _target(store, url)
            if target is None:
                continue
            v = page_id.get(normalize_url(target.url))
            if v is None or v == u:
                continue
            rows = merged.setdefault(v, [])
            for feat in feats:
                row = parsed.get(feat)
                if row is None:
                    token, _, d = feat.rpartition("@")
                    oid = off_vocab.setdefault(feat, len(off_vocab))
                    pid = plain_vocab.setdefault(token, len(plain_vocab))
                    row = parsed[feat] = (oid, pid, abs(int(d)))
                rows.append(row)
        for v, rows in merged.items():
            src.append(u)
            dst.append(v)
            lengths.append(len(rows))
            chunks.append(rows)
    flat = np.array([r for rows in chunks for r in rows], dtype=np.int64).reshape(-1, 3)
    off_hash = _hash_vocab(off_vocab, n_features)
    plain_hash = _hash_vocab(plain_vocab, n_features)
    indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    corpus = LinkCorpus(
        urls=[p.url for p in pages],
        groups=[store.group_of(p.url) or "" for p in pages],
        labels=[store.label_of(p.url) for p in pages],
        texts=texts,
        src=np.asarray(src, dtype=np.int64),
        dst=np.asarray(dst, dtype=np.int64),
        indptr=indptr,
        off_ids=off_hash[flat[:, 0]],
        plain_ids=plain_hash[flat[:, 1]],
        dist=flat[:, 2].astype(np.int16),
        d_max=d_max,
        n_features=n_features,
        seconds=time.perf_counter() - start,
    )
    logger.info(
        "%d links between %d stored HTML pages (%d distinct <t,d> features) in %.1f s",
        len(corpus), len(pages), len(off_vocab), corpus.seconds,
    )  # fmt: skip
    return corpus


def _hash_vocab(vocab: dict[str, int], n_features: int) -> np.ndarray:
    """Hashed id of each vocabulary entry, indexed by its local id (one hashing call)."""
    if not vocab:
        return np.zeros(0, dtype=np.int32)
    X = hash_features([[s] for s in vocab], n_features)  # dicts keep insertion order = local id
    return X.indices.astype(np.int32)


# ---------------------------------------------------------------------- the study


def _critic(archive: Path, cache: Path, university: str) -> Any:
    """The critic trained without ``university``, from ``cache`` (shared with ``focused bench``) or trained."""
    from focused.learning.critic import load_critic
    from focused.training import train_webkb_critic

    path = cache / f"critic-webkb-without-{university}.npz"
    if not path.exists():
        logger.info("training the critic without %s", university)
        train_webkb_critic(archive, exclude=[university]).save(path)
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


# ---------------------------------------------------------------------- reports


def _f(value: Any, pct: bool = True) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{100 * value:.1f}" if pct else f"{value:.3f}"


def markdown(result: dict[str, Any]) -> str:
    """The study's tables (accuracies in %, AUC as a fraction)."""
    cfg, corpus, summary = result["config"], result["corpus"], result["summary"]
    d_values = [str(d) for d in cfg["d_values"]]
    lines = [
        "# Apprentice feature studies on WebKB (Chakrabarti et al. 2002, §3.4, Fig. 6-7)",
        "",
        f"{corpus['links']} links between {corpus['pages']} stored HTML pages; leave one university out "
        f"({', '.join(cfg['universities'])}; training on the other universities + misc); targets "
        f"{', '.join(cfg['targets'])}. Apprentice: naive Bayes, alpha={cfg['apprentice']['alpha']}, "
        f"{cfg['apprentice']['normalize']}-normalised evidence, held-out sigmoid; HIGH = relevance >= "
        f"{cfg['threshold']}; accuracy of Pr(HIGH) >= {cfg['threshold']}. Means over (university, target) cells. "
        f"{result['fits']} fits in {result['fit_seconds']} s; total {result['seconds']} s.",
        "",
        "`critic` labels: Pr(c*|v) by the critic trained without the held-out university; "
        "`truth`: the hand label of v. `balanced` = mean of LOW and HIGH accuracy.",
    ]
    for labeling in LABELINGS:
        lines += [
            "",
            f"## DOM window size, <t,d> features, {labeling} labels (Fig. 6)",
            "",
            "| d_max | LOW acc. | HIGH acc. | micro acc. | balanced | AUC | features/link |",
            "|---|---|---|---|---|---|---|",
        ]
        for d in d_values:
            r = summary[labeling]["offsets"][d]
            lines.append(
                f"| {d} | {_f(r['acc_low'])} | {_f(r['acc_high'])} | {_f(r['acc'])} | {_f(r['balanced'])} "
                f"| {_f(r['auc'], False)} | {corpus['mean_features_per_link'][d]:.1f} |"
            )
    for labeling in LABELINGS:
        lines += [
            "",
            f"## <t,d> vs plain text near the link, {labeling} labels (Fig. 7)",
            "",
            "| d_max | acc. <t,d> | acc. plain | balanced <t,d> | balanced plain | AUC <t,d> | AUC plain |",
            "|---|---|---|---|---|---|---|",
        ]
        for d in d_values:
            o, p = summary[labeling]["offsets"][d], summary[labeling]["plain"][d]
            lines.append(
                f"| {d} | {_f(o['acc'])} | {_f(p['acc'])} | {_f(o['balanced'])} | {_f(p['balanced'])} "
                f"| {_f(o['auc'], False)} | {_f(p['auc'], False)} |"
            )
    lines += [
        "",
        "## Label balance per target (% of links whose target is HIGH)",
        "",
        "| target | truth (all links) | critic, training links | critic, test links | truth, test links "
        "| critic precision | critic recall | HIGH test links: critic / truth |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for target, b in result["label_balance"].items():
        lines.append(
            f"| {target} | {_f(b['truth_high_rate'])} | {_f(b['critic_high_rate_train'])} "
            f"| {_f(b['critic_high_rate_test'])} | {_f(b['truth_high_rate_test'])} "
            f"| {_f(b['critic_precision_test'])} | {_f(b['critic_recall_test'])} "
            f"| {b['critic_high_test']} / {b['truth_high_test']} of {b['n_test']} |"
        )
    d_ref = "5" if "5" in d_values else d_values[-1]
    lines += [
        "",
        f"## Per target at d_max={d_ref}: AUC <t,d> / plain",
        "",
        "| target | critic labels | truth labels |",
        "|---|---|---|",
    ]
    for target, per in summary["per_target"].items():
        cells = [
            f"{_f(per[lab]['offsets'][d_ref]['auc'], False)} / {_f(per[lab]['plain'][d_ref]['auc'], False)}"
            for lab in LABELINGS
        ]
        lines.append(f"| {target} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any], path: Path) -> Path:
    """Two panels: accuracy vs d_max on LOW/HIGH/all (Fig. 6), <t,d> vs plain text (Fig. 7)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = result["summary"]
    d_values = [str(d) for d in result["config"]["d_values"]]
    xs = [int(d) for d in d_values]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    styles = {"truth": "-", "critic": "--"}
    for labeling in LABELINGS:
        rows = summary[labeling]["offsets"]
        for metric, name, color in _FIG6_LINES:
            left.plot(
                xs, [100 * rows[d][metric] for d in d_values], styles[labeling], color=color, marker="o", ms=3,
                label=f"{name} ({labeling})",
            )  # fmt: skip
    left.set_title("Fig. 6: accuracy vs DOM window, <t,d> (truth solid, critic dashed)", fontsize=9)
    left.set_xlabel("d_max")
    left.set_ylabel("accuracy (%)")
    left.legend(fontsize=7, ncol=2, handlelength=3)
    for labeling in LABELINGS:
        for variant, color in (("offsets", "tab:blue"), ("plain", "tab:orange")):
            rows = summary[labeling][variant]
            right.plot(
                xs, [rows[d]["auc"] for d in d_values], styles[labeling], color=color, marker="o", ms=3,
                label=f"{'<t,d>' if variant == 'offsets' else 'plain text'} ({labeling})",
            )  # fmt: skip
    right.set_title("Fig. 7: <t,d> vs plain text near the link (truth solid, critic dashed)", fontsize=9)
    right.set_xlabel("d_max")
    right.set_ylabel("AUC of Pr(HIGH)")
    right.legend(fontsize=7, handlelength=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _jsonable(value: Any) -> Any:
    """NaN → None, recursively (JSON has no NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def write_reports(result: dict[str, Any], out: Path) -> None:
    """``features.json``, ``features.md`` and ``features.png`` under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "features.json").write_text(json.dumps(_jsonable(result), indent=1))
    (out / "features.md").write_text(markdown(result))
    plot(result, out / "features.png")
