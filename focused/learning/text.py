"""Visible text of HTML pages, and the one tokenizer the critic uses.

:func:`html_to_text` decodes a page of unknown encoding (the given encoding, a
``<meta>`` charset, UTF-8, then Latin-1, which never fails), parses it with
lxml's forgiving HTML parser and returns the text a reader would see: the
title and the body text, without scripts, styles, ``<noscript>`` fallbacks,
templates or comments. Block-level elements become line breaks so that words
in adjacent cells or paragraphs never run together; inline markup
(``<b>W</b>ord``) does not split words. Two 1990s idioms that a modern parser
would turn into lost text are undone first: comments closed by a bare ``>``
(``<!-- note >``) and text after ``</body>``/``</html>``.

:func:`tokenize` is the single definition of a "word" for the critic's hashed
features: lowercase Unicode letter/digit runs of two or more characters,
without pure numbers.
"""

from __future__ import annotations

import codecs
import re

from lxml import etree

__all__ = ["html_to_text", "tokenize"]

#: Elements whose content is never shown to a reader.
_SKIP = frozenset({"script", "style", "noscript", "template"})

#: Elements that start a new line of text (HTML block-level and table parts).
_BLOCK = frozenset(
    """
    address article aside blockquote body br caption center dd details dialog dir div dl dt fieldset
    figcaption figure footer form frame frameset h1 h2 h3 h4 h5 h6 head header hr html iframe legend li
    main menu nav ol option p pre section select summary table tbody td textarea tfoot th thead title tr ul
    """.split()
)

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)
# libxml2 drops whatever follows </body> or </html>; browsers show it, and 1990s pages put text there.
_END_TAGS = re.compile(r"</\s*(?:body|html)\s*>", re.IGNORECASE)
# C0 controls other than tab/newline/CR, which libxml2 rejects in str input.
_CONTROL = dict.fromkeys([*range(0, 9), 11, 12, *range(14, 32)], " ")
_BREAK = "\x00"  # marks a block boundary while collecting; never in parsed text (see _CONTROL)
_SPACES = re.compile(r"\s+")
_BREAKS = re.compile(r" ?\x00[\x00 ]*")
_WORD = re.compile(r"[^\W_]+")

_PARSER = etree.HTMLParser(remove_comments=True, remove_pis=True, recover=True, no_network=True)


def _valid_codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def decode_html(data: bytes, encoding: str | None = None) -> str:
    """Decode page bytes: ``encoding``, a ``<meta>`` charset, UTF-8, then Latin-1.

    The first candidate that decodes the bytes without error wins, so a wrong
    declared charset falls through to the next one.
    """
    candidates: list[str] = []
    for name in (encoding, _meta_charset(data), "utf-8"):
        codec = _valid_codec(name)
        if codec and codec not in candidates:
            candidates.append(codec)
    for codec in candidates:
        try:
            return data.decode(codec)
        except (UnicodeDecodeError, LookupError):
            continue
    return data.decode("latin-1")


def _meta_charset(data: bytes) -> str | None:
    match = _META_CHARSET.search(data, 0, 4096)
    return match[1].decode("ascii") if match else None


def html_to_text(html: str | bytes, encoding: str | None = None) -> str:
    """Return the visible text of an HTML page (title included).

    Parameters
    ----------
    html
        The page, as text or as raw bytes of any encoding.
    encoding
        The encoding to try first for bytes (e.g. from the HTTP
        ``Content-Type``); ignored for ``str`` input.

    Returns
    -------
    str
        Whitespace-normalised text, one line per block element; ``""`` for an
        empty or unparseable page.
    """
    if isinstance(html, bytes | bytearray | memoryview):
        html = decode_html(bytes(html), encoding)
    if not html or html.isspace():
        return ""
    html = _XML_DECL.sub("", html, count=1)
    html = _END_TAGS.sub("", _close_sloppy_comments(html)).translate(_CONTROL)
    try:
        root = etree.fromstring(html, _PARSER)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return ""
    if root is None:
        return ""
    parts: list[str] = []
    _collect(root, parts)
    text = _SPACES.sub(" ", "".join(parts))
    return _BREAKS.sub("\n", text).strip()


def _close_sloppy_comments(html: str) -> str:
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


def _collect(element: etree._Element, parts: list[str]) -> None:
    """Append the visible text below ``element`` (not its tail) to ``parts``."""
    # An explicit stack instead of recursion: 1990s pages nest unclosed tags deeply.
    stack: list[tuple[etree._Element, bool]] = [(element, False)]
    while stack:
        node, closing = stack.pop()
        tag = node.tag
        if closing:
            if tag in _BLOCK:
                parts.append(_BREAK)
            if node.tail and node is not element:
                parts.append(node.tail)
            continue
        if not isinstance(tag, str) or tag in _SKIP:
            # Comment/PI left by the parser, or invisible content: keep only the tail.
            if node.tail and node is not element:
                parts.append(node.tail)
            continue
        if tag in _BLOCK:
            parts.append(_BREAK)
        if node.text:
            parts.append(node.text)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(node))


def tokenize(text: str) -> list[str]:
    """Split text into lowercase word tokens (≥ 2 characters, no pure numbers).

    >>> tokenize("CS 415: Operating Systems, Fall 1996 (e-mail CS415-TAs)")
    ['cs', 'operating', 'systems', 'fall', 'mail', 'cs415', 'tas']
    """
    return [tok for tok in _WORD.findall(text.lower()) if len(tok) > 1 and not tok.isdigit()]
