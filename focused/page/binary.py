"""Whether a body served or saved as text is binary (a PDF, an image, random bytes named ``.html``).

Scrapy-free: the crawl's downloader middleware (:mod:`focused.downloadermiddlewares.binarybody`) skips such
responses, and the examples of a topic (:mod:`focused.core.examples`) skip such files. A body is binary when
its first 64 KiB hold a NUL byte (outside UTF-16/32) or, decoded with its encoding, more than
``MAX_CONTROL_RATIO`` of the characters are control characters, or more than ``MAX_UNDECODABLE_RATIO`` are
undecodable. Text that decodes with a few errors is text: a page in Latin-1 served as UTF-8 has an
undecodable byte in every accented letter, but no control characters; random bytes have about 9 % (a C0
control is one byte in any encoding), whatever the encoding they are read with.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["looks_binary"]

SAMPLE_BYTES = 65536
#: Text has almost no control characters; random bytes have about 9 % (23 of the 256 byte values).
MAX_CONTROL_RATIO = 0.02
#: Fewer control characters than this are never enough: a short page may have a stray one or two.
MIN_CONTROLS = 3
#: Undecodable bytes alone make a body binary only when they are most of it (text in another encoding than the
#: one declared has many, but keeps its markup and spaces).
MAX_UNDECODABLE_RATIO = 0.5
#: What no text has: the C0 and C1 controls other than tab, line feed, vertical tab, form feed and carriage return.
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")
#: The bytes of the C0 controls and DEL among them.
_C0_BYTES = bytes([*range(0x00, 0x09), *range(0x0E, 0x20), 0x7F])


def looks_binary(body: bytes, encoding: str) -> bool:
    """True if ``body`` (decoded as ``encoding``) is not text."""
    sample = body[:SAMPLE_BYTES]
    if not sample:
        return False
    name = encoding.lower().replace("-", "").replace("_", "")
    wide = name.startswith(("utf16", "utf32"))
    if not wide and b"\x00" in sample:
        return True
    try:
        text = sample.decode(encoding, errors="replace")
    except LookupError:
        text = sample.decode("utf-8", errors="replace")
    if not text:
        return False
    controls = _utf8_controls(sample) if name in ("utf8", "u8") else len(_CONTROL.findall(text))
    if controls >= MIN_CONTROLS and controls > MAX_CONTROL_RATIO * len(text):
        return True
    return text.count("\ufffd") > MAX_UNDECODABLE_RATIO * len(text)


def _utf8_controls(sample: bytes) -> int:
    """The control characters of ``sample`` decoded as UTF-8 (undecodable bytes replaced), counted in its bytes
    (the regex over the text took 0.1 ms a page): a C0 control or DEL is its own byte, which no multi-byte
    character holds, and a C1 control is 0xC2 then 0x80-0x9F, where the decoder always starts a character
    (0xC2 continues none)."""
    c0 = len(sample) - len(sample.translate(None, _C0_BYTES))
    if b"\xc2" not in sample:
        return c0
    u8 = np.frombuffer(sample, dtype=np.uint8)
    after = u8[1:][u8[:-1] == 0xC2]
    return c0 + int(np.count_nonzero((after >= 0x80) & (after <= 0x9F)))
