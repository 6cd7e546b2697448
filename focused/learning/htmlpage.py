"""One parse of an HTML page for everything the crawler reads from it.

The spider needs the page's links and title, the critic its visible text, and
the apprentice its numbered DOM leaves with the leaf span of every link
(:mod:`focused.learning.linkfeatures`). :func:`parse_page` parses the page once
with libxml2 and walks the tree twice (leaves and links; visible text), so
that no component parses a page again.

The text is prepared as :func:`focused.learning.text.html_to_text` always
prepared it (XML declaration dropped, 1990s comments closed by a bare ``>``,
``</body>``/``</html>`` removed so that text after them is kept, C0 controls
made spaces), so the critic reads the same text as before.

Deep nesting: libxml2 stops building the tree at depth 2,048 (256 without
``huge_tree``) and drops the rest of the document. When that happens the page
is read again by the standard library's streaming tokenizer
(:func:`stream_page`), which builds no tree and never recurses: the open
elements are a plain list, so a page nested 100,000 levels deep keeps its
text and its links. Tag soup is repaired more simply there than libxml2 does
(an end tag closes the nearest open element of its name among the innermost
64, or is ignored).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from lxml import etree

from focused.learning.regions import HEADINGS, REGION_CONTAINERS, link_regions

__all__ = ["ParsedPage", "parse_page", "stream_page"]

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

_XML_DECL = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)
# libxml2 drops whatever follows </body> or </html>; browsers show it, and 1990s pages put text there.
_END_TAGS = re.compile(r"</\s*(?:body|html)\s*>", re.IGNORECASE)
# C0 controls other than tab/newline/CR, which libxml2 rejects in str input (made spaces; a regex
# search first, since str.translate with a table costs a millisecond on a 20 KB page without any).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
BREAK = "\x00"  # marks a block boundary while collecting; never in parsed text (see _CONTROL)
_BREAKS = re.compile(r" ?\x00[\x00 ]*")
_DEPTH_ERROR = "Excessive depth"
_local = threading.local()


@dataclass
class ParsedPage:
    """What one parse of a page gives (see the module docstring).

    ``leaves`` are the DOM leaves of :mod:`focused.learning.linkfeatures` in
    document order ('' for an empty leaf); ``links`` every ``<a>``/``<area>``
    with an ``href`` as ``(href, first leaf, last leaf)``; ``base_href`` the
    first ``<base href>``; ``title`` the first ``<title>`` text (not stripped);
    ``text`` the visible text as :func:`~focused.learning.text.html_to_text`
    returns it; ``deep`` whether the streaming fallback read the page.
    """

    leaves: list[str] = field(default_factory=list)
    links: list[tuple[str, int, int]] = field(default_factory=list)
    #: where each link sits, parallel to ``links``: its open containers and the headings before it, the
    #: input of :func:`~focused.learning.regions.link_regions` (computed only when asked, by
    #: :meth:`link_regions`); empty when the parser did not record them (the streaming fallback)
    places: list[tuple[tuple[int, ...], int]] = field(default_factory=list)
    base_href: str | None = None
    title: str = ""
    text: str = ""
    deep: bool = False
    #: (base URL, resolved URL of each link or None) memoised by :func:`~focused.learning.linkfeatures.resolve_links`
    resolved: tuple[str, list[str | None]] | None = None
    #: ((base URL, d_max, n_features), result) of :func:`~focused.learning.linkids.page_link_ids`, when a
    #: page-analysis worker computed it (:mod:`focused.analysis`)
    link_ids: tuple[tuple[str, int, int], Any] | None = None

    def link_regions(self) -> list[int]:
        """The region of each link (:func:`~focused.learning.regions.link_regions`); [] without places."""
        return link_regions(self.places) if self.places else []

    def truncate(self, n_links: int) -> None:
        """Keep only the first ``n_links`` links (a page cut at the crawl's cap of links per page)."""
        del self.links[n_links:]
        del self.places[n_links:]
        if self.resolved is not None:
            del self.resolved[1][n_links:]
        self.link_ids = None


def _parser(kind: str) -> etree.HTMLParser:
    """This thread's parser for ``str`` input, or (``kind="utf-8"``) for UTF-8 bytes."""
    parser = getattr(_local, kind, None)
    if parser is None:  # lxml parsers must not be shared between threads
        # huge_tree lifts libxml2's nesting limit of 256, which unclosed <font> tags of old pages reach.
        parser = etree.HTMLParser(
            remove_comments=True,
            remove_pis=True,
            recover=True,
            no_network=True,
            huge_tree=True,
            encoding="utf-8" if kind == "utf-8" else None,
        )
        setattr(_local, kind, parser)
    return parser


def prepare(html: str) -> tuple[str, str | None]:
    """The page as the parser gets it for the text, and as it gets it for the links if that differs.

    The text side is prepared as the module docstring says. The links and
    leaves have always been read from the page as written (a sloppy comment
    hides the links after it, as in Scrapy's link extractor), so a page that
    the preparation changes beyond its end tags is parsed a second time, as
    written, for them (1-2% of WebKB's 1990s pages, none of the rendered
    Wikipedia). Returns ``("", None)`` for a blank page.
    """
    if not html or html.isspace():
        return "", None
    html = _XML_DECL.sub("", html, count=1)
    closed = close_sloppy_comments(html)
    ended = _END_TAGS.sub("", closed)
    prepared = _CONTROL.sub(" ", ended) if _CONTROL.search(ended) else ended
    as_written: str | None = None
    if closed != html or prepared != ended or _text_after_end(html):
        as_written = html
    return prepared, as_written


def _text_after_end(html: str) -> bool:
    """Whether anything but end tags and whitespace follows the first ``</body>`` or ``</html>``."""
    match = _END_TAGS.search(html)
    if match is None:
        return False
    rest = _END_TAGS.sub("", html[match.end() :])
    return bool(rest) and not rest.isspace()


def parse_page(html: str) -> ParsedPage:
    """Parse ``html`` once: leaves, links, base, title and visible text; empty for a blank or unparseable page."""
    prepared, as_written = prepare(html)
    if not prepared or prepared.isspace():
        return ParsedPage()
    root = _parse(prepared)
    if root is _DEEP:
        return stream_page(prepared)
    page = ParsedPage()
    if root is None:
        return page
    if as_written is None:
        _read_tree(root, page)  # the text too
        return page
    # the links and leaves of the page as written, the text of the page as prepared
    written = _parse(as_written.encode("utf-8", "replace"))
    if written is _DEEP:
        stream = stream_page(as_written)
        page.leaves, page.links, page.base_href, page.title = (
            stream.leaves,
            stream.links,
            stream.base_href,
            stream.title,
        )
    elif written is not None:
        _read_tree(written, page, text=False)
    page.text = collect_text(root)
    return page


_DEEP = object()


def _parse(html: str | bytes) -> Any:
    """The tree of ``html``; None if it cannot be parsed; ``_DEEP`` if libxml2 gave up at its depth limit."""
    parser = _parser("utf-8" if isinstance(html, bytes) else "str")
    try:
        root = etree.fromstring(html, parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        root = None
    if any(_DEPTH_ERROR in entry.message for entry in parser.error_log):
        return _DEEP
    return root


def _read_tree(root: etree._Element, page: ParsedPage, text: bool = True) -> None:
    """One walk over the tree: leaf texts ('' for empty leaves), links as (href, l, r), <base href>, title
    and (with ``text``) the visible text, the same as :func:`collect_text` (tested): a walk for the leaves and
    another for the text cost a third more."""
    leaves = page.leaves
    links: list[tuple[str, int, int] | None] = []  # in the order the links start (as Scrapy lists them)
    starts: list[tuple[int, int]] = []  # (first leaf, slot in links or -1) of each open element
    blocks: list[int] = []  # the serials of the open containers (REGION_CONTAINERS)
    serials = 0
    headings = 0  # headings started so far
    places: list[tuple[tuple[int, ...], int]] = []  # per slot: the containers around the link, headings before it
    parts: list[str] = []  # of the visible text
    hidden = 0 if text else 1  # open elements whose text is not visible (<noscript>: read for leaves only)
    title: str | None = None
    walker = etree.iterwalk(root, events=("start", "end"))
    for event, el in walker:
        tag = el.tag
        skipped = not isinstance(tag, str) or tag in LEAF_SKIP
        if event == "start":
            if skipped:
                walker.skip_subtree()
                continue
            slot = -1
            if tag in REGION_CONTAINERS:
                serials += 1
                blocks.append(serials)
            elif tag in HEADINGS:
                headings += 1
            if tag in LINK_TAGS and el.get("href") is not None:
                slot = len(links)
                links.append(None)
                places.append((tuple(blocks), headings))
            starts.append((len(leaves), slot))
            content = el.text
            if content and not content.isspace():
                leaves.append(content)
            if tag == "title" and title is None and content is not None:
                title = content
            if tag in _LEAVES_ONLY:
                hidden += 1
            elif not hidden:
                if tag in BLOCK:
                    parts.append(BREAK)
                if content:
                    parts.append(content)
            continue
        if not skipped:
            start, slot = starts.pop()
            if len(leaves) == start:
                leaves.append("")
            if slot >= 0:
                links[slot] = (el.get("href"), start, len(leaves) - 1)
            elif tag == "base" and page.base_href is None:
                page.base_href = el.get("href")
            if tag in REGION_CONTAINERS:
                blocks.pop()
            if tag in _LEAVES_ONLY:
                hidden -= 1
            elif not hidden and tag in BLOCK:
                parts.append(BREAK)
        tail = el.tail
        if tail:
            if not tail.isspace():
                leaves.append(tail)
            if not hidden and el is not root:
                parts.append(tail)
    page.links = [link for link in links if link is not None]
    page.places = [place for place, link in zip(places, links, strict=True) if link is not None]
    page.title = title or ""
    if text:
        page.text = normalize_text(parts)


#: Elements whose text is a DOM leaf of the link features but not visible text.
_LEAVES_ONLY = TEXT_SKIP - LEAF_SKIP


def collect_text(root: etree._Element) -> str:
    """The visible text below ``root``: whitespace normalised, one line per block element."""
    parts: list[str] = []
    # An explicit stack instead of recursion: 1990s pages nest unclosed tags deeply.
    stack: list[tuple[etree._Element, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        tag = node.tag
        if closing:
            if tag in BLOCK:
                parts.append(BREAK)
            if node.tail and node is not root:
                parts.append(node.tail)
            continue
        if not isinstance(tag, str) or tag in TEXT_SKIP:
            # Comment/PI left by the parser, or invisible content: keep only the tail.
            if node.tail and node is not root:
                parts.append(node.tail)
            continue
        if tag in BLOCK:
            parts.append(BREAK)
        if node.text:
            parts.append(node.text)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(node))
    return normalize_text(parts)


def normalize_text(parts: list[str]) -> str:
    """Join collected text parts: runs of whitespace one space, block breaks one newline."""
    text = " ".join("".join(parts).split())  # str.split's whitespace is \s's; no Python call per run
    return _BREAKS.sub("\n", text).strip()


def close_sloppy_comments(html: str) -> str:
    """Drop 1990s "comments" that end at the first ``>`` (``<!-- note >``) instead of ``-->``.

    Browsers of the time closed them there; a modern parser reads on to the
    next ``-->`` and swallows the rest of the page. A comment is taken as
    sloppy when another ``<!--`` opens before its ``-->``, or no ``-->`` follows.
    """
    start = html.find("<!--")
    if start < 0:
        return html
    parts: list[str] = []
    kept = 0
    while start >= 0:
        end = html.find("-->", start + 4)
        following = html.find("<!--", start + 4)
        if end >= 0 and (following < 0 or end < following):
            start = html.find("<!--", end + 3)  # well formed: the parser drops it
            continue
        close = html.find(">", start + 4)
        if close < 0:
            break
        parts.append(html[kept:start])
        kept = close + 1
        start = html.find("<!--", kept)
    parts.append(html[kept:])
    return "".join(parts)


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
