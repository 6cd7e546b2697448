"""Where a page's CPU goes in the default pipeline, and what a waiting URL costs in memory.

:func:`stage_costs` runs the pipeline's stages, as the crawl runs them, on the
replay's pages in this process and times each with ``time.process_time``;
:func:`memory_study` pushes waiting URLs through a real
:class:`~focused.core.scheduler.FocusedScheduler` in a fresh subprocess
(``python -m focused.bench.studies.stages memory N L``) and reports the growth of its
resident set per URL and its peak (``/proc/self/status``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

STAGES = (
    "parse (tree, leaves, links, visible text)",
    "words (the text's tokens, numbered once for the fingerprint and the critic)",
    "near-duplicate fingerprint",
    "critic",
    "link features",
    "anchor views",
    "apprentice prediction",
    "scheduling",
    "database",
)


def stage_costs(store: Any, model: Path, topic: str, *, pages: int = 1000) -> dict[str, Any]:
    """CPU ms per page of each stage on up to ``pages`` 200 pages of ``store`` (module docstring)."""
    from scrapy.http import HtmlResponse
    from scrapy.utils.request import RequestFingerprinter

    from focused.core.fingerprints import UrlFingerprints
    from focused.crawldb import HTML_LEVEL, CrawlDB
    from focused.frontier.linkrequest import LinkRequest
    from focused.frontier.memory import MemoryStore
    from focused.frontier.payloads import encode_payloads
    from focused.frontier.store import Push
    from focused.learning.apprentice.features import compact_many, extract_link_features
    from focused.learning.apprentice.learner import Apprentice
    from focused.learning.apprentice.linkids import page_link_ids, with_extra
    from focused.learning.apprentice.model import critic_views
    from focused.learning.apprentice.online import OnlineApprentice
    from focused.learning.apprentice.payload import LinkPayload, page_key
    from focused.learning.critic.load import load_critic
    from focused.learning.critic.snippet import make_snippet_critic
    from focused.page.parse import _parse, _read_tree, prepare
    from focused.page.parsed import ParsedPage
    from focused.page.simhash import simhash
    from focused.page.words import page_tokens
    from focused.spiders.focused import FocusedSpider

    critic = load_critic(model)
    target = critic.resolve_topic(topic)
    snippet = make_snippet_critic(critic, target)
    learner = Apprentice(min_instances=1, binning="equal-prob", n_side=2)
    online = OnlineApprentice(learner, d_max=5, snippet_critic=snippet)
    spider = FocusedSpider.__new__(FocusedSpider)
    docs = []
    for response in store.responses():
        if response.status == 200:
            docs.append(HtmlResponse(response.url, body=response.body, encoding="utf-8"))
        if len(docs) >= pages:
            break
    rng = np.random.default_rng(0)
    warm = [p for r in docs[:200] for p in compact_many(extract_link_features(r.text, r.url).features)]
    learner.add(warm, rng.random(len(warm)), rng.normal(size=(len(warm), 2)))
    online.install(learner.fit())
    fingerprint = UrlFingerprints(RequestFingerprinter())
    frontier = MemoryStore()
    no_extra = np.zeros(0, dtype=np.int32)
    totals = dict.fromkeys(STAGES, 0.0)
    links_total = 0
    clock = time.process_time
    with tempfile.TemporaryDirectory() as tmp:
        db = CrawlDB(Path(tmp) / "stages.sqlite", store_html=True)
        for order, response in enumerate(docs):
            html = response.text
            t0 = clock()
            prepared, _ = prepare(html)
            root = _parse(prepared)
            parsed = ParsedPage()
            _read_tree(root, parsed)
            links, _ = spider._take_links(response, parsed)
            t1 = clock()
            page_tokens(parsed.text, ())  # the regex's words numbered; the fingerprint and the critic read them
            t2 = clock()
            simhash(parsed.text)
            t3 = clock()
            verdict = critic.judge(parsed.text, target, url=response.url)
            t4 = clock()
            targets, target_ids, target_anchors = page_link_ids(parsed, response.url, 5, learner.n_features)
            by_key = {page_key(u): i for i, u in reversed(list(enumerate(targets)))}
            found = [by_key.get(page_key(link)) for link in links]
            ids = with_extra([target_ids[i] if i is not None else None for i in found], no_extra)
            t5 = clock()
            anchors = [target_anchors[i] if i is not None else "" for i in found]
            side = critic_views(verdict.relevance, snippet(anchors, links)).astype(np.float32)
            payloads = [LinkPayload(x, s) for x, s in zip(ids, side, strict=True)]
            t6 = clock()
            scores = online.score(payloads) or []
            t7 = clock()
            pushes = []
            blobs = encode_payloads(payloads)  # a page's payloads at once, as the link scoring middleware does
            for url, score, blob in zip(links, scores, blobs, strict=True):
                request = LinkRequest(url, meta={"focused_parent": response.url}, priority=int(score * 1e6))
                pushes.append(Push(fingerprint(request).hex(), request, request.priority, blob))
            frontier.push_many(pushes)
            t8 = clock()
            db.add_page(
                url=response.url, fetch_order=order + 1, parent=None, depth=0, status=200,
                content_type="text/html", title=parsed.title, relevance=verdict.relevance,
                predicted_class=verdict.predicted_class, top_classes=verdict.top_classes, links=links, html=html,
            )  # fmt: skip
            zlib.compress(html.encode("utf-8"), HTML_LEVEL)  # what the writer thread does with it
            t9 = clock()
            marks = (t0, t1, t2, t3, t4, t5, t6, t7, t8, t9)
            for k, stage in enumerate(STAGES):
                totals[stage] += marks[k + 1] - marks[k]
            links_total += len(links)
        db.close()
    n = len(docs)
    ms = {stage: round(1000 * total / n, 2) for stage, total in totals.items()}
    mean_ids = float(np.mean([len(p.ids) for p in payloads])) if payloads else 0.0
    return {
        "pages": n,
        "links_per_page": round(links_total / n, 1),
        "ms_per_page": ms,
        "total_ms": round(sum(ms.values()), 2),
        "mean_payload_ids": round(mean_ids, 1),
    }


def memory_study(waiting: int = 100_000, payload_ids: int = 100) -> dict[str, Any]:
    """Memory of ``waiting`` URLs in the scheduler's memory store, measured in a fresh subprocess."""
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="focused.settings")
    out = subprocess.run(
        [sys.executable, "-m", "focused.bench.studies.stages", "memory", str(waiting), str(payload_ids)],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def _memory_child(waiting: int, payload_ids: int) -> dict[str, Any]:
    from scrapy.utils.test import get_crawler

    from focused.bench.proc import vm_hwm_kb
    from focused.bench.wikiweb import MODEL
    from focused.core.scheduler import PAYLOAD_META_KEY, FocusedScheduler
    from focused.frontier.linkrequest import LinkRequest
    from focused.learning.apprentice.payload import LinkPayload
    from focused.learning.critic.load import load_critic
    from focused.spiders.focused import PARENT_META_KEY, FocusedSpider

    load_critic(MODEL)  # the crawl holds its critic too
    crawler = get_crawler(FocusedSpider, {"FOCUSED_FRONTIER_STORE": "memory", "FOCUSED_FRONTIER_MAX_SIZE": 0})
    scheduler = FocusedScheduler.from_crawler(crawler)
    scheduler.open(FocusedSpider.__new__(FocusedSpider))
    baseline, before = vm_hwm_kb(), _vm_rss_kb()
    rng = np.random.default_rng(0)
    for i in range(waiting):
        ids = np.sort(rng.integers(0, 2**20, size=payload_ids)).astype(np.int32)
        payload = LinkPayload(ids, rng.random(2).astype(np.float32))
        parent = f"http://wikischools.test/wiki/Parent_{i // 50}"
        meta = {PARENT_META_KEY: parent, PAYLOAD_META_KEY: payload}
        url = f"http://wikischools.test/wiki/Article_number_{i}"
        scheduler.enqueue_request(LinkRequest(url, meta=meta, priority=i))
    used = 1024 * (_vm_rss_kb() - before)
    peak = vm_hwm_kb()
    return {
        "waiting": len(scheduler),
        "parents": 1,
        "payload_ids": payload_ids,
        "bytes_per_waiting_url": round(used / max(1, len(scheduler))),
        "baseline_rss_mb": round(baseline / 1024, 1),
        "peak_rss_mb": round(peak / 1024, 1),
    }


def _vm_rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "memory":
        print(json.dumps(_memory_child(int(sys.argv[2]), int(sys.argv[3]))))
    else:
        sys.exit("usage: python -m focused.bench.studies.stages memory WAITING PAYLOAD_IDS")
