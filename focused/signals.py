"""Signals of the focused crawler (sent through ``crawler.signals``), and what they carry."""

from __future__ import annotations

from dataclasses import dataclass

#: Ask the scheduler to re-score every waiting request.
#: Argument: ``scorer(payloads) -> priorities``, called with the parents' payloads
#: of the waiting requests (in batches: a durable store re-scores chunk by chunk);
#: ``None`` keeps a priority. The handler returns the number of priorities that changed.
#: Optional ``background(deferred)``: re-score off the reactor thread instead; the handler returns
#: ``None`` and hands ``background`` a Deferred that fires with that number
#: (:meth:`focused.core.scheduler.FocusedScheduler.rescore_background`; ``scorer`` then runs in a thread).
rescore_frontier = object()

#: Ask the scheduler to hand out no request until a Deferred fires (the apprentice's retrain with
#: ``FOCUSED_APPRENTICE_WAIT``). Arguments: ``until`` (a :class:`~twisted.internet.defer.Deferred`) and
#: optionally ``reason`` (one of :data:`focused.core.holds.REASONS`, default ``training``: the stat
#: ``focused/frontier/held_back_<reason>`` counts the requests it held back).
hold_frontier = object()

#: Sent by the pipeline after a page is labelled by the critic and stored.
#: Arguments: ``page`` (a :class:`LabelledPage`).
page_labelled = object()

#: Sent by the pipeline when it opens the crawl database. Argument: ``db`` (a
#: :class:`focused.crawldb.CrawlDB`); the scheduler acknowledges a fetched URL
#: only once the database has committed its page.
crawldb_opened = object()


@dataclass(frozen=True)
class LabelledPage:
    """What :data:`focused.signals.page_labelled` carries."""

    url: str
    fetch_order: int
    relevance: float
    predicted_class: str
    relevant: bool
    aliases: tuple[str, ...] = ()  # URLs that redirected to this page
    pages: int = 0  # distinct pages labelled so far, this one included (all runs of a resumed crawl)
    harvest: float = 0.0  # mean relevance of those pages
    text: str = ""  # the page's visible text (for learners that read it)
    links: tuple[str, ...] = ()  # its outlinks
