"""The crawl engine of focused: the scheduler (the frontier), per-crawl state and the request types it stores.

- ``enginestate``: What the scheduler reads of Scrapy's engine: the requests it holds and the pages it has yet to score.
- ``fingerprints``: Request fingerprints by URL: one canonicalization and hash per distinct link target.
- ``runtime``: The per-crawl state shared by the focused crawler's Scrapy components.
- ``scheduler``: A Scrapy scheduler whose frontier is globally best-first, re-scorable and durable.
- ``trapstate``: What a crawl has learned about crawler traps, shared by the trap components of one crawl.
"""
