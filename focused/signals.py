"""Signals of the focused crawler (sent through ``crawler.signals``)."""

#: Ask the scheduler to re-score every waiting request.
#: Argument: ``scorer(requests, payloads) -> priorities``, called once with all
#: waiting requests and their parents' payloads; ``None`` keeps a priority.
#: The handler returns the number of priorities that changed.
rescore_frontier = object()

#: Sent by the pipeline after a page is labelled by the critic and stored.
#: Arguments: ``page`` (a :class:`focused.runtime.LabelledPage`).
page_labelled = object()
