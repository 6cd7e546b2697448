"""The item the focused spider yields for every fetched page."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PageItem:
    """A fetched page, labelled by :class:`focused.pipelines.CriticPipeline`.

    The spider fills the crawl fields; the pipeline adds the critic's verdict
    and the fetch order, and drops the page's text before the item reaches
    feed exports.
    """

    url: str
    status: int
    depth: int
    parent: str | None
    content_type: str
    title: str = ""
    links: list[str] = field(default_factory=list)
    redirect_urls: list[str] = field(default_factory=list)
    text: str | None = None
    html: str | None = None
    fetch_order: int | None = None
    relevance: float | None = None
    predicted_class: str | None = None
    top_classes: list[str] = field(default_factory=list)
