"""Speed of the apprentice's parts, measured on real pages (no crawl, no network).

* feature extraction: ``extract_link_features`` per page (ms);
* the per-page cost the apprentice adds to the pipeline: the critic's work on a
  page (visible text + verdict) with and without link features + prediction;
* retraining on 10,000 link instances;
* re-scoring 100,000 waiting URLs through the scheduler's frontier.

Figures are wall-clock on this machine; they are reported, never asserted.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from focused.frontier.heap import Frontier
from focused.learning.apprentice.features import compact_many, extract_link_features
from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.online import OnlineApprentice
from focused.learning.apprentice.payload import LinkPayload
from focused.learning.critic.load import load_critic
from focused.page.text import html_to_text
from focused.replay.store import ReplayStore


def _ms(seconds: float) -> float:
    return round(1000 * seconds, 3)


def speed_study(store: ReplayStore, model: Path, *, pages: int = 1000, topic: str = "course") -> dict[str, Any]:
    """Run the micro-benchmarks on up to ``pages`` stored HTML pages (2-60 KB) of a replay store."""
    critic = load_critic(model)
    target = critic.resolve_topic(topic)
    docs = []
    for response in store.responses():
        content_type = (response.header("content-type") or "text/html").lower()
        if response.status == 200 and "html" in content_type and 2_000 <= len(response.body) <= 60_000:
            docs.append((response.url, response.body.decode("latin-1")))
        if len(docs) >= pages:
            break

    extract, critic_cost, apprentice_cost, all_links = [], [], [], []
    # the crawl's default apprentice: <t,d> features plus the critic's views of each link
    learner = Apprentice(min_instances=1, binning="equal-prob", n_side=2)
    online = OnlineApprentice(
        learner, d_max=5, snippet_critic=lambda texts, urls: critic.snippet_relevance(texts, target, urls)
    )
    rng = np.random.default_rng(0)
    for url, html in docs:  # a first pass to train a model to score with
        page = extract_link_features(html, url, d_max=5)
        all_links.extend(compact_many(page.features, learner.n_features))
    all_side = rng.normal(size=(len(all_links), 2))
    learner.add(all_links, rng.random(len(all_links)), all_side)
    online.install(learner.fit())
    for url, html in docs:
        t0 = time.perf_counter()
        verdict = critic.judge(html_to_text(html), target, url=url)
        t1 = time.perf_counter()
        page = extract_link_features(html, url, d_max=5)
        t2 = time.perf_counter()
        payloads = online.link_features(url, html, verdict.relevance, verdict.top_classes, page.urls)
        online.score(payloads)
        t3 = time.perf_counter()
        critic_cost.append(t1 - t0)
        extract.append(t2 - t1)
        apprentice_cost.append(t3 - t2)

    # retrain on 10,000 real link instances
    n = min(10_000, len(all_links))
    sample = [all_links[i] for i in rng.choice(len(all_links), size=n, replace=False)]
    fresh = Apprentice(min_instances=1, binning="equal-prob", n_side=2)
    fresh.add(sample, rng.random(n), all_side[:n])
    t0 = time.perf_counter()
    fresh.fit()
    retrain = time.perf_counter() - t0

    # re-score 100,000 waiting URLs (one parent each, real link features)
    frontier: Frontier[str] = Frontier()
    for i in range(100_000):
        j = i % len(all_links)
        payload = LinkPayload(all_links[j], all_side[j].astype(np.float32))
        frontier.push(f"k{i}", f"http://x.test/{i}", int(rng.integers(0, 1_000_000)), payload)
    t0 = time.perf_counter()
    changed = frontier.rescore(lambda entries: online.rescore([e.payloads for e in entries]))
    rescore = time.perf_counter() - t0

    median_critic = statistics.median(critic_cost)
    median_apprentice = statistics.median(apprentice_cost)
    return {
        "pages": len(docs),
        "mean_page_kb": round(sum(len(h) for _, h in docs) / len(docs) / 1024, 1),
        "mean_links_per_page": round(len(all_links) / len(docs), 1),
        "feature_extraction_ms": {
            "median": _ms(statistics.median(extract)),
            "p90": _ms(float(np.percentile(extract, 90))),
        },
        "critic_per_page_ms": _ms(median_critic),
        "apprentice_per_page_ms": _ms(median_apprentice),
        "apprentice_overhead_vs_critic": round(median_apprentice / median_critic, 3),
        "retrain_10k_s": round(retrain, 3),
        "retrain_instances": n,
        "rescore_100k_s": round(rescore, 3),
        "rescore_changed": changed,
    }


def markdown(result: dict[str, Any]) -> str:
    fe = result["feature_extraction_ms"]
    return "\n".join(
        [
            f"Speed on {result['pages']} WebKB pages (mean {result['mean_page_kb']} KB, "
            f"{result['mean_links_per_page']} links):",
            "",
            "| measure | value |",
            "|---|---|",
            f"| feature extraction per page (median / p90) | {fe['median']} / {fe['p90']} ms |",
            f"| critic per page (text + verdict) | {result['critic_per_page_ms']} ms |",
            f"| apprentice per page (features + prediction) | {result['apprentice_per_page_ms']} ms |",
            f"| retrain on {result['retrain_instances']:,} instances | {result['retrain_10k_s']} s |",
            f"| re-score 100,000 waiting URLs | {result['rescore_100k_s']} s |",
            "",
            "The apprentice's share of a crawl's per-page cost is lower than apprentice/critic suggests: the "
            "throughput table compares whole crawls.",
        ]
    )
