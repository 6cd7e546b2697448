"""Signals of the focused crawler (sent through ``crawler.signals``)."""

#: Ask the scheduler to re-score every waiting request.
#: Argument: ``scorer(payloads) -> priorities``, called with the parents' payloads
#: of the waiting requests (in batches: a durable store re-scores chunk by chunk);
#: ``None`` keeps a priority. The handler returns the number of priorities that changed.
rescore_frontier = object()

#: Sent by the pipeline after a page is labelled by the critic and stored.
#: Arguments: ``page`` (a :class:`focused.core.runtime.LabelledPage`).
page_labelled = object()

#: Sent by the pipeline when it opens the crawl database. Argument: ``db`` (a
#: :class:`focused.crawldb.CrawlDB`); the scheduler acknowledges a fetched URL
#: only once the database has committed its page.
crawldb_opened = object()
