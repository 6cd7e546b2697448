"""``focused report``'s page: one self-contained HTML file (plots inlined as base64 PNG, no external resources).

The loss plot is drawn by the benchmark's own plotting code
(:func:`focused.bench.report.plot`), given this one crawl as its only run.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import tempfile
from pathlib import Path
from typing import Any

from focused.report.data import Choice, ReportData

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;
vertical-align:top}th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
.plots img{max-width:100%;border:1px solid #eee;margin:.3em 0}.note{color:#875}code{font-size:90%}
a{color:#1a5;word-break:break-all}
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _f(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _png(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def plots(data: ReportData) -> list[tuple[str, str]]:
    """``(caption, data URI)`` of the harvest and loss plots."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from focused.bench.report import plot as bench_plot

    out: list[tuple[str, str]] = []
    if not data.pages:
        return out
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        x = range(1, len(data.pages) + 1)
        fig, ax = plt.subplots(figsize=(8, 3.2))
        ax.plot(x, data.harvest(), label="harvest so far (mean Pr(c*|v))")
        ax.plot(x, data.recent_harvest(), label="last 50 pages", alpha=0.6)
        ax.set_ylim(0, 1)
        ax.set_xlabel("pages fetched")
        ax.set_ylabel("harvest")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(folder / "harvest.png", dpi=100)
        plt.close(fig)
        out.append(("Harvest: the critic's mean relevance of the pages fetched so far", _png(folder / "harvest.png")))
        how = "hand labels" if data.labels_used else f"the critic, Pr(c*|v) < {data.threshold:g}"
        strategy = str(data.meta.get("strategy", "crawl"))
        topic = str(data.meta.get("topic", ""))
        run = {"track": "crawl", "ok": True, "topic": topic, "strategy": strategy}
        result = {
            "summary": {"crawl": {}},
            "runs": [{**run, "cumulative_loss": data.cumulative_loss()}],
            "config": {"strategies": [strategy]},
        }
        for path in bench_plot(result, folder, what="labels" if data.labels_used else "critic"):
            out.append((f"Loss: irrelevant pages fetched so far (by {how})", _png(path)))
    return out


def render(data: ReportData) -> str:
    """The report page."""
    meta, stats = data.meta, data.stats
    harvest = data.harvest()
    title = f"Crawl report: {meta.get('topic', '?')} ({meta.get('strategy', '?')})"
    parts = [f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{_e(title)}</title>"]
    parts.append(f"<style>{_STYLE}</style></head><body><h1>{_e(title)}</h1>")
    started, finished = meta.get("started"), meta.get("finished")
    facts = [
        ("crawl database", str(data.path)),
        ("topic", f"{meta.get('topic')} (classes {', '.join(meta.get('topic_classes') or [])})"),
        ("strategy", meta.get("strategy")),
        ("critic", meta.get("critic_model")),
        ("started", _time(started)),
        ("finished", _time(finished) if finished else "not closed (still running, or killed)"),
        ("pages", len(data.pages)),
        ("relevant pages", f"{sum(p.relevance >= data.threshold for p in data.pages)} (Pr(c*|v) ≥ {data.threshold:g})"),
        ("harvest / loss", f"{_f(harvest[-1] if harvest else None)} / {_f(1 - harvest[-1] if harvest else None)}"),
    ]
    if stats.get("focused/db/error"):
        facts.append(("crawl database error", stats["focused/db/error"]))
    parts.append("<table class=facts>" + "".join(f"<tr><th>{_e(k)}<td>{_e(v)}" for k, v in facts) + "</table>")
    parts += [f"<p class=note>Note: {_e(n)}</p>" for n in data.notes]
    parts.append("<h2>Harvest and loss</h2><div class=plots>")
    for caption, uri in plots(data):
        parts.append(f"<figure><img alt='{_e(caption)}' src='{uri}'><figcaption>{_e(caption)}</figcaption></figure>")
    parts.append("</div>")
    parts.append(_top_pages(data))
    parts.append(_hosts(data))
    parts.append(_reasons(data))
    parts.append(_choices(data.choices))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _time(stamp: Any) -> str:
    if not isinstance(stamp, int | float):
        return "?"
    return dt.datetime.fromtimestamp(stamp, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _link(url: str | None) -> str:
    return f"<a href='{_e(url)}'>{_e(url)}</a>" if url else "–"


def _top_pages(data: ReportData) -> str:
    rows = [
        f"<tr><td class=n>{p.fetch_order}<td class=n>{p.relevance:.3f}<td>{_e(p.predicted_class)}"
        f"<td>{_e(p.title)}<td>{_link(p.url)}"
        for p in data.top_pages()
    ]
    head = "<tr><th>fetched #<th>Pr(c*|v)<th>class<th>title<th>URL"
    return "<h2>The most relevant pages found</h2><table>" + head + "".join(rows) + "</table>"


def _hosts(data: ReportData) -> str:
    hosts = data.hosts()
    rows = [f"<tr><td>{_e(h)}<td class=n>{n}<td class=n>{r}<td class=n>{r / n:.2f}" for h, n, r in hosts[:30]]
    more = f"<p>... and {len(hosts) - 30} more hosts</p>" if len(hosts) > 30 else ""
    head = "<tr><th>host<th>pages<th>relevant<th>share relevant"
    return f"<h2>Pages per host ({len(hosts)} hosts)</h2><table>{head}{''.join(rows)}</table>{more}"


def _reasons(data: ReportData) -> str:
    rows = data.reasons()
    if not rows:
        text = "nothing was skipped or refused" if data.stats else "no final stats were stored"
        return f"<h2>Skipped or refused</h2><p>{_e(text)}</p>"
    body = "".join(f"<tr><td><code>{_e(k)}</code><td>{_e(m)}<td class=n>{_e(v)}" for k, m, v in rows)
    return f"<h2>Skipped or refused, and why</h2><table><tr><th>stat<th>meaning<th>count{body}</table>"


def _choices(choices: list[Choice]) -> str:
    if not choices:
        return "<h2>Why these pages were fetched</h2><p>No page fetched through a link was recorded.</p>"
    intro = (
        "<p>For the most relevant pages reached through a link: the frontier's score of the page when it was "
        "fetched (after merging its parents and any re-scoring), the strategy's score of the link when it was "
        "found, the critic's views of the link (its page and its anchor text), and the words within the "
        "apprentice's DOM window of the link (<code>word@offset</code>) that the critic finds most on topic.</p>"
    )
    rows = []
    for c in choices:
        words = ", ".join(f"{_e(f)} ({s:.2f})" for f, s in c.features) or "–"
        rows.append(
            f"<tr><td class=n>{c.fetch_order}<td>{_link(c.url)}<td class=n>{c.relevance:.3f}"
            f"<td class=n>{_f(c.frontier_score)}<td class=n>{_f(c.link_score)}<td>{_link(c.parent)}"
            f"<td class=n>{_f(c.parent_relevance)}<td>{_e(c.anchor) or '–'}<td class=n>{_f(c.anchor_relevance)}"
            f"<td>{words}"
        )
    head = (
        "<tr><th>fetched #<th>page<th>Pr(c*|v)<th>frontier score<th>link score<th>linked from<th>Pr(c*|u)"
        "<th>anchor<th>Pr(c*|anchor)<th>strongest words near the link"
    )
    return "<h2>Why these pages were fetched</h2>" + intro + "<table>" + head + "".join(rows) + "</table>"


def write_report(data: ReportData, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(data), encoding="utf-8")
    return out
