"""One parse of an HTML page for everything the crawler reads from it.

The spider needs the page's links and title, the critic its visible text, and
the apprentice its numbered DOM leaves with the leaf span of every link
(:mod:`focused.learning.apprentice.features`). :func:`parse_page` parses the page once
with libxml2 and walks the tree twice (leaves and links; visible text), so
that no component parses a page again.

The text is prepared as :func:`focused.page.text.html_to_text` always
prepared it (XML declaration dropped, 1990s comments closed by a bare ``>``,
``</body>``/``</html>`` removed so that text after them is kept, C0 controls
made spaces), so the critic reads the same text as before.

Deep nesting: libxml2 stops building the tree at depth 2,048 (256 without
``huge_tree``) and drops the rest of the document. When that happens the page
is read again by libxml2 as a SAX parser (:func:`stream_page`), which builds
no tree and never recurses: the open elements are a plain list, so a page
nested 100,000 levels deep keeps its text and its links, in about a second.
Tag soup is repaired by libxml2 there as in the tree.

Many attributes: libxml2 compares each attribute of a tag with every one before it, so a tag's parse takes
time that grows with the square of its attributes (docs/results.md, hostile pages). A tag keeps its first
:data:`MAX_ATTRIBUTES` (no real page's tag has that many); the rest are cut before the parse, on both sides of
the preparation.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from lxml import etree

from focused.page.parsed import BLOCK, BREAK, LEAF_SKIP, LINK_TAGS, TEXT_SKIP, ParsedPage, normalize_text
from focused.page.stream import stream_page

__all__ = ["parse_page"]

#: The attributes of a tag that the parser gets (the first ones); see the module docstring.
MAX_ATTRIBUTES = 256
# possessive: no backtracking into the attributes of the many tags that have a few (docs/results.md, hostile pages)
_ATTRIBUTE = r"""(?>[\s/]++[^\s"'<>/=]++(?:\s*+=\s*+(?:"[^"]*+"|'[^']*+'|[^\s"'<>]++))?+)"""
#: A start tag with more than MAX_ATTRIBUTES attributes: the tag with its first ones, then the others.
_TOO_MANY_ATTRIBUTES = re.compile(rf"(<[A-Za-z][^\s/>]*{_ATTRIBUTE}{{{MAX_ATTRIBUTES}}}){_ATTRIBUTE}+")
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)
# libxml2 drops whatever follows </body> or </html>; browsers show it, and 1990s pages put text there.
_END_TAGS = re.compile(r"</\s*(?:body|html)\s*>", re.IGNORECASE)
# C0 controls other than tab/newline/CR, which libxml2 rejects in str input (made spaces; a regex
# search first, since str.translate with a table costs a millisecond on a 20 KB page without any).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
_DEPTH_ERROR = "Excessive depth"
_local = threading.local()


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
    html = _TOO_MANY_ATTRIBUTES.sub(r"\1", _XML_DECL.sub("", html, count=1))
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


def parse_page(html: str, deadline: float | None = None) -> ParsedPage:
    """Parse ``html`` once: leaves, links, base, title and visible text; empty for a blank or unparseable page.

    ``deadline`` (a :func:`time.monotonic` time) bounds the streaming fallback, the one part whose time
    grows with the page's nesting: :class:`~focused.page.parsed.PageTooSlow` once it has passed.
    """
    prepared, as_written = prepare(html)
    if not prepared or prepared.isspace():
        return ParsedPage()
    root = _parse(prepared)
    if root is _DEEP:
        return stream_page(prepared, deadline)
    page = ParsedPage()
    if root is None:
        return page
    if as_written is None:
        _read_tree(root, page)  # the text too
        return page
    # the links and leaves of the page as written, the text of the page as prepared
    written = _parse(as_written.encode("utf-8", "replace"))
    if written is _DEEP:
        stream = stream_page(as_written, deadline)
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
            if tag in LINK_TAGS and el.get("href") is not None:
                slot = len(links)
                links.append(None)
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
