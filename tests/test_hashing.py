"""focused.page.hashing gives scikit-learn's hashed matrices exactly, cached or not."""

from __future__ import annotations

import random
import string

import numpy as np
import pytest
from sklearn.feature_extraction import FeatureHasher
from sklearn.feature_extraction.text import HashingVectorizer

from focused.learning.apprentice.features import compact_many
from focused.page.hashing import FeatureIds
from focused.page.text import tokenize
from focused.page.words import hashed_counts as _hash_texts


def _lists(seed: int = 0) -> list[list[str]]:
    rng = random.Random(seed)
    alphabet = string.ascii_letters + "éü中@:-0123456789"
    lists = [
        ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(0, 30))]
        for _ in range(200)
    ]
    return [*lists, ["a", "a", "b"], []]


@pytest.mark.parametrize("n_features", [2**20, 2**18, 1000, 7])
def test_counts_equal_feature_hasher(n_features: int) -> None:
    lists = _lists()
    expected = FeatureHasher(n_features=n_features, input_type="string", alternate_sign=False).transform(lists)
    ids = FeatureIds(n_features, max_cached=50)  # a small cache: cleared several times on the way
    for _ in range(2):  # computed, then (partly) cached
        got = ids.counts(lists)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert np.array_equal(got.indptr, expected.indptr) and np.array_equal(got.indices, expected.indices)
        assert np.array_equal(got.data, expected.data)


def test_long_strings_are_hashed_each_time_not_remembered() -> None:
    """The cache is bounded by its strings' count; a hostile page's megabyte "word" would make that gigabytes."""
    from focused.page.hashing import MAX_CACHED_CHARS

    ids = FeatureIds(2**20)
    long, short = "x" * (MAX_CACHED_CHARS + 1), "y" * MAX_CACHED_CHARS
    assert ids.ids([long, short, long]) == [ids._one(long), ids._one(short), ids._one(long)]
    assert list(ids._ids) == [short]


def test_sorted_rows_repeat_ids_per_occurrence() -> None:
    lists = _lists(1)
    X = FeatureHasher(n_features=2**20, input_type="string", alternate_sign=False).transform(lists)
    rows = compact_many(lists)
    assert len(rows) == len(lists)
    for i, row in enumerate(rows):
        start, end = X.indptr[i], X.indptr[i + 1]
        assert row.dtype == np.int32
        assert np.array_equal(row, np.repeat(X.indices[start:end], X.data[start:end].astype(int)))


def test_texts_equal_hashing_vectorizer() -> None:
    texts = ["CS 415: Operating Systems, Fall 1996", "", "Physik und Mathematik — Ångström", "a b c cs cs cs"]
    vectorizer = HashingVectorizer(
        n_features=2**18, alternate_sign=False, norm=None, tokenizer=tokenize, lowercase=False, token_pattern=None
    )
    expected = vectorizer.transform(texts)
    got = _hash_texts(texts, 2**18)
    assert (got != expected).nnz == 0 and np.array_equal(got.indices, expected.indices)


def test_the_hash_is_scikit_learns_murmurhash3() -> None:
    """The ids come from ``mmh3`` (no scikit-learn import in the analysis worker): the same signed
    MurmurHash3 of the UTF-8 bytes as scikit-learn's ``murmurhash3_32(f, seed=0)``."""
    from mmh3 import hash as mmh3_hash
    from sklearn.utils import murmurhash3_32

    words = [w for lst in _lists(5) for w in lst] + ["", "the@-1", "naïve", "中文@3", "\x00", "a" * 1000]
    assert [mmh3_hash(w, 0, True) for w in words] == [murmurhash3_32(w, seed=0) for w in words]
    assert FeatureIds(2**20).uncached(words) == [abs(murmurhash3_32(w, seed=0)) % 2**20 for w in words]
