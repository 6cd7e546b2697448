"""The near-duplicate fingerprint: the vectorized SimHash gives the values of the plain definition and of
the fingerprints already stored in crawl databases (which compare against new ones)."""

from __future__ import annotations

import itertools
import random
import zlib

import numpy as np
import pytest

from focused.page import simhash as sh
from focused.page import words as wordtable

VOCAB = "alpha beta gamma delta épsilon zeta eta théta iota kappa lambda mu März 1999 x2y3 Monday Oct quark".split()


#: Words enough that a page's bigrams are nearly all distinct (as many hashes as a page can have).
LARGE_VOCAB = [f"w{a}{b}" for a in "abcdefghijklmnopqrstuvwxyz" for b in "abcdefghijklmnopqrstuvwxyz"]


def _text(seed: int, n: int, vocab: list[str] = VOCAB) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(vocab) + ("." if rng.random() < 0.1 else "") for _ in range(n))


def _plain_simhash(text: str) -> int | None:
    """The definition, one Python step at a time: word hashes, the set of bigram hashes, a vote per bit."""
    words = sh.tokenize(text)[: sh.MAX_WORDS]
    hashes = [sh._word_hash(w) for w in words]
    mask = (1 << 64) - 1
    bigrams = set()
    for a, b in itertools.pairwise(hashes):
        x = (a << 32) | b
        x ^= x >> 30
        x = (x * 0xBF58476D1CE4E5B9) & mask
        x ^= x >> 27
        x = (x * 0x94D049BB133111EB) & mask
        bigrams.add(x ^ (x >> 31))
    if len(bigrams) < sh.MIN_SHINGLES:
        return None
    return sum(1 << i for i in range(64) if 2 * sum(h >> i & 1 for h in bigrams) > len(bigrams))


@pytest.mark.parametrize(("seed", "n"), [(1, 40), (2, 900), (3, 5000), (4, 3), (5, 12)])
def test_the_fingerprint_is_the_plain_definition(seed: int, n: int) -> None:
    text = _text(seed, n)
    assert sh.simhash(text) == _plain_simhash(text)


@pytest.mark.parametrize("n", [sh.MAX_WORDS - 1, sh.MAX_WORDS, 2 * sh.MAX_WORDS])
def test_the_fingerprint_of_a_page_of_distinct_bigrams_is_the_plain_definition(n: int) -> None:
    text = _text(7, n, LARGE_VOCAB)
    assert len(set(itertools.pairwise(sh.tokenize(text)[: sh.MAX_WORDS]))) > 0.9 * (min(n, sh.MAX_WORDS) - 1)
    assert sh.simhash(text) == _plain_simhash(text)


# Values of the fingerprint before it was vectorized (crawl databases store them): they must not change.
@pytest.mark.parametrize(
    ("seed", "n", "stored"), [(1, 40, 0xF501EE28A5D37EAE), (2, 900, 0xF614E678C5DE1E1D), (3, 5000, 0xF4166658C5DE1605)]
)
def test_fingerprints_stored_before_still_compare(seed: int, n: int, stored: int) -> None:
    assert sh.simhash(_text(seed, n)) == stored


def test_the_fingerprint_of_word_hashes_reads_the_first_words_only() -> None:
    text = _text(6, 2 * sh.MAX_WORDS)
    hashes = np.array([sh._word_hash(w) for w in sh.tokenize(text)], dtype=np.uint64)
    assert sh.fingerprint_of_word_hashes(hashes) == sh.fingerprint_of_word_hashes(hashes[: sh.MAX_WORDS])
    assert sh.fingerprint_of_word_hashes(hashes) == _plain_simhash(text)
    assert sh.fingerprint_of_word_hashes(hashes[:5]) is None  # too few bigrams


def test_the_word_table_numbers_new_words_in_one_order(monkeypatch: pytest.MonkeyPatch) -> None:
    table = wordtable.WordTable(max_words=50)
    monkeypatch.setattr(wordtable, "_table", table)
    first = _text(7, 200)
    assert sh.simhash(first) == _plain_simhash(first)
    rows = dict(table._row)
    second = first + " neutrino boson"
    assert sh.simhash(second) == _plain_simhash(second)
    assert {w: table._row[w] for w in rows} == rows  # old words keep their numbers
    assert table._row["neutrino"] < table._row["boson"]  # new ones numbered in the order the text has them
    assert zlib.crc32(b"boson") == int(table._columns[("simhash", 1)][table._row["boson"]])
