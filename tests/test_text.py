"""Visible-text extraction and tokenization (focused.page.text)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from focused.page.parsed import BREAK, normalize_text
from focused.page.text import decode_html, html_to_text, tokenize

PAGE = """<!DOCTYPE html>
<html><head><title>CS 415 &amp; Friends</title>
<script type="text/javascript">var hidden = "scriptword";</script>
<style>p { color: stylecolor; }</style>
</head><body>
<!-- a commentword -->
<h1>Operating&nbsp;Systems</h1>
<p>Caf&eacute; &#233;t&#xE9; <b>W</b>ord</p>
<noscript>noscriptword</noscript>
<table><tr><td>left</td><td>right</td></tr></table>
</body></html>"""


def test_title_and_body_kept_hidden_parts_dropped() -> None:
    text = html_to_text(PAGE)
    assert text.startswith("CS 415 & Friends\n")
    assert "\nOperating Systems\n" in text  # &nbsp; becomes a plain space
    for hidden in ("scriptword", "stylecolor", "commentword", "noscriptword", "hidden"):
        assert hidden not in text


def test_entities_decoded_and_inline_markup_does_not_split_words() -> None:
    text = html_to_text(PAGE)
    assert "Café été Word" in text


def test_block_elements_separate_words() -> None:
    assert tokenize(html_to_text(PAGE))[-2:] == ["left", "right"]
    assert html_to_text("<div>one</div><div>two</div>") == "one\ntwo"


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ("<p>unclosed <b>bold <i>italic", "unclosed bold italic"),
        ("</td></tr>stray end tags<td>cell", "stray end tags\ncell"),
        ("<html><body><p>in</p></body></html><p>after the end</p>", "in\nafter the end"),
        ("<title>T</title><!-- sloppy 1990s comment > <p>kept</p><!-- another -->", "T\nkept"),
        ("plain text, no markup", "plain text, no markup"),
        ('<?xml version="1.0" encoding="utf-8"?><html><body>x</body></html>', "x"),
        ("nul\x00and\x07controls", "nul and controls"),
        ("<p>a<p>b<li>c", "a\nb\nc"),
    ],
)
def test_malformed_html(html: str, expected: str) -> None:
    assert html_to_text(html) == expected


@pytest.mark.parametrize("empty", ["", b"", "   \n ", b"\r\n", "<!-- only a comment -->", "<script>x=1</script>"])
def test_empty_input_gives_empty_string(empty: str | bytes) -> None:
    assert html_to_text(empty) == ""


def test_latin1_bytes_without_declaration() -> None:
    assert html_to_text(b"<p>Caf\xe9 na\xefve</p>") == "Café naïve"


def test_utf8_bytes_and_meta_charset() -> None:
    assert html_to_text("<p>Café</p>".encode()) == "Café"
    koi8 = '<meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><p>Привет</p>'
    assert html_to_text(koi8.encode("koi8-r")) == "Привет"


def test_given_encoding_is_tried_first_and_bad_names_ignored() -> None:
    data = "<p>Привет</p>".encode("cp1251")
    assert html_to_text(data, encoding="cp1251") == "Привет"
    assert html_to_text(data, encoding="no-such-codec") == data.decode("latin-1")[3:-4]
    # A declared charset that cannot decode the bytes falls through to the next candidate.
    assert decode_html(b"caf\xe9", encoding="utf-8") == "café"


def test_a_page_of_two_megabytes_keeps_every_row_in_order() -> None:
    """No timing here (``focused bench-speed`` measures speed); an extraction gone quadratic would hang on
    this page and be stopped by the suite's timeout."""
    row = "<tr><td><a href='/x'>Lecture notes</a></td><td>Week <b>3</b>: scheduling &amp; paging</td></tr>\n"
    page = "<html><head><title>Big</title></head><body><table>" + row * 21_000 + "</table></body></html>"
    assert len(page) > 2_000_000
    text = html_to_text(page)
    assert text == "\n".join(["Big", *["Lecture notes", "Week 3: scheduling & paging"] * 21_000])


def test_tokenize() -> None:
    assert tokenize("CS 415: Operating Systems, Fall 1996 (e-mail CS415-TAs)") == [
        "cs",
        "operating",
        "systems",
        "fall",
        "mail",
        "cs415",
        "tas",
    ]
    assert tokenize("Ÿ ÉCOLE Normale, naïve x_y 3.14 ²² a I") == ["école", "normale", "naïve"]
    assert tokenize("") == []


PAGES = [
    "<html><head><title>T</title><base href='/b/'></head><body><noscript>a<noscript>b</noscript>c</noscript>"
    "tail<p>x<script>s</script>y</p><a href=q>l</a><area href=x></body></html>",
    "<p>one<noscript>hid<b>den</b></noscript>two</p>three<br>four<table><tr><td>c1<td>c2</table>",
    "text only",
    "<div>W<b>or</b>d <i>in</i> <template>t</template><style>s</style>line</div>\n\n<li>item<li>two",
    "<p>caf\u00e9 \u00a0 <span>na\u00efve</span></p><noscript><a href=/n>hidden link</a></noscript>",
]


@pytest.mark.parametrize("html", PAGES)
def test_one_walk_gives_the_leaves_and_the_text_of_two(html: str) -> None:
    """The page's one walk (leaves, links, title, base and text) equals the leaf walk without text plus
    collect_text's own walk over the same tree."""
    from focused.page.parse import _parse, _read_tree, collect_text, parse_page, prepare
    from focused.page.parsed import ParsedPage

    prepared, as_written = prepare(html)
    assert as_written is None
    root = _parse(prepared)
    both, leaves_only = ParsedPage(), ParsedPage()
    _read_tree(root, both)
    _read_tree(root, leaves_only, text=False)
    assert leaves_only.text == "" and both.text == collect_text(root)
    fields = ("leaves", "links", "base_href", "title")
    assert [getattr(both, f) for f in fields] == [getattr(leaves_only, f) for f in fields]
    assert parse_page(html).text == both.text and parse_page(html).leaves == both.leaves


def test_content_type_charset() -> None:
    from focused.page.text import content_type_charset

    assert content_type_charset("text/html; charset=ISO-8859-1") == "iso-8859-1"
    assert content_type_charset('text/html;Charset="UTF-8"; foo=bar') == "utf-8"
    assert content_type_charset("text/html") is None
    assert content_type_charset(None) is None and content_type_charset("") is None


_BREAK_RUN = re.compile(r" ?\x00[\x00 ]*")


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.text(alphabet=["a", "é", " ", BREAK, "\t", "\n", "\r", "\xa0", "\u2028", "\u3000", "\x1c"])))
def test_the_text_of_collected_parts_is_the_regex_replacement(parts: list[str]) -> None:
    """The joined parts' whitespace runs are one space, and a run of block breaks with the spaces around it one
    newline, as the regex that did it (replaced by splitting at the breaks) gave, stripped."""
    text = " ".join("".join(parts).split())
    assert normalize_text(parts) == _BREAK_RUN.sub("\n", text).strip()
