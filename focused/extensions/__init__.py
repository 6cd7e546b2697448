"""The crawler's Scrapy extensions, one per module.

- ``apprentice/``: The apprentice's feedback extension: retraining from the critic's verdicts, in one process or
  shared over Redis.
- ``choicelog``: The extension that records why each page was fetched, for ``focused report``.
- ``gctuning``: Garbage collection tuned for a long crawl: start-up objects frozen, the youngest generation collected
  less often.
- ``harvest``: Crawl progress: harvest and loss in the log every N pages, and the page budget.
- ``intelligent``: The extension that keeps the intelligent crawler's statistics K learning (Aggarwal et al. 2001).
- ``jobdir``: The extension that refuses a job directory that cannot be resumed, before the crawl starts.
- ``reactorlag``: How long the reactor was kept from its timers: the longest lag of a 50 ms tick, as a stat.
- ``statsfile``: The extension that writes a crawl's final stats as JSON to ``FOCUSED_STATS_FILE``, for scripts.
- ``summary``: The closing summary of a crawl: the few lines a person reads when ``scrapy crawl`` ends.
- ``warcwriter``: The extension that writes the crawl's pages to WARC files (``FOCUSED_WARC``): a crawl's corpus.
"""
