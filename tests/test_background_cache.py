"""The shipped corpora's texts kept for the next critic from examples (:func:`focused.core.background.corpus_texts`):
read back as written, or read from the corpus again; never a partial file, never a crawl stopped by the cache."""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from focused.core import background as bg

PAGES = {
    "webkb": [(f"http://univ.test/{i}", f"course page {i} homework syllabus") for i in range(40)],
    "wiki": [(f"http://wiki.test/{i}", f"article {i} \u00e9t\u00e9 planets\nsecond line") for i in range(60)],
}


@pytest.fixture
def corpora(monkeypatch, tmp_path) -> dict[str, int]:
    """The two corpora as small lists of pages, each reading counted; their kept files under ``tmp_path``."""
    reads = {"webkb": 0, "wiki": 0}

    def texts(source: str) -> Iterator[tuple[str, str]]:
        reads[source] += 1
        yield from PAGES[source]

    monkeypatch.setattr(bg, "background_texts", texts)
    monkeypatch.setattr(bg, "_texts_path", lambda source, cache: cache / f"background-{source}-1-2-code-v1.jsonl.gz")
    return reads


def test_the_texts_are_kept_once_every_page_went_by_and_read_back_as_they_were(corpora, tmp_path):
    cache = tmp_path / "cache"
    first = bg.read_background(["webkb", "wiki"], 30, 0, cache=cache)
    assert sorted(p.name for p in cache.iterdir()) == [
        "background-webkb-1-2-code-v1.jsonl.gz", "background-wiki-1-2-code-v1.jsonl.gz"
    ]  # fmt: skip
    again = bg.read_background(["webkb", "wiki"], 30, 0, cache=cache)
    assert corpora == {"webkb": 1, "wiki": 1}  # the second sample read the kept files, not the corpora
    assert again == first == bg.read_background(["webkb", "wiki"], 30, 0)  # the sample without a cache
    assert list(bg.corpus_texts("wiki", cache)) == PAGES["wiki"]


def test_a_reading_stopped_early_keeps_nothing(corpora, tmp_path):
    cache = tmp_path / "cache"
    pages = bg.corpus_texts("wiki", cache)
    assert next(pages) == PAGES["wiki"][0]
    pages.close()  # the consumer stopped (or failed): no file, no temporary file left
    assert list(cache.iterdir()) == []
    assert list(bg.corpus_texts("wiki", cache)) == PAGES["wiki"] and len(list(cache.iterdir())) == 1


@pytest.mark.parametrize(
    "damage",
    [
        lambda lines: lines[: len(lines) // 2],  # cut short: no count at the end
        lambda lines: [lines[0], *lines[1:-1], json.dumps({"pages": 59})],  # a count that does not match
        lambda lines: [json.dumps({"format": "focused-background-texts", "version": 2, "source": "wiki"}), *lines[1:]],
        lambda lines: [lines[0], json.dumps(["http://wiki.test/0", 7]), *lines[2:]],  # not a page
        lambda lines: [*lines, lines[1]],  # a page after the count
    ],
)
def test_a_damaged_file_is_removed_and_the_corpus_read_again(corpora, tmp_path, caplog, damage):
    cache = tmp_path / "cache"
    expected = bg.read_background(["webkb", "wiki"], 30, 0, cache=cache)
    kept = cache / "background-wiki-1-2-code-v1.jsonl.gz"
    lines = gzip.decompress(kept.read_bytes()).decode("utf-8").splitlines()
    kept.write_bytes(gzip.compress(("\n".join(damage(lines)) + "\n").encode("utf-8")))
    with caplog.at_level(logging.WARNING, logger="focused.core.background"):
        assert bg.read_background(["webkb", "wiki"], 30, 0, cache=cache) == expected
    assert "is not as it was written" in caplog.text
    assert corpora == {"webkb": 1, "wiki": 2}  # the wiki read again, and kept again
    assert list(bg.corpus_texts("wiki", cache)) == PAGES["wiki"]


def test_bytes_that_are_not_gzip_are_a_damaged_file(corpora, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "background-wiki-1-2-code-v1.jsonl.gz").write_bytes(b"\x80\x04 not a kept file")
    assert bg.read_background(["wiki"], 30, 0, cache=cache) == bg.read_background(["wiki"], 30, 0)


def test_a_folder_that_cannot_keep_them_is_logged_and_the_pages_go_on(corpora, tmp_path, caplog):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="focused.core.background"):
        assert list(bg.corpus_texts("webkb", blocked / "cache")) == PAGES["webkb"]
    assert "cannot keep its texts" in caplog.text


def test_the_file_is_named_by_the_corpus_and_the_code_that_reads_it(monkeypatch, tmp_path):
    from focused.corpora import corpora_dir

    if not (corpora_dir() / "wikispeedia.tar.gz").exists():
        pytest.skip(f"no corpora at {corpora_dir()}")
    name = bg._texts_path("wiki", tmp_path)
    assert name is not None and name.parent == tmp_path and name.name.startswith("background-wiki-")
    text_module = Path(bg.__file__).parent.parent / "page" / "text.py"
    original = Path.read_bytes

    def changed(path: Path) -> bytes:  # as if the code that makes a page's text had changed
        return original(path) + (b"# changed" if path == text_module else b"")

    monkeypatch.setattr(Path, "read_bytes", changed)
    assert bg._texts_path("wiki", tmp_path) not in (None, name)
