"""``focused report``'s page: one self-contained HTML file (plots inlined as base64 PNG, no external resources).

The harvest axis is scaled to the curve (a harvest of 0.06 is not a flat line
at the bottom of 0..1). The loss plot puts the crawl beside references: every
page irrelevant (y = x), a crawl that ignores the topic (with hand labels: it
finds the labelled pages' share of on-topic pages), and a baseline crawl when
one is given (``--baseline``).
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
a{color:#1a5;overflow-wrap:anywhere}td.u{min-width:10em}td.w{min-width:11em}.nw{white-space:nowrap}
"""
#: URLs longer than this are shown shortened in the middle (the link and its tooltip keep the whole URL).
URL_CHARS = 64


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _f(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _png(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def harvest_top(values: list[float]) -> float:
    """The harvest axis' upper end: a little above the curve's highest point, at most 1."""
    return min(1.0, max(0.05, 1.15 * max(values, default=0.0)))


def plots(data: ReportData) -> list[tuple[str, str]]:
    """``(caption, data URI)`` of the harvest and loss plots."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: list[tuple[str, str]] = []
    if not data.pages:
        return out
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        n = len(data.pages)
        x = range(1, n + 1)
        harvest, recent = data.harvest(), data.recent_harvest()
        fig, ax = plt.subplots(figsize=(8, 3.2))
        ax.plot(x, harvest, label="harvest so far (mean Pr(c*|v))")
        ax.plot(x, recent, label="last 50 pages", alpha=0.6)
        ax.set_ylim(0, harvest_top(harvest + recent))
        ax.set_xlim(1, max(n, 2))
        ax.set_xlabel("pages fetched")
        ax.set_ylabel("harvest")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(folder / "harvest.png", dpi=100)
        plt.close(fig)
        out.append(("Harvest: the critic's mean relevance of the pages fetched so far", _png(folder / "harvest.png")))

        how = "hand labels" if data.labels_used else f"the critic, Pr(c*|v) < {data.threshold:g}"
        fig, ax = plt.subplots(figsize=(8, 3.6))
        ax.plot(x, data.cumulative_loss(), label=f"this crawl ({data.meta.get('strategy', '?')})", linewidth=2)
        if data.baseline is not None:
            base = data.baseline.loss
            ax.plot(
                range(1, len(base) + 1), base, label=f"baseline: {data.baseline.path.name} ({data.baseline.strategy})"
            )
        longest = max(n, len(data.baseline.loss) if data.baseline else 0)
        ends = [1, longest]
        if data.labelled_on_topic is not None:
            share = data.labelled_on_topic
            ax.plot(
                ends,
                [(1 - share) * e for e in ends],
                linestyle="--",
                color="0.45",
                label=f"a crawl that ignores the topic ({100 * share:.1f}% of the labelled pages are on topic)",
            )
        ax.plot(ends, ends, linestyle=":", color="0.6", label="every page irrelevant (y = x)")
        ax.set_xlim(1, max(longest, 2))
        ax.set_ylim(0, longest)
        ax.set_xlabel("pages fetched")
        ax.set_ylabel("irrelevant pages")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
        fig.tight_layout()
        fig.savefig(folder / "loss.png", dpi=100)
        plt.close(fig)
        beside = [f"the baseline {data.baseline.path.name} ({data.baseline.strategy})"] if data.baseline else []
        if data.labelled_on_topic is not None:
            beside.append("a crawl that ignores the topic")
        beside.append("every page irrelevant (y = x)")
        caption = f"Loss: irrelevant pages fetched so far (by {how}), beside {', '.join(beside)}; lower is better"
        out.append((caption, _png(folder / "loss.png")))
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
    """A URL cell's content: the link, its text shortened to :data:`URL_CHARS` (the tooltip has it all)."""
    if not url:
        return "–"
    shown = url if len(url) <= URL_CHARS else f"{url[: URL_CHARS - 25]}…{url[-24:]}"
    return f"<a href='{_e(url)}' title='{_e(url)}'>{_e(shown)}</a>"


def _top_pages(data: ReportData) -> str:
    rows = [
        f"<tr><td class=n>{p.fetch_order}<td class=n>{p.relevance:.3f}<td>{_e(p.predicted_class)}"
        f"<td>{_e(p.title)}<td class=u>{_link(p.url)}"
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
        words = ", ".join(f"<span class=nw>{_e(f)} ({s:.2f})</span>" for f, s in c.features) or "–"
        rows.append(
            f"<tr><td class=n>{c.fetch_order}<td class=u>{_link(c.url)}<td class=n>{c.relevance:.3f}"
            f"<td class=n>{_f(c.frontier_score)}<td class=n>{_f(c.link_score)}<td class=u>{_link(c.parent)}"
            f"<td class=n>{_f(c.parent_relevance)}<td>{_e(c.anchor) or '–'}<td class=n>{_f(c.anchor_relevance)}"
            f"<td class=w>{words}"
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
