"""Near-duplicate pages: 64-bit SimHash of the visible text, and an index that finds close ones.

Plain Python and numpy, no Scrapy. Charikar's SimHash over the set of word
bigrams of the text's words as the critic reads them
(:func:`focused.page.text.tokenize`: lowercased, no numbers, no one-letter
words), with month and weekday names and every run of digits inside a word read
as ``0`` (so that pages that differ only by dates, counters or ids, a calendar's
months, come out alike);
two pages are near-duplicates when their fingerprints differ in at most ``k``
bits (Manku et al., WWW 2007, use k = 3 of 64). :class:`SimHashIndex` finds them
without comparing every pair: split into k + 1 blocks, two fingerprints within
distance k agree exactly on at least one block.
"""

from __future__ import annotations

import itertools
import re
import zlib
from collections import defaultdict

import numpy as np

from focused.page.text import tokenize
from focused.page.words import page_tokens

_DIGITS = re.compile(r"\d+")
_MONTHS = "january february march april may june july august september october november december"
_DAYS = "monday tuesday wednesday thursday friday saturday sunday"
#: Dates read as ``0`` too: English month and weekday names and their three-letter abbreviations.
_DATE_WORDS = frozenset(_MONTHS.split()) | frozenset(_DAYS.split()) | {w[:3] for w in (_MONTHS + " " + _DAYS).split()}
#: Words read per page: enough to tell pages apart.
MAX_WORDS = 3_000
#: Pages with fewer bigrams than this get no fingerprint (too little text to tell).
MIN_SHINGLES = 8


def _mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer, elementwise: spreads every input bit over all 64 output bits (a new array)."""
    x = x ^ (x >> np.uint64(30))
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def _word_hash(word: str) -> int:
    """CRC-32 (stable across processes) of the word as the fingerprint reads it: dates and digits as ``0``."""
    if word in _DATE_WORDS:
        word = "0"
    elif not word.isalpha():
        word = _DIGITS.sub("0", word)
    return zlib.crc32(word.encode("utf-8"))


def _word_hashes(words: list[str]) -> np.ndarray:
    """:func:`_word_hash` of each word."""
    return np.fromiter(map(_word_hash, words), dtype=np.uint64, count=len(words))


#: The word table's column of :func:`_word_hash` (each word hashed once per process, when first met).
_HASH_COLUMN = (("simhash", 1), _word_hashes, np.uint64)


def _bigram_hashes(word_hashes: np.ndarray) -> np.ndarray:
    """The distinct 64-bit hashes of the page's word bigrams, from its words' hashes, sorted.

    A bigram's hash mixes the pair of word hashes (SplitMix64), in numpy: no Python call per bigram.
    Two words colliding in 32 bits (one pair in ~10^6 for a 5,000-word page) only merges two votes
    of the fingerprint. Distinct by a sort and a neighbour test (``np.unique`` costs several sorts' time).
    """
    with np.errstate(over="ignore"):
        pairs = (word_hashes[:-1] << np.uint64(32)) | word_hashes[1:]
        hashes = _mix64(pairs)
    hashes.sort()
    if len(hashes) > 1:
        hashes = hashes[np.concatenate(([True], hashes[1:] != hashes[:-1]))]
    return hashes


#: Bit ``j`` of each byte value (256, 8), little-endian bit order, for counting the set bits per position
#: (float: the product of counts below 2**53 is exact and runs in BLAS).
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(np.float64)
#: Where byte ``i`` of a page's byte string of hashes tallies in one flat count of (byte position, byte
#: value) cells: ``256 * (i % 8)``, for as many hashes as a page has bigrams.
_BYTE_CELLS = np.tile(np.arange(8, dtype=np.intp) * 256, MAX_WORDS)


def _majority_bits(hashes: np.ndarray) -> int:
    """The 64-bit word whose bit ``i`` is set when more than half of ``hashes`` (a page's bigrams: fewer than
    :data:`MAX_WORDS`) have bit ``i`` set.

    Counts byte values per byte position (one ``bincount`` of 8 x 256 cells) and turns them into set-bit
    counts with a (256, 8) table: no (n, 64) bit matrix.
    """
    by_byte = hashes.astype("<u8", copy=False).view(np.uint8)
    cells = by_byte.astype(np.intp)
    cells += _BYTE_CELLS[: len(cells)]
    counts = np.bincount(cells, minlength=8 * 256).reshape(8, 256).astype(np.float64)
    set_bits = (counts @ _BYTE_BITS).ravel()  # [8 * byte + bit]: the little-endian bit position
    return int(np.packbits(2 * set_bits > len(hashes), bitorder="little").view("<u8")[0])


def fingerprint_of_word_hashes(word_hashes: np.ndarray) -> int | None:
    """The SimHash of a page from its tokens' :func:`_word_hash` values (the first :data:`MAX_WORDS` are read)."""
    word_hashes = word_hashes[:MAX_WORDS]
    # A set, not counts: one frequent bigram ("0 0" of a phone list) would otherwise decide every bit.
    hashes = _bigram_hashes(word_hashes) if len(word_hashes) > 1 else np.zeros(0, dtype=np.uint64)
    if len(hashes) < MIN_SHINGLES:
        return None
    return _majority_bits(hashes)  # a bit's vote: +1 per hash with it set, -1 per hash with it clear


def simhash(text: str) -> int | None:
    """The page's 64-bit SimHash, or ``None`` for a page with too little text."""
    # the critic's tokens, numbered once for both (focused.page.words)
    got = page_tokens(text, (_HASH_COLUMN,))
    return fingerprint_of_word_hashes(got[0] if got is not None else _word_hashes(tokenize(text)[:MAX_WORDS]))


def distance(a: int, b: int) -> int:
    """Hamming distance of two fingerprints."""
    return (a ^ b).bit_count()


class SimHashIndex:
    """Fingerprints seen so far; :meth:`add` tells whether a new one is within ``k`` bits of one of them."""

    def __init__(self, k: int = 3) -> None:
        if not 0 <= k <= 15:
            raise ValueError(f"near-duplicate distance must be 0 to 15 bits, not {k}")
        self.k = k
        edges = np.linspace(0, 64, k + 2).astype(int)
        self._blocks = [(int(lo), int(hi)) for lo, hi in itertools.pairwise(edges)]
        self._tables: list[defaultdict[int, list[int]]] = [defaultdict(list) for _ in self._blocks]
        self.size = 0

    def _keys(self, fp: int) -> list[int]:
        return [(fp >> lo) & ((1 << (hi - lo)) - 1) for lo, hi in self._blocks]

    def nearest(self, fp: int) -> int | None:
        """A stored fingerprint within ``k`` bits of ``fp``, else ``None``."""
        for table, key in zip(self._tables, self._keys(fp), strict=True):
            for other in table.get(key, ()):
                if distance(fp, other) <= self.k:
                    return other
        return None

    def add(self, fp: int) -> bool:
        """Store ``fp``; True if it is a near-duplicate of a stored one (then it is not stored again)."""
        if self.nearest(fp) is not None:
            return True
        for table, key in zip(self._tables, self._keys(fp), strict=True):
            table[key].append(fp)
        self.size += 1
        return False
