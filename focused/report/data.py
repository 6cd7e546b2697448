"""What ``focused report`` shows, read from one crawl database (Scrapy-free).

* the curves: harvest (mean Pr(c*|v) so far, and over the last pages) and
  loss (irrelevant pages so far: by the critic's verdict, or by hand labels),
  beside a baseline crawl's loss judged the same way when one is given, and,
  with hand labels, the loss of a crawl that ignores the topic;
* the most relevant pages, pages per host;
* what was skipped or refused, and why (the crawl's final stats, stored in the
  database when the crawl closed);
* why a few pages were fetched: the frontier priority of the page when it was
  popped and its link's score (table ``choices``), the critic's views of the
  link (its page Pr(c*|u), its anchor text Pr(c*|anchor)) and the words around
  the link that the critic finds most on topic, recomputed from the parent's
  stored HTML.
"""

from __future__ import annotations

import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from focused.crawldb import PageRecord, iter_pages, open_readonly, read_choices, read_meta
from focused.priority import SEED_PRIORITY, priority_to_score

#: Stats that say why something was not fetched or not kept (prefix -> meaning); others are not shown.
REASONS = {
    "focused/skipped/": "skipped by the spider",
    "focused/refused/": "refused by policy",
    "focused/dropped/": "dropped (caps, traps, duplicates)",
    "focused/ignored_responses": "responses with an error status (404...), not stored",
    "httperror/response_ignored_status_count/": "ignored responses of HTTP status",
    "focused/restricted/dropped": "links outside the pages of FOCUSED_RESTRICT_TO",
    "focused/frontier/merged": "links to URLs already waiting (their priorities merged)",
    "dupefilter/filtered": "links to URLs already seen",
    "robotstxt/forbidden": "forbidden by robots.txt",
    "offsite/filtered": "offsite requests",
    "downloader/exception_type_count/": "download errors",
    "retry/max_reached": "given up after retries",
    "focused/db/error": "crawl database writer error",
}
#: Scrapy's count of ignored responses per status: shown as the breakdown of ``focused/ignored_responses``.
IGNORED_STATUS = "httperror/response_ignored_status_count/"
#: Counted again under the stat of what refused the request (robots.txt, policy): not a download error.
NOT_REASONS = frozenset({"downloader/exception_type_count/scrapy.exceptions.IgnoreRequest"})


@dataclass(frozen=True)
class Choice:
    """Why one page was fetched."""

    url: str
    fetch_order: int
    relevance: float
    parent: str | None
    priority: int | None
    link_score: float | None
    parent_relevance: float | None = None
    anchor: str = ""
    anchor_relevance: float | None = None
    #: ``(feature, Pr(c*|word))`` for the words near the link, strongest first (``word@offset``)
    features: list[tuple[str, float]] = field(default_factory=list)

    @property
    def seed(self) -> bool:
        return self.priority is not None and self.priority >= SEED_PRIORITY

    @property
    def frontier_score(self) -> float | None:
        return None if self.priority is None or self.seed else priority_to_score(self.priority)


@dataclass(frozen=True)
class Baseline:
    """Another crawl's loss curve, judged as this crawl's is (same labels, or same threshold on its critic)."""

    path: Path
    strategy: str
    loss: list[int]


def cumulative(relevant: list[bool]) -> list[int]:
    """Irrelevant pages after each page."""
    out, lost = [], 0
    for ok in relevant:
        lost += not ok
        out.append(lost)
    return out


@dataclass
class ReportData:
    path: Path
    meta: dict[str, Any]
    pages: list[PageRecord]
    threshold: float
    labels_used: bool = False
    true_relevant: list[bool] | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    choices: list[Choice] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    baseline: Baseline | None = None
    #: with hand labels: the share of the labelled pages that are on topic (a crawl ignoring the topic finds as many)
    labelled_on_topic: float | None = None

    def harvest(self) -> list[float]:
        out, total = [], 0.0
        for i, page in enumerate(self.pages, 1):
            total += page.relevance
            out.append(total / i)
        return out

    def recent_harvest(self, window: int = 50) -> list[float]:
        values = [p.relevance for p in self.pages]
        out, total = [], 0.0
        for i, v in enumerate(values):
            total += v - (values[i - window] if i >= window else 0.0)
            out.append(total / min(i + 1, window))
        return out

    def cumulative_loss(self) -> list[int]:
        """Irrelevant pages after each page: by the labels when given, else by the critic's verdict."""
        return cumulative(self.true_relevant or [p.relevance >= self.threshold for p in self.pages])

    def top_pages(self, n: int = 20) -> list[PageRecord]:
        return sorted(self.pages, key=lambda p: (-p.relevance, p.fetch_order))[:n]

    def hosts(self) -> list[tuple[str, int, int]]:
        """``(host, pages, relevant pages)``, most pages first."""
        pages = Counter(urlsplit(p.url).hostname or "?" for p in self.pages)
        relevant = Counter(urlsplit(p.url).hostname or "?" for p in self.pages if p.relevance >= self.threshold)
        return [(h, n, relevant[h]) for h, n in pages.most_common()]

    def reasons(self) -> list[tuple[str, str, Any]]:
        """``(stat, meaning, value)`` for the stats that say what was skipped or refused, each count once."""
        statuses = {k.removeprefix(IGNORED_STATUS): v for k, v in self.stats.items() if k.startswith(IGNORED_STATUS)}
        folded = "focused/ignored_responses" in self.stats
        rows = []
        for key in sorted(self.stats):
            if key in NOT_REASONS or (folded and key.startswith(IGNORED_STATUS)):
                continue
            for prefix, meaning in REASONS.items():
                if key == prefix or (prefix.endswith("/") and key.startswith(prefix)):
                    if key == "focused/ignored_responses" and statuses:
                        meaning += " (" + ", ".join(f"HTTP {s}: {n}" for s, n in sorted(statuses.items())) + ")"
                    rows.append((key, meaning, self.stats[key]))
                    break
        return rows


