"""The word table: the critic's tokens and their per-word values, numbered once per process."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from focused.page import words as wordtable
from focused.page.hashing import FeatureIds
from focused.page.text import tokenize
from focused.page.words import WordTable, hashed_counts
from focused.page.words import hashed_counts as _hash_texts

TEXTS = [
    "CS 415: Operating Systems, Fall 1996 (e-mail CS415-TAs)",
    "snake_case words_split at_underscores, a b c 1 22 333 x1",
    "Physik und Mathematik — Ångström, naïve 中文 ΣΥΣΤΗΜΑ",
    "",
    "the the the The THE tHe",
]

WORDS = (lambda words: [f"<{w}>" for w in words], object)  # a column that spells each word back


def _column(n: int) -> tuple[str, object, object]:
    return ("len", lambda words: [len(w) * n for w in words], np.int64)


def test_tokens_are_tokenizes_and_columns_hold_each_words_value() -> None:
    table = WordTable()
    for text in TEXTS * 2:  # the second round from the numbers already given
        (spelled, lengths) = table.tokens(text, [("spell", *WORDS), _column(1)])
        assert list(spelled) == [f"<{w}>" for w in tokenize(text)]
        assert lengths.tolist() == [len(w) for w in tokenize(text)]


def test_a_full_table_starts_afresh_and_a_text_too_large_for_it_gets_none() -> None:
    table = WordTable(max_words=9)  # the mark between texts takes one number
    first = "alpha beta gamma delta epsilon"
    (lengths,) = table.tokens(first, [_column(2)])
    assert lengths.tolist() == [10, 8, 10, 10, 14] and len(table) == 6
    (lengths,) = table.tokens("zeta eta theta iota", [_column(2)])  # 6 + 4 > 9: cleared first
    assert lengths.tolist() == [8, 6, 10, 8] and len(table) == 5
    (lengths,) = table.tokens(first, [_column(2)])  # renumbered, values computed again, the same
    assert lengths.tolist() == [10, 8, 10, 10, 14] and len(table) == 6
    assert table.tokens(" ".join(f"w{i}x" for i in range(10)), [_column(2)]) is None
    assert table.tokens_of_many(["a", " ".join(f"w{i}x" for i in range(10))], [_column(2)]) is None
    (lengths,) = table.tokens("zeta eta", [_column(2)])
    assert lengths.tolist() == [8, 6]


def test_a_table_holds_at_most_max_chars_of_words() -> None:
    """Counted in words alone, a site's pages of distinct megabyte "words" (a hostile page's run of letters) were
    all kept: the table starts afresh past MAX_CHARS characters too, and a text of more gets None."""
    table = WordTable(max_chars=30)  # the mark between texts takes one character
    first = "alpha beta gamma delta epsilon"  # 26 characters of words
    (lengths,) = table.tokens(first, [_column(2)])
    assert lengths.tolist() == [10, 8, 10, 10, 14] and len(table) == 6
    (lengths,) = table.tokens("zeta eta", [_column(2)])  # 27 + 7 > 30: cleared first
    assert lengths.tolist() == [8, 6] and len(table) == 3
    assert table.tokens("x" * 31, [_column(2)]) is None and len(table) == 3


def test_long_texts_are_looked_up_and_hashed_a_piece_at_a_time_to_the_same_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A text of many words is looked up, and its new words hashed, a piece at a time (each piece a loop in C that
    holds the GIL; the reactor's thread runs between pieces): the same values as in one piece."""
    from focused.page import hashing

    text = " ".join(TEXTS * 5 + [f"w{i}x" for i in range(40)] + TEXTS)
    ids = FeatureIds(2**20)
    whole = WordTable().tokens(text, [("spell", *WORDS), ("ids", ids.uncached_array, np.int64)])
    strings = [f"s{i}@{i % 11}" for i in range(23)]
    one_piece = ids.uncached_array(strings)
    monkeypatch.setattr(wordtable, "LOOKUP_CHUNK", 7)
    monkeypatch.setattr(hashing, "HASH_CHUNK", 5)
    pieces = WordTable().tokens(text, [("spell", *WORDS), ("ids", ids.uncached_array, np.int64)])
    assert list(pieces[0]) == list(whole[0]) and pieces[1].tolist() == whole[1].tolist()
    assert ids.uncached_array(strings).tolist() == one_piece.tolist() == [ids._one(f) for f in strings]
    assert ids.uncached_array(iter(strings)).tolist() == one_piece.tolist()  # any iterable, as before


