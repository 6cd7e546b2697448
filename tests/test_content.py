"""Content that is not a page: binary bodies served as text/html, and a gzip bomb, from a real local server."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from focused.bench.runner import run_crawl
from focused.crawldb import iter_pages
from focused.downloadermiddlewares.binarybody import STAT as BINARY
from focused.downloadermiddlewares.httpcompression import STAT as BOMB
from focused.page.binary import _CONTROL, _utf8_controls, looks_binary
from tests.local_server import HTML, LocalServer, direct_crawl
from tests.sites import SPORT

TEXTS = [
    ("utf-8", "Fußball: Tor, Spieler, Mannschaft — Saison 2024/25. Élève, naïve, façade. " * 40),
    ("cp1252", "Café crème, résumé, “quotes” and – dashes … " * 40),
    ("shift_jis", "サッカーの試合は午後三時に始まります。チームと監督。" * 40),
    ("utf-16", "A page in UTF-16: every ASCII letter has a NUL byte beside it. " * 40),
    ("iso-8859-1", "<html><body><p>Plain ASCII page, tabs\tand\nnewlines.</p></body></html>" * 40),
]


@pytest.mark.parametrize(("encoding", "text"), TEXTS)
def test_text_in_any_encoding_is_not_binary(encoding: str, text: str) -> None:
    assert not looks_binary(text.encode(encoding), encoding)


@pytest.mark.parametrize("encoding", ["utf-8", "iso-8859-1", "cp1252", "shift_jis", "ascii"])
def test_random_bytes_are_binary_in_any_encoding(encoding: str) -> None:
    body = random.Random(0).randbytes(20_000)
    assert looks_binary(body, encoding)
    assert looks_binary(b"<html><body>" + body.replace(b"\x00", b"") + b"</body></html>", encoding)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                0x00,
                0x05,
                0x09,
                0x0A,
                0x1F,
                0x20,
                0x41,
                0x7F,
                0x80,
                0x85,
                0x9F,
                0xA0,
                0xBF,
                0xC2,
                0xC3,
                0xE2,
                0xED,
                0xF0,
                0xF4,
                0xFF,
            ]
        )
        | st.integers(0, 255),
        max_size=300,
    )
)
def test_utf8_controls_are_counted_in_the_bytes_as_in_the_decoded_text(data: list[int]) -> None:
    """Counted from the bytes (C0 and DEL bytes, 0xC2 then 0x80-0x9F): the same count as the regex over the text
    decoded with undecodable bytes replaced, on bytes rich in controls, lead and continuation bytes."""
    sample = bytes(data)
    assert _utf8_controls(sample) == len(_CONTROL.findall(sample.decode("utf-8", errors="replace")))


def test_utf8_controls_of_every_two_bytes_and_every_three_of_the_telling_ones() -> None:
    """Exhaustively: every pair of bytes, and every triple of controls, lead and continuation bytes."""
    telling = [0x00, 0x09, 0x0E, 0x1F, 0x41, 0x7F, 0x80, 0x9F, 0xA0, 0xBF, 0xC2, 0xC3, 0xE2, 0xF0, 0xFF]
    samples = [bytes((a, b)) for a in range(256) for b in range(256)]
    samples += [bytes((a, b, c)) for a in telling for b in telling for c in telling]
    for sample in samples:
        assert _utf8_controls(sample) == len(_CONTROL.findall(sample.decode("utf-8", errors="replace"))), sample


SHORT_LATIN = "<html><body><p>Élève à l'école: café, crème brûlée, déjà vu, naïve façade.</p></body></html>"


def test_text_that_decodes_with_a_few_errors_is_text() -> None:
    """The probe's 147-byte page of invalid UTF-8: Latin-1 text served as UTF-8 (an undecodable byte in every
    accented letter, 12 % of the page) was skipped as binary; it has no control character, so it is text."""
    body = (SHORT_LATIN + " " * (147 - len(SHORT_LATIN))).encode("latin-1")
    assert len(body) == 147
    with pytest.raises(UnicodeDecodeError):
        body.decode("utf-8")
    assert body.decode("utf-8", "replace").count("\ufffd") > 0.05 * len(body)  # over the old 5 % threshold
    assert not looks_binary(body, "utf-8")
    garbled = b"<html><body><p>Some words, then " + bytes(range(0x80, 0xA0)) + b" and more words.</p></body></html>"
    assert not looks_binary(garbled, "utf-8")  # 32 undecodable bytes in 100 of text: still text


@pytest.mark.parametrize("seed", range(20))
def test_short_random_bodies_are_still_binary(seed: int) -> None:
    """A page as short as the one above but of random bytes (no NUL): its control characters give it away."""
    body = random.Random(seed).randbytes(147).replace(b"\x00", b"")
    assert looks_binary(body, "utf-8") and looks_binary(body, "cp1252")


def test_a_nul_byte_in_a_narrow_encoding_is_binary() -> None:
    assert looks_binary(b"<html><body>hello\x00world</body></html>", "utf-8")


def test_binary_bodies_and_a_gzip_bomb_are_skipped_and_counted(tmp_path: Path) -> None:
    rng = random.Random(1)
    text = " ".join(rng.choice(SPORT) for _ in range(200))
    links = ["/ok", "/binary", "/nul", "/latin", "/bomb", "/utf16"]
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    bomb = gzip.compress(b" " * (12 * 1024 * 1024), compresslevel=9)  # 12 MiB of spaces in ~12 KiB
    pages = {
        "/": (200, HTML, f"<html><head><title>home</title></head><body><p>{text}</p>{anchors}</body></html>".encode()),
        "/ok": (200, HTML, f"<html><body><p>{text} ok</p></body></html>".encode()),
        "/binary": (200, HTML, rng.randbytes(30_000)),
        "/nul": (200, HTML, f"<html><body><p>{text}</p>\x00\x00\x00</body></html>".encode()),
        "/latin": (
            200,
            [("Content-Type", "text/html; charset=iso-8859-1")],
            rng.randbytes(30_000).replace(b"\x00", b""),
        ),
        "/bomb": (200, [*HTML, ("Content-Encoding", "gzip")], bomb),
        "/utf16": (
            200,
            [("Content-Type", "text/html; charset=utf-16")],
            f"<html><body><p>{text} in utf-16</p></body></html>".encode("utf-16"),
        ),
    }
    with LocalServer(pages) as web:
        spec = direct_crawl(web, tmp_path, "content")
        result = run_crawl(spec, timeout=120)
    assert result.returncode == 0, result.log.read_text()
    assert {p.removeprefix("/") for p in web.hits} >= {"", "ok", "binary", "nul", "latin", "bomb", "utf16"}
    stored = {p.url.removeprefix(web.url) for p in iter_pages(spec.db)}
    assert stored == {"/", "/ok", "/utf16"}
    assert result.stats.get(BINARY) == 3
    assert result.stats.get(BOMB) == 1