def load_report(
    path: str | Path,
    *,
    threshold: float = 0.5,
    labels: Path | None = None,
    explain: int = 6,
    baseline: Path | None = None,
) -> ReportData:
    """Read the crawl database ``path`` (and ``baseline``, another crawl to compare it with);
    :class:`~focused.crawldb.CrawlDBError` if one is not a crawl database."""
    path = Path(path)
    meta = read_meta(path)
    pages = list(iter_pages(path))
    data = ReportData(path, meta, pages, threshold, stats=dict(meta.get("stats") or {}))
    if not data.stats:
        data.notes.append("this crawl stored no final stats (it was written by an earlier version, or was killed)")
    critic, topic = _critic(meta, data.notes)
    table: dict[str, str] | None = None
    if labels is not None:
        from focused.replay.labels import read_labels

        table, _ = read_labels(labels)
        prefixes = tuple(meta.get("topic_classes") or [meta.get("topic", "")])
        on_topic = topic.matches if topic is not None else prefixes.__contains__
        if table:
            data.labelled_on_topic = sum(map(on_topic, table.values())) / len(table)

    def judge(crawled: list[PageRecord]) -> list[bool]:
        """Relevant or not: by the labels (distinct pages on topic) when given, else by the critic's verdict."""
        if table is None:
            return [p.relevance >= threshold for p in crawled]
        from focused.replay.labels import first_fetches_on_topic

        return first_fetches_on_topic([p.url for p in crawled], table, on_topic)

    if table is not None:
        data.true_relevant = judge(pages)
        data.labels_used = True
    if baseline is not None:
        other = read_meta(baseline)
        if other.get("topic") != meta.get("topic"):
            data.notes.append(
                f"the baseline {baseline} crawled topic {other.get('topic')!r}, not {meta.get('topic')!r}"
            )
        strategy = str(other.get("strategy") or "baseline")
        data.baseline = Baseline(baseline, strategy, cumulative(judge(list(iter_pages(baseline)))))
    data.choices = _choices(path, pages, critic, topic, explain)
    return data


def _critic(meta: dict[str, Any], notes: list[str]) -> tuple[Any, Any]:
    model = meta.get("critic_model")
    if not model:
        return None, None
    from focused.learning.critic.load import load_critic
    from focused.learning.modelfile import ModelFileError
    from focused.paths import load_model

    try:
        critic, _ = load_model(model, load_critic)
        return critic, critic.resolve_topic(meta.get("topic", ""))
    except (ModelFileError, ValueError) as exc:
        notes.append(f"the critic {model} could not be read ({exc}): the links' views and words are not shown")
        return None, None


def _choices(path: Path, pages: list[PageRecord], critic: Any, topic: Any, n: int) -> list[Choice]:
    """The ``n`` most relevant pages fetched through a link (not seeds), with why they were fetched."""
    recorded = read_choices(path)
    by_url = {p.url: p for p in pages}
    linked = [p for p in pages if p.parent and recorded.get(p.url, (0,))[0] < SEED_PRIORITY]
    picked = sorted(linked, key=lambda p: (-p.relevance, p.fetch_order))[:n]
    out = []
    for page in sorted(picked, key=lambda p: p.fetch_order):
        priority, link_score = recorded.get(page.url, (None, None))
        parent = by_url.get(page.parent or "")
        choice = Choice(
            page.url,
            page.fetch_order,
            page.relevance,
            page.parent,
            priority,
            link_score,
            parent_relevance=parent.relevance if parent else None,
        )
        out.append(_explain(path, choice, critic, topic) if parent is not None else choice)
    return out


def _explain(path: Path, choice: Choice, critic: Any, topic: Any, n_features: int = 6) -> Choice:
    """Add the link's anchor and its strongest context words (from the parent's stored HTML)."""
    from focused.learning.apprentice.features import extract_link_features
    from focused.settings.defaults import FOCUSED_APPRENTICE_DMAX

    html = _html(path, choice.parent or "")
    if not html:
        return choice
    links = extract_link_features(html, choice.parent or "", d_max=FOCUSED_APPRENTICE_DMAX)
    if choice.url not in links.urls:
        return choice
    i = links.urls.index(choice.url)
    anchor = links.anchors[i]
    features = links.features[i]
    anchor_relevance = None
    strongest: list[tuple[str, float]] = []
    if critic is not None and topic is not None:
        if anchor:
            anchor_relevance = float(critic.snippet_relevance([anchor], topic, [choice.url])[0])
        nearest: dict[str, str] = {}  # each word once, at its offset nearest the link
        for feature in features:
            word, _, d = feature.rpartition("@")
            if word not in nearest or abs(int(d)) < abs(int(nearest[word].rpartition("@")[2])):
                nearest[word] = feature
        if nearest:
            scores = critic.snippet_relevance(list(nearest), topic)
            ranked = zip(nearest.values(), map(float, scores), strict=True)
            strongest = sorted(ranked, key=lambda fs: -fs[1])[:n_features]
    return Choice(**{**choice.__dict__, "anchor": anchor, "anchor_relevance": anchor_relevance, "features": strongest})


def _html(path: Path, url: str) -> str:
    conn = open_readonly(path)
    try:
        row = conn.execute("SELECT html FROM pages WHERE url = ?", (url,)).fetchone()
    finally:
        conn.close()
    if not row or not row[0]:
        return ""
    return zlib.decompress(row[0]).decode("utf-8", errors="replace")
