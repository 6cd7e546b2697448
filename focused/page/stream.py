"""The streaming reader of pages too deeply nested for libxml2's tree (see :mod:`focused.page.parse`).

libxml2's HTML parser, driven as a SAX parser (an lxml parser *target*), builds no tree and so has
no depth limit with ``huge_tree``: the open elements are a plain list here, and a page nested
100,000 levels deep keeps its text and its links, in about a second (the standard library's
tokenizer, used before, took 4-5 s). Tag soup is repaired by libxml2 as in the tree, so start and
end events always pair up.
"""

from __future__ import annotations

import time
from typing import Any

from lxml import etree

from focused.page.parsed import BLOCK, BREAK, LEAF_SKIP, LINK_TAGS, TEXT_SKIP, PageTooSlow, ParsedPage, normalize_text

__all__ = ["stream_page"]

_VOID = frozenset("area base br col embed hr img input keygen link meta param source track wbr".split())
#: The time budget is checked every this many start tags.
_CHECK_EVERY = 4096


class _Stream:
    """An lxml parser target: the page's leaves, links, base, title and text from the parser's events."""

    def __init__(self, deadline: float | None) -> None:
        self.page = ParsedPage(deep=True)
        self.parts: list[str] = []
        #: open elements: (tag, first leaf, href of a link or None)
        self.open: list[tuple[str, int, str | None]] = []
        self.leaf_skip = 0  # open <script>/<style>/<template> elements
        self.text_skip = 0  # ... and <noscript>
        self.in_title = False
        self.deadline = deadline
        self.starts = 0
        self.pending: list[str] = []

    def start(self, tag: Any, attrib: Any) -> None:
        if not isinstance(tag, str):
            return
        self._flush()
        self.starts += 1
        if self.deadline is not None and not self.starts % _CHECK_EVERY and time.monotonic() > self.deadline:
            raise PageTooSlow(f"still reading after {len(self.page.leaves)} leaves")
        href = attrib.get("href") if tag in LINK_TAGS or tag == "base" else None
        if tag == "base" and self.page.base_href is None and href is not None:
            self.page.base_href = href
        if tag in BLOCK and not self.text_skip:
            self.parts.append(BREAK)
        if tag in _VOID:
            if not self.leaf_skip:
                self.page.leaves.append("")
                if tag == "area" and href is not None:
                    n = len(self.page.leaves) - 1
                    self.page.links.append((href, n, n))
            return
        self.open.append((tag, len(self.page.leaves), href))
        self.leaf_skip += tag in LEAF_SKIP
        self.text_skip += tag in TEXT_SKIP
        self.in_title = tag == "title" and not self.page.title

    def end(self, tag: Any) -> None:
        self._flush()
        if not isinstance(tag, str) or tag in _VOID or not self.open:
            return
        # libxml2 pairs every start with an end; close down to the element it names
        for depth in range(len(self.open) - 1, -1, -1):
            if self.open[depth][0] == tag:
                while len(self.open) > depth:
                    self._close()
                return

    def _close(self) -> None:
        tag, start, href = self.open.pop()
        self.leaf_skip -= tag in LEAF_SKIP
        self.text_skip -= tag in TEXT_SKIP
        self.in_title = False
        leaves = self.page.leaves
        if tag in BLOCK and not self.text_skip:
            self.parts.append(BREAK)
        if self.leaf_skip or tag in LEAF_SKIP:  # a skipped element is no leaf either
            return
        if len(leaves) == start:
            leaves.append("")
        if tag in LINK_TAGS and href is not None:
            self.page.links.append((href, start, len(leaves) - 1))

    def data(self, data: str) -> None:
        self.pending.append(data)  # libxml2 may hand one text node over in pieces: joined at the next tag

    def _flush(self) -> None:
        """The text since the last tag, as one piece of text."""
        if not self.pending:
            return
        data = "".join(self.pending)
        self.pending.clear()
        if self.in_title and not self.page.title:
            self.page.title = data
        if not self.text_skip:
            self.parts.append(data)
        if not self.leaf_skip and data and not data.isspace():
            self.page.leaves.append(data)

    def close(self) -> ParsedPage:
        self._flush()
        while self.open:
            self._close()
        self.page.text = normalize_text(self.parts)
        return self.page


def stream_page(html: str, deadline: float | None = None) -> ParsedPage:
    """Leaves, links, base, title and visible text of ``html`` without building a tree.

    ``deadline`` (a :func:`time.monotonic` time): :class:`PageTooSlow` once it has passed.
    """
    target = _Stream(deadline)
    parser = etree.HTMLParser(
        target=target, remove_comments=True, remove_pis=True, recover=True, no_network=True, huge_tree=True
    )
    try:
        page: ParsedPage = etree.fromstring(html, parser)
    except PageTooSlow:
        raise
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):  # nothing to read, or a lone fragment
        page = target.close()
    return page
