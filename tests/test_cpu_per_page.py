"""The per-page shortcuts of issue 30 (CPU per page) give exactly what the plain computations gave.

Each rewritten function is checked against the computation it replaced, written out here on sample
inputs: the hashed ids of new words (all of a page's at once), the link features' ids of each word at
each offset (columns of the word table), the resolution of root-relative links remembered across pages,
a page's link payloads encoded together when their ids are too far apart for the compact kind, and the
words of a text split without the regex.
"""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

from focused.frontier.payloads import encode_payload, encode_payloads
from focused.learning.apprentice import resolve
from focused.learning.apprentice.linkids import offset_column
from focused.learning.apprentice.payload import LinkPayload
from focused.learning.apprentice.resolve import _resolve, resolve_links
from focused.page import hashing
from focused.page.hashing import FeatureIds
from focused.page.parse import parse_page
from focused.page.text import MARK, find_words, tokenize
from focused.page.words import WordTable

WORDS = ["", "the@-1", "naïve", "中文@3", "\x00", "a" * 1000, "course@0", "x"] + [
    f"w{i}@{i % 7 - 3}" for i in range(300)
]


def _reference_id(feature: str, n: int) -> int:
    """The id as the per-string loop computed it (scikit-learn's rule for the hash whose abs() overflows)."""
    h = hashing._murmurhash3_32(feature, 0, True)
    return (2**31 - 1 - (n - 1)) % n if h == -(2**31) else abs(h) % n


@pytest.mark.parametrize("n", [1, 7, 2**18, 2**20, 2**31 - 1])
def test_ids_of_many_strings_at_once_are_the_per_string_ids(n: int) -> None:
    ids = FeatureIds(n)
    want = [_reference_id(w, n) for w in WORDS]
    got = ids.uncached_array(WORDS)
    assert got.dtype == np.int64 and got.tolist() == want
    assert ids.uncached(WORDS) == want and ids.ids(WORDS) == want
    assert ids.uncached_array([]).tolist() == []


def test_the_hash_whose_abs_overflows_gets_scikit_learns_id(monkeypatch: pytest.MonkeyPatch) -> None:
    real = hashing._murmurhash3_32
    monkeypatch.setattr(hashing, "_murmurhash3_32", lambda f, *a: -(2**31) if f == "boom" else real(f, *a))
    for n in (5, 2**20):
        want = (2**31 - 1 - (n - 1)) % n
        assert FeatureIds(n).uncached_array(["a", "boom", "b"]).tolist()[1] == want
        assert FeatureIds(n).ids(["boom"]) == [want]


def test_the_offset_column_holds_the_ids_of_each_token_at_each_offset() -> None:
    d_max, n = 3, 2**20
    columns = (offset_column(n, d_max),)
    table = WordTable()  # its columns start with 1,024 rows: the pages below grow them
    small = WordTable(max_words=60)  # cleared again and again
    rng = np.random.default_rng(3)
    vocabulary = [f"tok{i}" for i in range(3000)] + ["a", "7", "1999", "x1", MARK, "été", "中文", "Tok5"]
    for page in range(4):  # new words on each page, and words met on earlier ones
        texts = [" ".join(vocabulary[i] for i in rng.integers(0, len(vocabulary), 30)) for _ in range(50)]
        texts += ["a 1999", ""]
        got = table.tokens_of_many(texts, columns)
        assert got is not None
        (matrix,), text_of = got
        tokens = [(t, word) for t, text in enumerate(texts) for word in tokenize(text.replace(MARK, " "))]
        assert text_of.tolist() == [t for t, _ in tokens]
        assert matrix.dtype == np.int32 and matrix.shape == (len(tokens), 2 * d_max + 1)
        for d in range(-d_max, d_max + 1):
            assert matrix[:, d + d_max].tolist() == [_reference_id(f"{w}@{d}", n) for _, w in tokens], (page, d)
        for text in texts[:5]:  # a table that starts afresh gives the same ids
            fresh, kept = small.tokens_of_many([text, "x1"], columns), table.tokens_of_many([text, "x1"], columns)
            assert fresh is not None and kept is not None
            assert fresh[0][0].tolist() == kept[0][0].tolist() and fresh[1].tolist() == kept[1].tolist()


HREFS = [
    "/wiki/Physics",
    "/wiki/Physics#History",
    "  /wiki/Physics  ",
    "/a/./b/../c",
    "/a/b?x=1&y=2#f",
    "/;params?q",
    "/",
    "/%7Euser/ space",
    "/\t/evil.test/x",  # urlsplit drops the tab: //evil.test/x names another host
    "/\n/x",
    "//other.test/p",
    "relative/path",
    "../up",
    "?only=query",
    "#frag",
    "",
    "http://abs.test/x",
    "HTTPS://Abs.test/Y",
    "mailto:a@b.test",
    "javascript:void(0)",
    "http://[ffff/x",  # urljoin refuses it: dropped and counted
]
BASES = [
    "http://one.test/dir/page.html?q=1",
    "https://one.test/other/",
    "http://two.test:8080/x/y",
    "HTTP://Three.test",
    "http://user:pw@one.test/a",
]


