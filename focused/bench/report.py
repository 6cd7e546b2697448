"""Write the benchmark's JSON, Markdown tables and loss plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _pct(value: Any) -> str:
    if value is None or value != value:  # None or NaN
        return "–"
    return f"{100 * float(value):.1f}"


def _signed(value: Any) -> str:
    if value is None or value != value:
        return "–"
    return f"{100 * float(value):+.0f}%"


def _at(table: dict[Any, Any], k: int) -> Any:
    return table.get(k, table.get(str(k)))


def _apprentice_tables(result: dict[str, Any], track: str, tsum: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    reduction = tsum.get("loss_reduction") or {}
    if reduction:
        ks = [100, 250, 500, 1000]
        lines.append(f"\n{track}, loss reduction vs the baseline, 1 − loss/loss_baseline (mean over cases):\n")
        lines.append("| strategy | " + " | ".join(f"@{k}" for k in ks) + " |")
        lines.append("|" + "---|" * (len(ks) + 1))
        for name, red in reduction.items():
            lines.append(f"| {name} | " + " | ".join(_signed(_at(red["mean"], k)) for k in ks) + " |")
        topics = sorted({t for red in reduction.values() for t in red["per_topic"]})
        lines.append(f"\n{track}, loss reduction @100 / @250 by topic:\n")
        lines.append("| topic | " + " | ".join(reduction) + " |")
        lines.append("|" + "---|" * (len(reduction) + 1))
        for topic in topics:
            cells = []
            for red in reduction.values():
                t = red["per_topic"].get(topic, {})
                cells.append(f"{_signed(_at(t, 100))} / {_signed(_at(t, 250))}")
            lines.append(f"| {topic} | " + " | ".join(cells) + " |")
    noise = tsum.get("noise") or {}
    if noise:
        lines.append(
            f"\n{track}, run-to-run noise (std of true harvest over tie-break seeds, in points: per case, mean "
            "over cases; and of the track's mean harvest):\n"
        )
        ks = [k for k in (100, 250, 500, 1000) if any(_at(per_k, k) is not None for per_k in noise.values())]
        lines.append(
            "| strategy | "
            + " | ".join(f"case @{k}" for k in ks)
            + " | "
            + " | ".join(f"track @{k}" for k in ks)
            + " |"
        )
        lines.append("|---|" + "---|" * (2 * len(ks)))
        for name, per_k in noise.items():
            track_k = per_k.get("mean_of_track") or {}
            cells = [_pct(_at(per_k, k)) for k in ks] + [_pct(_at(track_k, k)) for k in ks]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    runs = [r for r in result["runs"] if r["track"] == track and r["ok"] and r.get("apprentice")]
    if runs:
        lines.append(f"\n{track}, the apprentice (mean over runs):\n")
        lines.append("| strategy | switched in at page | instances | HIGH rate | model versions |")
        lines.append("|---|---|---|---|---|")
        for name in sorted({r["strategy"] for r in runs}):
            stats = [r["apprentice"] for r in runs if r["strategy"] == name]

            def avg(key: str, stats: list[dict[str, Any]] = stats, scale: float = 1.0, fmt: str = "{:.0f}") -> str:
                values = [scale * float(a[key]) for a in stats if key in a]
                return fmt.format(sum(values) / len(values)) if values else "–"

            cells = [
                avg("switched_in_at"),
                avg("n_instances"),
                avg("high_rate", scale=100, fmt="{:.0f}%"),
                avg("version", fmt="{:.1f}"),
            ]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def markdown(result: dict[str, Any]) -> str:
    lines: list[str] = []
    cfg = result["config"]
    lines.append(
        f"Budget {cfg['budget']} pages; strategies {', '.join(cfg['strategies'])}; "
        f"{cfg['repeats']} run(s) per best-first case; wall time {result.get('seconds', '?')} s."
    )
    if cfg.get("settings"):  # --set: every crawl of the run had these
        lines[-1] += " Settings of every crawl: " + ", ".join(f"`{k}={v}`" for k, v in cfg["settings"].items()) + "."
    failed = [r for r in result["runs"] if not r["ok"]]
    if failed:
        lines.append(
            f"\n**{len(failed)} crawl(s) failed** and are left out: "
            + ", ".join(f"{r['track']}/{r['group']}/{r['topic']}/{r['strategy']}" for r in failed)
        )
    for track, tsum in result["summary"].items():
        strategies = tsum["strategies"]
        if not strategies:
            continue
        ks = sorted({int(k) for s in strategies.values() for k in s["true_harvest"]})
        lines.append(f"\n### {track}: mean over {len(result['tracks'][track]['cases'])} cases (%)\n")
        head = ["strategy"] + [f"harvest@{k}" for k in ks] + [f"critic@{k}" for k in ks[:2]]
        head += [f"recall@{k}" for k in ks] + ["404s", "non-HTML"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for name, s in strategies.items():
            th, ch, rc = s["true_harvest"], s["critic_harvest"], s["recall"]
            row = [name] + [_pct(th.get(k, th.get(str(k)))) for k in ks]
            row += [_pct(ch.get(k, ch.get(str(k)))) for k in ks[:2]]
            row += [_pct(rc.get(k, rc.get(str(k)))) for k in ks]
            row += [f"{s['not_found']:.0f}", f"{s['non_html']:.0f}"]
            lines.append("| " + " | ".join(row) + " |")
        lines.append(f"\n{track}, true harvest @100 / @250 by topic (%):\n")
        names = list(strategies)
        lines.append("| topic | " + " | ".join(names) + " |")
        lines.append("|" + "---|" * (len(names) + 1))
        for topic, per in tsum["per_topic"].items():
            cells = []
            for name in names:
                th = per.get(name, {}).get("true_harvest", {})
                cells.append(f"{_pct(th.get(100, th.get('100')))} / {_pct(th.get(250, th.get('250')))}")
            lines.append(f"| {topic} | " + " | ".join(cells) + " |")
        if tsum.get("gap_closure"):
            lines.append(
                f"\n{track}, gap closure G = (h − h_baseline)/(h_oracle − h_baseline) against the better oracle "
                "of each case; on the track's mean harvests, and the mean of per-case G:\n"
            )
            lines.append("| strategy | G@100 (means) | G@250 (means) | G@100 (per-case mean) | G@250 (per-case mean) |")
            lines.append("|---|---|---|---|---|")
            fmt = lambda g: "–" if g is None else f"{g:+.2f}"  # noqa: E731
            of_means = tsum.get("gap_closure_of_means", {})
            for name, per_k in tsum["gap_closure"].items():
                m = of_means.get(name, {})
                cells = [m.get(k, m.get(str(k))) for k in (100, 250)] + [
                    per_k.get(k, per_k.get(str(k))) for k in (100, 250)
                ]
                lines.append(f"| {name} | " + " | ".join(fmt(g) for g in cells) + " |")
        lines.extend(_apprentice_tables(result, track, tsum))
        figures = result["tracks"].get(track, {}).get("critics")
        if figures:
            from focused.bench.examples import figures_markdown

            lines.extend(figures_markdown(track, figures))
    tp = result.get("throughput")
    if tp:
        lines.append(
            f"\nThroughput on {tp['case']} (concurrency {tp['concurrency']}, loopback replay, `strategy=baseline`; "
            "on WebKB most responses are cheap 404s, so this flatters the focused crawler: `focused bench-speed` "
            "compares on the all-200 Wikipedia replay):\n"
        )
        lines.append("| spider | responses (200 OK) | seconds | responses/s |")
        lines.append("|---|---|---|---|")
        for spider in ("plain", "focused"):
            t = tp.get(spider, {})
            lines.append(
                f"| {spider} | {t.get('responses')} ({t.get('ok_responses', '?')}) | {t.get('elapsed_s')} "
                f"| {t.get('pages_per_s')} |"
            )
    if result.get("speed"):
        from focused.bench.speed import markdown as speed_markdown

        lines.append("\n" + speed_markdown(result["speed"]))
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any], out: Path) -> list[Path]:
    """One PNG per track: mean cumulative irrelevant pages (by the true labels) vs pages fetched, a panel per topic."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for track in result["summary"]:
        runs = [r for r in result["runs"] if r["track"] == track and r["ok"]]
        topics = sorted({r["topic"] for r in runs})
        if not topics:
            continue
        cols = min(4, len(topics))
        rows = (len(topics) + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
        for ax, topic in zip(axes.flat, topics, strict=False):
            for strategy in result["config"]["strategies"]:
                curves = [r["cumulative_loss"] for r in runs if r["topic"] == topic and r["strategy"] == strategy]
                curves = [c for c in curves if c]
                if not curves:
                    continue
                n = min(len(c) for c in curves)
                mean = [sum(c[i] for c in curves) / len(curves) for i in range(n)]
                ax.plot(range(1, n + 1), mean, label=strategy)
            ax.set_title(topic, fontsize=9)
            ax.set_xlabel("pages fetched", fontsize=8)
            ax.set_ylabel("irrelevant pages", fontsize=8)
            ax.tick_params(labelsize=7)
        for ax in list(axes.flat)[len(topics) :]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=7)
        several = any(
            sum(1 for r in runs if r["topic"] == t and r["strategy"] == s) > 1
            for t in topics
            for s in result["config"]["strategies"]
        )
        fig.suptitle(f"{track}: cumulative loss (true labels)" + (", mean over cases" if several else ""))
        fig.tight_layout()
        path = out / f"loss-{track}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def write_reports(result: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(result, indent=1, default=str))
    text = markdown(result)
    (out / "bench.md").write_text(text)
    result["plots"] = [str(p) for p in plot(result, out)]
    print(text)