def test_strings_hashed_from_an_iterator_are_made_a_piece_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The link features' new words give 11 strings each ("{word}@{d}"): a page of 600,000 new words held 6.6
    million strings at once (hundreds of MB). Hashed from an iterator, they are made as they are hashed: never
    more than a piece alive at once; the same ids."""
    from focused.page import hashing

    class Counted(str):
        alive = most = 0

        def __new__(cls, value: str) -> Counted:
            Counted.alive += 1
            Counted.most = max(Counted.most, Counted.alive)
            return super().__new__(cls, value)

        def __del__(self) -> None:
            Counted.alive -= 1

    monkeypatch.setattr(hashing, "HASH_CHUNK", 5)
    ids = FeatureIds(2**20)
    plain = [f"w{i}@{i % 11}" for i in range(23)]
    got = ids.uncached_array(Counted(s) for s in plain)
    assert got.tolist() == [ids._one(s) for s in plain] and got.dtype == np.int64
    assert Counted.most <= 5 + 1 and Counted.alive == 0
    assert ids.uncached_array(iter([])).tolist() == []


def test_many_texts_at_once_are_each_texts_tokens_with_its_index() -> None:
    table = WordTable()
    texts = [*TEXTS, "with\x01the mark", "", "x", "last one"]
    (spelled,), text_of = table.tokens_of_many(texts, [("spell", *WORDS)])
    expected = [(i, f"<{w}>") for i, text in enumerate(texts) for w in tokenize(text.replace("\x01", " "))]
    assert list(zip(text_of.tolist(), spelled, strict=True)) == expected
    (none,), text_of = table.tokens_of_many([], [("spell", *WORDS)])
    assert len(none) == len(text_of) == 0


@pytest.mark.parametrize("max_words", [wordtable.MAX_WORDS, 6])
def test_critic_counts_equal_the_tally_of_tokenize(monkeypatch: pytest.MonkeyPatch, max_words: int) -> None:
    monkeypatch.setattr(wordtable, "_table", WordTable(max_words=max_words))
    ids = FeatureIds(2**18)
    rng = np.random.default_rng(3)
    vocab = [w for text in TEXTS for w in text.split()] + [f"w{i}" for i in range(40)]
    texts = TEXTS + [" ".join(rng.choice(vocab, int(rng.integers(0, 60)))) for _ in range(30)]
    expected = ids.counts([tokenize(text) for text in texts])
    for batch in (texts, texts[:1], texts[3:4], []):
        got = _hash_texts(batch, 2**18)
        want = ids.counts([tokenize(text) for text in batch])
        assert got.shape == want.shape and (got != want).nnz == 0
        assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)
    assert (_hash_texts(texts, 2**18) != expected).nnz == 0


def test_threads_reading_pages_at_once_get_each_their_own_tokens() -> None:
    table = WordTable(max_words=50)  # small: the threads clear it under each other
    texts = [" ".join(f"t{k}w{i}" for i in range(k, k + 20)) for k in range(12)]
    errors: list[str] = []

    def read(text: str) -> None:
        for _ in range(200):
            (spelled,) = table.tokens(text, [("spell", *WORDS)])
            if list(spelled) != [f"<{w}>" for w in tokenize(text)]:
                errors.append(text)
                return

    threads = [threading.Thread(target=read, args=(text,)) for text in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors


def test_extra_texts_count_in_the_rows_of_their_texts() -> None:
    texts = ["course syllabus course", "student home", ""]
    extra = ["urlwcourses urlsdir", "", "urlwhomes course"]
    joined = [f"{t}\n{e}" for t, e in zip(texts, extra, strict=True)]
    for n_features in (2**10, 2**18):
        want = hashed_counts(joined, n_features).toarray()
        assert np.array_equal(hashed_counts(texts, n_features, extra).toarray(), want)
        one = hashed_counts(texts[:1], n_features, extra[:1]).toarray()  # the one-page path
        assert np.array_equal(one, want[:1])
