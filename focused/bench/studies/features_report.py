"""The feature studies' reports: ``features.md`` (tables), ``features.png`` (Fig. 6-7) and ``features.json``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

__all__ = ["markdown", "plot", "write_reports"]

_FIG6_LINES = (("acc_low", "LOW", "tab:red"), ("acc_high", "HIGH", "tab:green"), ("acc", "micro", "k"))


def _labelings(result: dict[str, Any]) -> list[str]:
    """The labelings the study summarised (``critic``, ``truth``), in its order."""
    return [k for k in result["summary"] if k != "per_target"]


def _f(value: Any, pct: bool = True) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{100 * value:.1f}" if pct else f"{value:.3f}"


def markdown(result: dict[str, Any]) -> str:
    """The study's tables (accuracies in %, AUC as a fraction)."""
    cfg, corpus, summary = result["config"], result["corpus"], result["summary"]
    labelings = _labelings(result)
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
    for labeling in labelings:
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
    for labeling in labelings:
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
            for lab in labelings
        ]
        lines.append(f"| {target} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any], path: Path) -> Path:
    """Two panels: accuracy vs d_max on LOW/HIGH/all (Fig. 6), <t,d> vs plain text (Fig. 7)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = result["summary"]
    labelings = _labelings(result)
    d_values = [str(d) for d in result["config"]["d_values"]]
    xs = [int(d) for d in d_values]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    styles = {"truth": "-", "critic": "--"}
    for labeling in labelings:
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
    for labeling in labelings:
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
