"""The benchmark's summary of its runs: means, gap closure G, loss reduction and run-to-run noise."""

from __future__ import annotations

from typing import Any

from focused.bench.metrics import gap_closure
from focused.bench.runs import CHECKPOINTS, Run

GAP_CHECKPOINTS = (100, 250)
#: The bounds: G is measured against the better of them, case by case.
ORACLES = ("oracle", "oracle-lookahead")


def summarize(runs: list[Run], strategies: tuple[str, ...]) -> dict[str, Any]:
    """Means per track × strategy × checkpoint, per-target means, and gap closure."""
    summary: dict[str, Any] = {}
    for track in sorted({r.track for r in runs}):
        truns = [r for r in runs if r.track == track and r.ok]
        tsum: dict[str, Any] = {"strategies": {}, "per_topic": {}}
        for strategy in strategies:
            sruns = [r for r in truns if r.strategy == strategy]
            if not sruns:
                continue
            tsum["strategies"][strategy] = _means(sruns)
            for topic in sorted({r.topic for r in sruns}):
                tsum["per_topic"].setdefault(topic, {})[strategy] = _means([r for r in sruns if r.topic == topic])
        tsum["gap_closure"], tsum["gap_closure_of_means"] = _gap_closures(truns, strategies)
        tsum["loss_reduction"] = _loss_reduction(truns, strategies)
        tsum["noise"] = _noise(truns, strategies)
        summary[track] = tsum
    return summary


def _gap_closures(runs: list[Run], strategies: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    """G per strategy and checkpoint against the better oracle of each case, two ways.

    ``per_case``: G of each case (group, topic), then the mean (cases whose
    oracle is barely above the baseline weigh as much as any). ``of_means``:
    G of the track's mean harvests, h̄ against h̄_baseline and the mean over
    cases of the better oracle's harvest (the figure a reader can check).
    Only cases where the strategy, the baseline and an oracle all ran count.
    """
    per_case: dict[str, Any] = {}
    of_means: dict[str, Any] = {}
    oracles = [o for o in ORACLES if o in strategies]
    if "baseline" not in strategies or not oracles:
        return per_case, of_means
    cases = sorted({(r.group, r.topic) for r in runs})
    for strategy in strategies:
        if strategy == "baseline" or strategy in ORACLES:
            continue
        g_case: dict[int, Any] = {}
        g_means: dict[int, Any] = {}
        for k in GAP_CHECKPOINTS:
            values, hs, hbs, hos = [], [], [], []
            for group, topic in cases:
                h = _mean_at(runs, group, topic, strategy, k)
                hb = _mean_at(runs, group, topic, "baseline", k)
                found = [v for o in oracles if (v := _mean_at(runs, group, topic, o, k)) is not None]
                if h is None or hb is None or not found:
                    continue
                ho = max(found)
                hs.append(h)
                hbs.append(hb)
                hos.append(ho)
                g = gap_closure(h, hb, ho)
                if g is not None:
                    values.append(g)
            g_case[k] = round(sum(values) / len(values), 3) if values else None
            mean_g = gap_closure(*(sum(x) / len(x) for x in (hs, hbs, hos))) if hs else None
            g_means[k] = round(mean_g, 3) if mean_g is not None else None
        per_case[strategy] = g_case
        of_means[strategy] = g_means
    return per_case, of_means


def _loss_reduction(runs: list[Run], strategies: tuple[str, ...]) -> dict[str, Any]:
    """1 − loss/loss_baseline at each checkpoint, per topic (mean over groups) and overall."""
    out: dict[str, Any] = {}
    cases = sorted({(r.group, r.topic) for r in runs})
    for strategy in strategies:
        if strategy == "baseline":
            continue
        per_topic: dict[str, dict[int, list[float]]] = {}
        for group, topic in cases:
            for k in CHECKPOINTS:
                ls = [
                    r.loss[k]
                    for r in runs
                    if (r.group, r.topic, r.strategy) == (group, topic, strategy) and k in r.loss
                ]
                lb = [
                    r.loss[k]
                    for r in runs
                    if (r.group, r.topic, r.strategy) == (group, topic, "baseline") and k in r.loss
                ]
                if ls and lb and sum(lb) > 0:
                    value = 1.0 - (sum(ls) / len(ls)) / (sum(lb) / len(lb))
                    per_topic.setdefault(topic, {}).setdefault(k, []).append(value)
        topics = {t: {k: round(sum(v) / len(v), 3) for k, v in ks.items()} for t, ks in per_topic.items()}
        overall: dict[int, float] = {}
        for k in CHECKPOINTS:
            values = [v for ks in per_topic.values() for v in ks.get(k, [])]
            if values:
                overall[k] = round(sum(values) / len(values), 3)
        out[strategy] = {"mean": overall, "per_topic": topics}
    return out


def _noise(runs: list[Run], strategies: tuple[str, ...]) -> dict[str, Any]:
    """Run-to-run spread (random tie-break seeds): mean over cases of the std of true harvest.

    Also the std of the *track's mean* harvest across repeats (``mean_of_track``:
    repeat r's harvest averaged over the cases), the noise of a track-level figure.
    """
    out: dict[str, Any] = {}
    for strategy in strategies:
        per_k: dict[int, float] = {}
        track_k: dict[int, float] = {}
        for k in CHECKPOINTS:
            by_repeat: dict[int, list[float]] = {}
            for r in runs:
                if r.strategy == strategy and k in r.true_harvest:
                    by_repeat.setdefault(r.repeat, []).append(r.true_harvest[k])
            means = [sum(v) / len(v) for v in by_repeat.values() if v]
            if len(means) > 1 and len({len(v) for v in by_repeat.values()}) == 1:
                m = sum(means) / len(means)
                track_k[k] = round((sum((x - m) ** 2 for x in means) / (len(means) - 1)) ** 0.5, 4)
            stds = []
            for group, topic in sorted({(r.group, r.topic) for r in runs}):
                values = [
                    r.true_harvest[k]
                    for r in runs
                    if (r.group, r.topic, r.strategy) == (group, topic, strategy) and k in r.true_harvest
                ]
                if len(values) > 1:
                    mean = sum(values) / len(values)
                    stds.append((sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5)
            if stds:
                per_k[k] = round(sum(stds) / len(stds), 4)
        if per_k:
            out[strategy] = {**per_k, "mean_of_track": track_k}
    return out


def _mean_at(runs: list[Run], group: str, topic: str, strategy: str, k: int) -> float | None:
    values = [
        r.true_harvest[k]
        for r in runs
        if (r.group, r.topic, r.strategy) == (group, topic, strategy) and k in r.true_harvest
    ]
    return sum(values) / len(values) if values else None


def _means(runs: list[Run]) -> dict[str, Any]:
    def mean(values: list[float]) -> float:
        return round(sum(values) / len(values), 4) if values else float("nan")

    ks = sorted({k for r in runs for k in r.true_harvest})
    return {
        "runs": len(runs),
        "true_harvest": {k: mean([r.true_harvest[k] for r in runs if k in r.true_harvest]) for k in ks},
        "critic_harvest": {k: mean([r.critic_harvest[k] for r in runs if k in r.critic_harvest]) for k in ks},
        "loss": {k: mean([r.loss[k] for r in runs if k in r.loss]) for k in ks},
        "recall": {k: mean([r.recall[k] for r in runs if k in r.recall]) for k in ks},
        "not_found": mean([float(r.not_found) for r in runs]),
        "non_html": mean([float(r.non_html) for r in runs]),
        "responses": mean([float(r.responses) for r in runs]),
    }
