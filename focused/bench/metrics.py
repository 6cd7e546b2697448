"""Benchmark figures computed from a crawl database and ground-truth labels.

* **true harvest @k**: fraction of the first k fetched pages whose hand label
  is on topic, each page counted once (a page fetched again under another of its
  URLs, ``dir/`` and ``dir/index.html``, is a wasted fetch); **loss @k** = 1 − true
  harvest (the fraction thrown away).
* **critic harvest @k**: the paper's (1/k) Σ Pr(c*|v) by the crawl's critic.
* **recall @k**: fraction of the on-topic pages reachable from the seeds in the
  stored web that are among the first k fetched.
* **gap closure** G = (h − h_baseline) / (h_oracle − h_baseline).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from lxml import html as lxml_html

from focused.crawldb import iter_pages
from focused.learning.critic.topics import Topic
from focused.replay.labels import first_fetches_on_topic


@dataclass(frozen=True)
class Curve:
    """Per-page outcomes of one crawl, in fetch order."""

    urls: list[str]
    true_relevant: list[bool]
    critic_relevance: list[float]

    def _k(self, k: int) -> int:
        return min(k, len(self.urls))

    def true_harvest_at(self, k: int) -> float:
        n = self._k(k)
        return sum(self.true_relevant[:n]) / n if n else 0.0

    def critic_harvest_at(self, k: int) -> float:
        n = self._k(k)
        return sum(self.critic_relevance[:n]) / n if n else 0.0

    def loss_at(self, k: int) -> float:
        return 1.0 - self.true_harvest_at(k)

    def recall_at(self, k: int, targets: set[str], normalize: Callable[[str], str]) -> float:
        if not targets:
            return 0.0
        fetched = {normalize(u) for u in self.urls[: self._k(k)]}
        return len(fetched & targets) / len(targets)

    def cumulative_loss(self) -> list[int]:
        """Irrelevant pages fetched after each page (for the loss plot)."""
        out, lost = [], 0
        for relevant in self.true_relevant:
            lost += not relevant
            out.append(lost)
        return out


def crawl_curve(db: str | Path, labels: dict[str, str], topic: Topic) -> Curve:
    """Read a crawl database and judge each page against the labels (a page fetched again under
    another of its URLs counts as a wasted fetch: :func:`~focused.core.runtime.first_fetches_on_topic`)."""
    pages = list(iter_pages(db))
    urls = [page.url for page in pages]
    truth = first_fetches_on_topic(urls, labels, topic.matches)
    return Curve(urls, truth, [page.relevance for page in pages])


def gap_closure(h: float, h_baseline: float, h_oracle: float) -> float | None:
    """G = (h − h_b) / (h_o − h_b); ``None`` when the oracle does not beat the baseline."""
    span = h_oracle - h_baseline
    if span <= 1e-9:
        return None
    return (h - h_baseline) / span


def outlinks(url: str, body: bytes) -> list[str]:
    """http(s) links of a stored page (a/area hrefs resolved, fragments dropped)."""
    try:
        doc = lxml_html.fromstring(body, base_url=url)
    except (ValueError, lxml_html.etree.ParserError):
        return []
    doc.make_links_absolute(url, resolve_base_href=True, handle_failures="ignore")
    links = []
    for element, attribute, link, _ in doc.iterlinks():
        if attribute == "href" and element.tag in ("a", "area"):
            link = link.split("#", 1)[0]
            if link.startswith(("http://", "https://")):
                links.append(link)
    return links


def reachable(store: object, seeds: Iterable[str], *, max_pages: int = 1_000_000) -> set[str]:
    """Normalised URLs of stored pages reachable from the seeds (following redirects).

    ``store`` is a :class:`focused.replay.store.ReplayStore`.
    """
    from focused.replay.urlnorm import normalize_url

    seen: set[str] = set()
    found: set[str] = set()
    queue = deque(seeds)
    while queue and len(found) < max_pages:
        url = queue.popleft()
        key = normalize_url(url)
        if key in seen:
            continue
        seen.add(key)
        hops = 0
        lookup = store.resolve(url)  # type: ignore[attr-defined]
        while lookup.redirect and hops < 5:
            url, hops = lookup.redirect, hops + 1
            seen.add(normalize_url(url))
            lookup = store.resolve(url)  # type: ignore[attr-defined]
        response = lookup.response
        if response is None:
            continue
        if response.status in (301, 302, 303, 307, 308):
            location = response.header("location")
            if location:
                queue.append(location)
            continue
        found.add(normalize_url(response.url))
        queue.extend(outlinks(url, response.body))
    return found


def canonical_url(store: object, url: str) -> str:
    """The normalised URL of the stored page ``url`` resolves to (itself if not stored)."""
    from focused.replay.urlnorm import normalize_url

    lookup = store.resolve(url)  # type: ignore[attr-defined]
    if lookup.response is not None:
        return normalize_url(lookup.response.url)
    return normalize_url(url)