def _page(base_href: str = "") -> str:
    head = f'<base href="{base_href}">' if base_href else ""
    anchors = "".join(f'<a href="{h}">link {i}</a> ' for i, h in enumerate(HREFS))
    return f"<html><head>{head}</head><body><p>{anchors}</p></body></html>"


def _reference(parsed_links: list[str], base: str) -> tuple[list[str | None], int]:
    out: list[str | None] = []
    bad = 0
    for href in parsed_links:
        try:
            out.append(_resolve(base, href))
        except ValueError:
            out.append(None)
            bad += 1
    return out, bad


@pytest.mark.parametrize("base_href", ["", "/moved/here/", "https://four.test/b/"])
def test_links_resolved_with_the_memo_across_pages_are_urljoins(base_href: str) -> None:
    resolve._rooted.clear()
    for rounds in range(2):  # the second time every root-relative href comes from the memo
        for base in BASES:
            parsed = parse_page(_page(base_href))
            hrefs = [href for href, _, _ in parsed.links]
            assert len(hrefs) == len(HREFS)
            got = resolve_links(parsed, base)
            effective = base.partition("#")[0]
            if base_href:
                from urllib.parse import urljoin

                effective = urljoin(effective, base_href).partition("#")[0]
            want, bad = _reference(hrefs, effective)
            assert got == want, (rounds, base)
            assert parsed.bad_links == bad
    assert resolve._rooted  # the memo was used
    # the tab and newline hrefs are never taken from the memo: urlsplit makes them name another host
    assert not any("\t" in href or "\n" in href for _, href in resolve._rooted)


def test_the_resolution_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolve, "ROOTED_MEMO", 5)
    resolve._rooted.clear()
    parsed = parse_page("".join(f'<a href="/p{i}">x</a>' for i in range(40)))
    assert resolve_links(parsed, "http://h.test/") == [f"http://h.test/p{i}" for i in range(40)]
    assert 0 < len(resolve._rooted) <= 5


@pytest.mark.parametrize("k", [0, 2, 3])
def test_a_page_of_far_apart_ids_encodes_to_the_bytes_of_each_payload(k: int) -> None:
    rng = np.random.default_rng(k)
    payloads = []
    for size in rng.integers(0, 60, 50).tolist():
        ids = np.sort(rng.integers(0, 2**20, size)).astype(np.int32)  # gaps beyond 2 bytes: the plain kind
        payloads.append(LinkPayload(ids, rng.random(k).astype(np.float32) if k else None))
    payloads.append(LinkPayload(np.arange(0, 50, 3, dtype=np.int32), np.ones(k, np.float32) if k else None))
    together = encode_payloads(payloads)
    assert together == [encode_payload(p) for p in payloads]
    assert {b[:1] for b in together} == {b"L", b"D"}


_WORD = re.compile(r"[^\W_]+")
_WORD_OR_MARK = re.compile(r"[^\W_]+|\x01")


def _texts_of_every_code_point() -> list[str]:
    """Every code point (surrogates too) in runs of 7 between spaces, run together, between marks, and
    without the backslash (with it, a text takes the slow path)."""
    every = "".join(chr(c) for c in range(sys.maxunicode + 1))
    texts = []
    for k in range(0, len(every), 4999):
        chunk = every[k : k + 4999]
        spaced = " ".join(chunk[i : i + 7] for i in range(0, len(chunk), 7))
        texts += [chunk, spaced.replace("\\", ""), spaced.replace(" ", MARK).replace("\\", "")]
    return texts


def test_the_words_of_a_text_are_the_regex_matches_on_every_code_point() -> None:
    for text in _texts_of_every_code_point():
        assert find_words(text) == _WORD.findall(text), text[:20]
        assert find_words(text, mark=True) == _WORD_OR_MARK.findall(text), text[:20]


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "\\",
        "a\\b c",
        "naïve café–bar\xa0x_y 3.14 über\u2003straße",
        "tab\tnew\nline\x0bvt\x1cfs\x85nel\u2028ls",
        "\ud800lone\udfffsurrogates 😀emoji𝔘nicode",
        "x\x01y\x01\x01 \x01é\x01",
        "under_score __ _a_",
    ],
)
def test_the_words_of_odd_texts_are_the_regex_matches(text: str) -> None:
    assert find_words(text) == _WORD.findall(text)
    assert find_words(text, mark=True) == _WORD_OR_MARK.findall(text)


def test_the_words_of_parsed_pages_and_their_leaves_are_the_regex_matches() -> None:
    html = (
        "<html><head><title>Éléments – a test</title></head><body><p>Physics (from Ancient Greek "
        "φυσική) is the natural science of matter\u00a0and energy.</p><ul><li><a href='/wiki/Force'>"
        "Force</a></li><li><a href='/wiki/Énergie'>Énergie 2</a>, l'été 1999</li></ul>"
        "<p>back\\slash C:\\dir 中文 text_with_underscores</p></body></html>"
    )
    parsed = parse_page(html)
    for text in (parsed.text.lower(), parsed.text):
        assert find_words(text) == _WORD.findall(text)
    joined = MARK.join(parsed.leaves).lower()
    assert find_words(joined, mark=True) == _WORD_OR_MARK.findall(joined)
