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
from collections.abc import Sequence
from email.message import Message

from w3lib.encoding import read_bom

from focused.page.parse import parse_page

__all__ = [
    "PAGE_TYPES",
    "content_type_charset",
    "find_words",
    "html_to_text",
    "is_page_type",
    "tokenize",
    "words_of_many",
]

#: The content types read as pages (prefixes of the lower-cased ``Content-Type``): HTML, XHTML and plain text.
PAGE_TYPES = ("text/html", "application/xhtml", "text/plain")


def is_page_type(content_type: str) -> bool:
    """Whether a response of this ``Content-Type`` is a page to read (an empty one may be: the body decides)."""
    content_type = content_type.strip().lower()
    return not content_type or content_type.startswith(PAGE_TYPES)


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+")

#: ASCII bytes as :func:`find_words` splits them: a byte that is no word character (``[^\W_]``: not a
#: letter or digit) becomes a space, but the backslash of the non-ASCII characters' escapes is kept, and
#: the leaf mark ``\x01`` with ``mark``.
_SPLIT = bytes(c if chr(c).isalnum() or c == 0x5C else 32 for c in range(128)) + bytes(range(128, 256))
_SPLIT_KEEP_MARK = _SPLIT[:1] + b"\x01" + _SPLIT[2:]
#: Separates texts in one pass over many (leaves, anchor texts): no word character.
MARK = "\x01"


def find_words(text: str, mark: bool = False) -> list[str]:
    """``re.findall(r"[^\\W_]+", text)``, the same list, in a third of its time: the runs of letters and digits.

    The regex tests each character's Unicode category. Here the text is made ASCII (each non-ASCII
    character as its ``\\xhh``/``\\uhhhh`` escape), one byte translation turns the ASCII non-word
    characters into spaces, and ``str.split`` cuts at them; only the pieces with an escape in them
    (a few dozen a page of an encyclopedia) are unescaped and go to the regex, which splits them at
    their own non-word characters (an en dash, a non-breaking space). A text with a backslash of its
    own takes a slower path. With ``mark``, each :data:`MARK` is a word of its own
    (``r"[^\\W_]+|\\x01"``). ``tests/test_cpu_per_page.py`` holds them equal on every code point.
    """
    if "\\" in text:
        return _find_words_slowly(text, mark)
    table = _SPLIT_KEEP_MARK if mark else _SPLIT
    spaced = text.encode("ascii", "backslashreplace").translate(table).decode("ascii")
    if mark and MARK in spaced:
        spaced = spaced.replace(MARK, f" {MARK} ")
    words: list[str] = []
    start = 0
    escape = spaced.find("\\")
    while escape >= 0:  # the piece around a non-ASCII character: from the space before it to the one after
        begin = spaced.rfind(" ", start, escape) + 1
        end = spaced.find(" ", escape)
        if end < 0:
            end = len(spaced)
        words += spaced[start:begin].split()
        words += _WORD.findall(spaced[begin:end].encode("ascii").decode("unicode_escape"))
        start, escape = end, spaced.find("\\", end)
    words += spaced[start:].split()
    return words


def words_of_many(texts: Sequence[str]) -> list[str]:
    """The lower-cased words of many texts in one :func:`find_words` pass, a :data:`MARK` between two texts
    (a mark inside a text becomes a space, so each mark in the result ends one text)."""
    joined = MARK.join(texts)
    if joined.count(MARK) != max(len(texts) - 1, 0):  # a text with the mark in it
        joined = MARK.join([text.replace(MARK, " ") for text in texts])
    return find_words(joined.lower(), mark=True)


def _find_words_slowly(text: str, mark: bool) -> list[str]:
    """:func:`find_words` of a text with a backslash of its own: the regex."""
    return (_WORD_OR_MARK if mark else _WORD).findall(text)


_WORD_OR_MARK = re.compile(_WORD.pattern + "|" + MARK)


def _valid_codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def decode_html(data: bytes, encoding: str | None = None) -> str:
    """Decode page bytes: by their byte-order mark, else ``encoding``, a ``<meta>`` charset, UTF-8, then Latin-1.

    The mark wins over a declared charset, as in Scrapy's decoding of a response (a page saved as UTF-16 has
    one). Otherwise the first candidate that decodes the bytes without error wins, so a wrong declared charset
    falls through to the next one.
    """
    bom, mark = read_bom(data)
    if bom and mark:
        return data[len(mark) :].decode(bom, "replace")
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


def content_type_charset(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a ``Content-Type`` header value (lowercased), if it has one."""
    if not content_type:
        return None
    msg = Message()
    msg["Content-Type"] = content_type
    return msg.get_content_charset()


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
    return parse_page(html).text


def tokenize(text: str) -> list[str]:
    """Split text into lowercase word tokens (≥ 2 characters, no pure numbers).

    >>> tokenize("CS 415: Operating Systems, Fall 1996 (e-mail CS415-TAs)")
    ['cs', 'operating', 'systems', 'fall', 'mail', 'cs415', 'tas']
    """
    global _last
    last = _last
    if text is last[0]:  # the same page text again (the near-duplicate check, then the critic)
        return list(last[1])
    tokens = [tok for tok in find_words(text.lower()) if len(tok) > 1 and not tok.isdigit()]
    if len(text) >= _REMEMBER_CHARS:
        _last = (text, tokens)
        return list(tokens)
    return tokens


#: The last page-sized text tokenized and its tokens: a page's text is read by two components.
_last: tuple[str | None, list[str]] = (None, [])
_REMEMBER_CHARS = 1_000
