"""The streaming reader of pages too deeply nested for libxml2 (see :mod:`focused.page.parse`).

The standard library's tokenizer builds no tree and never recurses: the open elements are a
plain list, so a page nested 100,000 levels deep keeps its text and its links. Tag soup is
repaired more simply than libxml2 does (an end tag closes the nearest open element of its name
among the innermost 64, or is ignored).
"""

from __future__ import annotations

from html.parser import HTMLParser

from focused.page.parsed import BLOCK, BREAK, LEAF_SKIP, LINK_TAGS, TEXT_SKIP, ParsedPage, normalize_text

__all__ = ["stream_page"]

_VOID = frozenset("area base br col embed hr img input keygen link meta param source track wbr".split())
#: How far down the open elements an end tag looks for its start tag (bounds the work of tag soup).
_MATCH_WINDOW = 64


class _Stream(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = ParsedPage(deep=True)
        self.parts: list[str] = []
        #: open elements: (tag, first leaf, href of a link or None)
        self.open: list[tuple[str, int, str | None]] = []
        self.leaf_skip = 0  # open <script>/<style>/<template> elements
        self.text_skip = 0  # ... and <noscript>
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = next((v for k, v in attrs if k == "href"), None) if tag in LINK_TAGS or tag == "base" else None
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

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.open) - 1, max(-1, len(self.open) - 1 - _MATCH_WINDOW), -1):
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

    def handle_data(self, data: str) -> None:
        if self.in_title and not self.page.title:
            self.page.title = data
        if not self.text_skip:
            self.parts.append(data)
        if not self.leaf_skip and data and not data.isspace():
            self.page.leaves.append(data)

    def finish(self) -> ParsedPage:
        self.close()
        while self.open:
            self._close()
        self.page.text = normalize_text(self.parts)
        return self.page


def stream_page(html: str) -> ParsedPage:
    """Leaves, links, base, title and visible text of ``html`` without building a tree."""
    stream = _Stream()
    stream.feed(html)
    return stream.finish()
