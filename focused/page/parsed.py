"""What one parse of a page gives (:class:`ParsedPage`), and the element classes both parsers share.

Shared by :mod:`focused.page.parse` (which parses with libxml2) and :mod:`focused.page.stream`
(the streaming fallback for deeply nested pages).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["BLOCK", "BREAK", "LEAF_SKIP", "LINK_TAGS", "TEXT_SKIP", "ParsedPage", "normalize_text"]

#: Elements whose content is never shown to a reader (the visible text skips them).
TEXT_SKIP = frozenset({"script", "style", "noscript", "template"})
#: Elements skipped by the DOM leaf numbering of link features.
LEAF_SKIP = frozenset({"script", "style", "template"})
LINK_TAGS = frozenset({"a", "area"})

#: Elements that start a new line of text (HTML block-level and table parts).
BLOCK = frozenset(
    """
    address article aside blockquote body br caption center dd details dialog dir div dl dt fieldset
    figcaption figure footer form frame frameset h1 h2 h3 h4 h5 h6 head header hr html iframe legend li
    main menu nav ol option p pre section select summary table tbody td textarea tfoot th thead title tr ul
    """.split()
)

BREAK = "\x00"  # marks a block boundary while collecting; never in parsed text (C0 controls are made spaces)


class PageTooSlow(Exception):
    """Reading a page took longer than its time budget (``FOCUSED_PAGE_TIME_BUDGET``): the page is skipped."""


@dataclass
class ParsedPage:
    """What one parse of a page gives (see :mod:`focused.page.parse`).

    ``leaves`` are the DOM leaves of :mod:`focused.learning.apprentice.features` in
    document order ('' for an empty leaf); ``links`` every ``<a>``/``<area>``
    with an ``href`` as ``(href, first leaf, last leaf)``; ``base_href`` the
    first ``<base href>``; ``title`` the first ``<title>`` text (not stripped);
    ``text`` the visible text as :func:`~focused.page.text.html_to_text`
    returns it; ``deep`` whether the streaming fallback read the page.
    """

    leaves: list[str] = field(default_factory=list)
    links: list[tuple[str, int, int]] = field(default_factory=list)
    base_href: str | None = None
    title: str = ""
    text: str = ""
    deep: bool = False
    #: (base URL, resolved URL of each link or None) memoised by
    #: :func:`~focused.learning.apprentice.resolve.resolve_links`
    resolved: tuple[str, list[str | None]] | None = None
    #: ((base URL, d_max, n_features), result) of :func:`~focused.learning.apprentice.linkids.page_link_ids`, when a
    #: page-analysis worker computed it (:mod:`focused.analysis.worker`)
    link_ids: tuple[tuple[str, int, int], Any] | None = None
    #: Whether the page's ``<base href>`` could not be joined (``http://[ffff``): its links are resolved against
    #: the page's own URL; set, with :attr:`bad_links`, when the links are resolved.
    bad_base: bool = False
    #: Hrefs that could not be joined to the base (an invalid IPv6 host...): dropped.
    bad_links: int = 0
    #: Links dropped for a URL longer than the crawl's ``URLLENGTH_LIMIT`` (set by the outlinks' reading).
    long_links: int = 0

    def truncate(self, n_links: int) -> None:
        """Keep only the first ``n_links`` links (a page cut at the crawl's cap of links per page)."""
        del self.links[n_links:]
        if self.resolved is not None:
            del self.resolved[1][n_links:]
        self.link_ids = None


def normalize_text(parts: list[str]) -> str:
    """Join collected text parts: runs of whitespace one space, block breaks one newline (a run of breaks and
    the spaces around them), no space or newline at either end."""
    text = " ".join("".join(parts).split())  # str.split's whitespace is \s's; no Python call per run
    # the lines between breaks, each stripped of its space at either end, the empty ones left out: the same text
    # as the regex " ?\x00[\x00 ]*" replaced by a newline then stripped, which tried a match at every space
    # (docs/results.md, "CPU per page")
    return "\n".join(filter(None, map(str.strip, text.split(BREAK))))
