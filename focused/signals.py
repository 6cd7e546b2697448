"""Signals of the focused crawler (sent through ``crawler.signals``)."""

#: Ask the scheduler to re-score every waiting request.
#: Arguments: ``scorer(request, payloads) -> int | None``. The handler returns
#: the number of priorities that changed.
rescore_frontier = object()

#: Sent by the pipeline after a page is labelled by the critic and stored.
#: Arguments: ``page`` (a :class:`focused.runtime.LabelledPage`).
page_labelled = object()
