"""Studies run by the benchmark commands, apart from the harness that runs crawls.

- ``ceiling``: How far learning from the critic can go: best-first crawls simulated on a track's link graph.
- ``distributed``: The distributed-crawl benchmark: workers sharing one Redis frontier (``focused bench-distributed``).
- ``features``: The paper's feature studies on WebKB: DOM window size (Fig. 6) and offsets vs plain text (Fig. 7).
- ``features_report``: The feature studies' reports: ``features.md`` (tables), ``features.png`` (Fig. 6-7) and
  ``features.json``.
- ``frontier_store``: The frontier store benchmark: memory vs SQLite in real crawls, re-scoring, kill and resume.
- ``intelligent_reuse``: Intelligent crawling: reusing K across crawls, and a predicate vs the critic, on the WebKB
  track.
- ``linkcorpus``: The link corpus of the feature studies: every link between two stored HTML pages, with its ⟨t, d⟩
  features.
- ``linkmodel``: A cross-case link model for the ceiling study: what a crawler could learn offline about links.
- ``markines``: ``focused bench-markines``: the Markines strategies on the benchmark tracks.
- ``rescoring``: Re-scoring a large synthetic frontier through the scheduler, on the memory and the SQLite store.
- ``simcrawl``: Crawls simulated on a link graph: pages ``0..n-1`` and links ``src[i] -> dst[i]``, no HTTP.
- ``stages``: Where a page's CPU goes in the default pipeline, and what a waiting URL costs in memory.
- ``throughput``: ``focused bench-speed``: the focused crawler against plain Scrapy on a web where every link is a page.
- ``traps``: ``focused bench-traps``: how much of a page budget crawler traps take, with and without the defences.
- ``trapweb``: The crawler-trap probe: an on-topic site next to a calendar trap, session-id URLs and a growing path.
"""
