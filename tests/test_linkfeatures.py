"""DOM-offset link features: leaf numbering, URLs, extra families, hashing."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from focused.learning.apprentice.countmatrix import from_compact
from focused.learning.apprentice.features import (
    PageLinks,
    class_features,
    cocitation_features,
    compact,
    compact_many,
    extract_link_features,
    hash_features,
    tokenize,
)

BASE = "http://www.example.edu/dept/index.html"


def feats(html: str | bytes, url: str = "http://www.example.edu/dept/x.html", **kw) -> list[str]:
    page = extract_link_features(html, BASE, **kw)
    assert url in page.urls, page.urls
    return page.features[page.urls.index(url)]


# --- leaf numbering and offsets -------------------------------------------------------------


def test_paper_figure_3_layout():
    html = (
        "<html><body><ul>"
        "<li>text1 <a href='x.html'><em>an</em> chor</a> text2</li>"
        "<li>next <a href='y.html'>other</a></li>"
        "</ul></body></html>"
    )
    # leaves: 0 "text1", 1 "an", 2 "chor", 3 "text2", 4 "next", 5 "other"
    assert feats(html) == ["text1@-1", "an@0", "chor@0", "text2@1", "next@2", "other@3"]
    assert feats(html, "http://www.example.edu/dept/y.html") == [
        "text1@-5",
        "an@-4",
        "chor@-3",
        "text2@-2",
        "next@-1",
        "other@0",
    ]


def test_nested_inline_tags_inside_anchor_are_all_at_offset_zero():
    html = "<p>left <a href='x.html'><b>bold <i>italic</i></b> plain <span>span</span></a> right</p>"
    assert feats(html) == ["left@-1", "bold@0", "italic@0", "plain@0", "span@0", "right@1"]


def test_empty_leaves_take_a_number_and_shift_offsets():
    with_empty = "<p>before<br><img src='i.gif'><a href='x.html'>link</a><hr>after</p>"
    without = "<p>before<a href='x.html'>link</a>after</p>"
    assert feats(with_empty) == ["before@-3", "link@0", "after@2"]
    assert feats(without) == ["before@-1", "link@0", "after@1"]


def test_whitespace_only_text_is_not_a_leaf():
    compact_html = "<ul><li><a href='x.html'>one</a></li><li>two</li></ul>"
    pretty = "<ul>\n  <li>\n    <a href='x.html'>one</a>\n  </li>\n  <li>two</li>\n</ul>\n"
    assert feats(compact_html) == feats(pretty) == ["one@0", "two@1"]


def test_empty_anchor_is_its_own_leaf():
    page = extract_link_features("<p>left</p><a href='x.html'></a><p>right</p>", BASE)
    assert page.spans == [[(1, 1)]]
    assert page.features == [["left@-1", "right@1"]]
    assert page.anchors == [""]


def test_image_link_spans_its_image_leaf():
    page = extract_link_features("<p>see <a href='x.html'><img src='a.gif'></a> here</p>", BASE)
    assert page.spans == [[(1, 1)]]
    assert page.features == [["see@-1", "here@1"]]


def test_d_max_cuts_off_far_leaves():
    left = "".join(f"<p>left{i}</p>" for i in range(6, 0, -1))
    right = "".join(f"<p>right{i}</p>" for i in range(1, 7))
    html = f"{left}<a href='x.html'>anchor</a>{right}"
    f2 = feats(html, d_max=2)
    assert f2 == ["left2@-2", "left1@-1", "anchor@0", "right1@1", "right2@2"]
    f5 = feats(html)
    assert "left5@-5" in f5 and "right5@5" in f5
    assert not any(f.startswith(("left6", "right6")) for f in f5)
    assert feats(html, d_max=0) == ["anchor@0"]


def test_table_flattens_row_major():
    html = (
        "<table><tr><td>r1c1</td><td>r1c2</td></tr>"
        "<tr><td>r2c1</td><td><a href='x.html'>cell</a></td></tr>"
        "<tr><td>r3c1</td></tr></table>"
    )
    assert feats(html) == ["r1c1@-3", "r1c2@-2", "r2c1@-1", "cell@0", "r3c1@1"]


def test_script_style_and_comments_are_not_leaves():
    html = (
        "<html><head><style>.nav { color: red }</style><script>var hidden = 1;</script></head>"
        "<body><p>left</p><script>document.write('nope')</script><!-- secret -->"
        "<a href='x.html'>link</a><?php echo ?><p>right</p></body></html>"
    )
    f = feats(html)
    assert f == ["left@-1", "link@0", "right@1"]


def test_malformed_html_is_repaired_not_fatal():
    html = "<html><body><p>intro <b>bold <a href='x.html'>link<p>after <td>cell"
    f = feats(html)
    assert "intro@-2" in f and "bold@-1" in f and "link@0" in f


@pytest.mark.parametrize(
    "doc",
    ["", "   \n", b"", b"\x00\x01\x02", b"\xff\xfe\xfa garbage", "<!-- only a comment -->", "<html>", None],
)
def test_degenerate_documents_give_an_empty_result(doc):
    page = extract_link_features(doc, BASE)
    assert isinstance(page, PageLinks)
    assert page.urls == [] and page.features == []


def test_page_without_links():
    page = extract_link_features("<p>just some text</p>", BASE)
    assert len(page) == 0 and page.n_leaves == 1


# --- URLs --------------------------------------------------------------------------------------


def test_url_linked_twice_unions_features_with_counts():
    html = (
        "<p>alpha</p><a href='x.html'>first</a><p>beta</p>"
        "<p>beta</p><a href='x.html#section'>second</a><p>gamma</p>"
        "<a href='/dept/x.html'>first</a>"
    )
    page = extract_link_features(html, BASE, d_max=1)
    assert page.urls == ["http://www.example.edu/dept/x.html"]
    counts = Counter(page.features[0])
    assert counts["beta@1"] == 1 and counts["beta@-1"] == 1
    assert counts["first@0"] == 2 and counts["second@0"] == 1
    assert counts["alpha@-1"] == 1
    assert counts["gamma@1"] == 1 and counts["gamma@-1"] == 1  # right of the 2nd link, left of the 3rd
    assert page.anchors == ["first | second"]
    assert page.spans == [[(1, 1), (4, 4), (6, 6)]]


def test_relative_urls_resolve_against_base_href():
    html = (
        "<html><head><base href='http://mirror.example.org/pub/'></head>"
        "<body><a href='a.html'>a</a><a href='../b.html'>b</a><a href='/c.html'>c</a>"
        "<a href='https://other.example.com/d'>d</a><a href='//cdn.example.net/e'>e</a></body></html>"
    )
    page = extract_link_features(html, BASE)
    assert page.urls == [
        "http://mirror.example.org/pub/a.html",
        "http://mirror.example.org/b.html",
        "http://mirror.example.org/c.html",
        "https://other.example.com/d",
        "http://cdn.example.net/e",
    ]


def test_relative_urls_without_base_use_page_url():
    page = extract_link_features("<a href='sub/p.html'>p</a><a href=''>self</a>", BASE)
    assert page.urls == ["http://www.example.edu/dept/sub/p.html", BASE]


def test_non_http_schemes_and_fragments():
    html = (
        "<a href='mailto:someone@example.edu'>mail</a>"
        "<a href='javascript:void(0)'>js</a>"
        "<a href='ftp://ftp.example.edu/pub'>ftp</a>"
        "<a href='news:comp.lang'>news</a>"
        "<a href='#top'>top</a>"
        "<a name='anchor-without-href'>target</a>"
        "<map><area href='map.html' alt='region'></map>"
        "<a href='x.html#frag'>x</a>"
    )
    page = extract_link_features(html, BASE)
    assert page.urls == [BASE, "http://www.example.edu/dept/map.html", "http://www.example.edu/dept/x.html"]


def test_non_link_anchors_still_count_as_leaves():
    html = "<a href='mailto:a@example.edu'>mail</a><a href='x.html'>link</a>"
    assert feats(html) == ["mail@-1", "link@0"]


# --- text and encodings ---------------------------------------------------------------------


def test_tokenize():
    text = "The CS-414 course, 1996: Café_au_lait x 42 4u ÉCOLE"
    assert tokenize(text) == ["the", "cs", "course", "café", "au", "lait", "4u", "école"]
    assert tokenize("") == [] and tokenize(" 12 ; - ") == []


def test_bytes_latin1_without_declaration():
    html = "<p>Université</p><a href='x.html'>Résumé</a>".encode("latin-1")
    assert feats(html) == ["université@-1", "résumé@0"]


def test_bytes_utf8_without_declaration():
    html = "<p>Université</p><a href='x.html'>Жук</a>".encode()
    assert feats(html) == ["université@-1", "жук@0"]


def test_bytes_with_declared_charset_and_explicit_encoding():
    body = "<html><head><meta charset='windows-1251'></head><body><a href='x.html'>Жук</a></body></html>"
    assert feats(body.encode("cp1251")) == ["жук@0"]
    no_meta = "<a href='x.html'>Жук</a>".encode("koi8-r")
    assert feats(no_meta, encoding="koi8-r") == ["жук@0"]


def test_str_with_xml_declaration():
    html = "<?xml version='1.0' encoding='iso-8859-1'?><html><body><a href='x.html'>link</a></body></html>"
    assert feats(html) == ["link@0"]


def test_offsets_false_gives_plain_tokens():
    html = "<p>left</p><a href='x.html'>link</a><p>right</p><p>far</p>"
    assert feats(html, offsets=False, d_max=1) == ["left", "link", "right"]


# --- extra feature families -------------------------------------------------------------------


def test_class_features_with_prefixes():
    assert class_features(["Science.Physics.Astro", "Science.Chemistry"]) == [
        "cls:",
        "cls:Science",
        "cls:Science.Physics",
        "cls:Science.Physics.Astro",
        "cls:Science.Chemistry",
    ]
    assert class_features([]) == ["cls:"]


def test_cocitation_features():
    html = (
        "<ul><li><a href='a.html'>a1</a></li><li><a href='b.html'>b1</a></li>"
        "<li><a href='c.html'>c1</a></li><li>gap</li><li>gap</li><li><a href='d.html'>d1</a></li></ul>"
    )
    page = extract_link_features(html, BASE, d_max=2)
    u = {n: f"http://www.example.edu/dept/{n}.html" for n in "abcd"}
    relevance = {u["a"]: 0.9, u["c"]: 0.1}
    cc = page.cocitation_features(relevance)
    by_url = dict(zip(page.urls, cc, strict=True))
    assert by_url[u["a"]] == ["cocite:LOW@2"]  # a is known but never its own sibling
    assert sorted(by_url[u["b"]]) == ["cocite:HIGH@-1", "cocite:LOW@1"]
    assert by_url[u["c"]] == ["cocite:HIGH@-2"]
    assert by_url[u["d"]] == []  # c is 3 leaves away, beyond d_max=2
    assert cocitation_features(page, relevance, d_max=3)[3] == ["cocite:LOW@-3"]
    assert cocitation_features(page, {}, d_max=3) == [[], [], [], []]


# --- hashing --------------------------------------------------------------------------------


def test_hashing_compact_round_trip():
    lists = [["course@0", "home@-1", "course@0"], [], ["cls:", "cocite:HIGH@1"]]
    X = hash_features(lists, n_features=2**12)
    assert X.shape == (3, 2**12)
    assert X.sum() == 5 and X.data.min() > 0
    arrays = compact_many(lists, n_features=2**12)
    assert [a.dtype for a in arrays] == [np.int32] * 3
    assert [len(a) for a in arrays] == [3, 0, 2]
    assert np.array_equal(compact(lists[0], n_features=2**12), arrays[0])
    assert (from_compact(arrays, n_features=2**12) != X).nnz == 0
    assert hash_features([], n_features=16).shape == (0, 16)
    with pytest.raises(ValueError):
        from_compact([np.array([16], dtype=np.int32)], n_features=16)


def test_hash_ids_are_fixed_values():
    # Python's salted hash() would change these in every process; MurmurHash3 with seed 0 must not,
    # or stored frontier entries and saved models would silently stop matching.
    assert compact(["course@0", "home@-1", "cls:Science"], 2**20).tolist() == [316961, 696281, 1000695]


def _pages_for_ids() -> list[tuple[str, str]]:
    """Pages with repeated targets, empty anchors, nested anchors, <base>, links near the edges."""
    body = "".join(
        f'<p>Item {i} of the <b>course</b> list <a href="/c{i % 7}.html">CS {i} Operating systems</a> '
        f'and <a href="#top"></a><a href="mailto:x@y.test">mail</a> text after {i}</p>'
        for i in range(30)
    )
    return [
        ("http://a.test/dept/", f"<html><head><title>Dept</title></head><body>{body}</body></html>"),
        (
            "http://b.test/x/y.html",
            '<base href="http://b.test/base/"><a href="z">z<a href="q">nested</a></a> lone words'
            '<table><tr><td><a href="t1">one</a></td><td></td><td><a href="t1">one again</a></td></tr></table>',
        ),
        ("http://c.test/", "<p>no links at all, just text</p>"),
        # a character reference to U+0001, the mark the leaves are joined with: read leaf by leaf
        ("http://e.test/", '<p>before&#1;after 12 x</p><a href="/m">mark&#1;inside</a><p>tail words</p>'),
        ("http://d.test/", '<a href="/only">only</a>'),
    ]


@pytest.mark.parametrize("d_max", [0, 2, 5])
def test_page_link_ids_equal_the_hashed_feature_strings(d_max: int) -> None:
    from focused.learning.apprentice.features import class_features, compact_many, extract_link_features
    from focused.learning.apprentice.linkids import page_link_ids, with_extra
    from focused.page.hashing import FeatureIds
    from focused.page.parse import parse_page

    extra = class_features(["Science.Physics", "Science.Chemistry"])
    for n_features in (2**20, 1024):
        for url, html in _pages_for_ids():
            page = extract_link_features(html, url, d_max=d_max)
            urls, ids, anchors = page_link_ids(parse_page(html), url, d_max, n_features)
            assert urls == page.urls and anchors == page.anchors
            expected = compact_many([f + extra for f in page.features] + [extra], n_features)
            extra_ids = np.asarray(FeatureIds(n_features).ids(extra), dtype=np.int32)
            got = with_extra([*ids, None], extra_ids)
            assert len(got) == len(expected)
            for a, b in zip(got, expected, strict=True):
                assert a.dtype == np.int32 and np.array_equal(a, b)
            # without page-level ids (the default): the rows as they come, already in payload form
            plain = compact_many([*page.features, []], n_features)
            got = with_extra([*ids, None], np.zeros(0, np.int32))
            for a, b in zip(got, plain, strict=True):
                assert a.dtype == np.int32 and np.array_equal(a, b)


@pytest.mark.parametrize("max_words", [5, 40])
def test_page_link_ids_are_the_same_when_the_word_table_fills_up(
    monkeypatch: pytest.MonkeyPatch, max_words: int
) -> None:
    # the offsets' ids are columns of the process's word table: a full table starts afresh, and a page of
    # more words than it holds is numbered in a table of its own; the ids stay the same
    from focused.learning.apprentice.linkids import page_link_ids
    from focused.page import words as wordtable
    from focused.page.parse import parse_page

    pages = [(url, parse_page(html)) for url, html in _pages_for_ids()]
    want = [[row.tolist() for row in page_link_ids(parsed, url, 3, 2**20)[1]] for url, parsed in pages]
    monkeypatch.setattr(wordtable, "_table", wordtable.WordTable(max_words=max_words))
    for _ in range(2):
        got = [[row.tolist() for row in page_link_ids(parsed, url, 3, 2**20)[1]] for url, parsed in pages]
        assert got == want


def test_link_ids_cross_to_the_crawl_process_as_two_arrays() -> None:
    import pickle

    from focused.learning.apprentice.linkids import RaggedIds, page_link_ids
    from focused.page.parse import parse_page

    for url, html in _pages_for_ids():
        urls, ids, _ = page_link_ids(parse_page(html), url, 3, 2**20)
        if not urls:
            continue
        assert isinstance(ids, RaggedIds) and len(ids) == len(urls)
        rows = list(ids)
        assert [ids[i].tolist() for i in range(len(ids))] == [r.tolist() for r in rows]
        assert [r.tolist() for r in ids[1:]] == [r.tolist() for r in rows[1:]]
        assert ids[-1].tolist() == rows[-1].tolist()
        with pytest.raises(IndexError):
            ids[len(ids)]
        back = pickle.loads(pickle.dumps(ids, protocol=pickle.HIGHEST_PROTOCOL))
        assert [r.tolist() for r in back] == [r.tolist() for r in rows]
    ragged = RaggedIds(np.arange(5, dtype=np.int32), np.array([0, 2, 2, 5]))
    assert [r.tolist() for r in ragged] == [[0, 1], [], [2, 3, 4]]
    many = RaggedIds(np.zeros(100, dtype=np.int32), np.arange(101))
    flat_size = len(pickle.dumps((many.flat, many.bounds), protocol=pickle.HIGHEST_PROTOCOL))
    assert len(pickle.dumps(many, protocol=pickle.HIGHEST_PROTOCOL)) < flat_size + 100  # two arrays, not 100


def test_page_link_ids_are_the_same_from_many_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import threading

    from focused.learning.apprentice.linkids import page_link_ids
    from focused.page import words as wordtable
    from focused.page.parse import parse_page

    pages = [(url, parse_page(html)) for url, html in _pages_for_ids()]
    want = [[row.tolist() for row in page_link_ids(parsed, url, 2, 2**20)[1]] for url, parsed in pages]
    monkeypatch.setattr(wordtable, "_table", wordtable.WordTable(max_words=60))  # small: cleared again and again
    errors: list[str] = []

    def work() -> None:
        for _ in range(30):
            got = [[row.tolist() for row in page_link_ids(parsed, url, 2, 2**20)[1]] for url, parsed in pages]
            if got != want:
                errors.append("wrong ids")

    threads = [threading.Thread(target=work) for _ in range(8)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so that unguarded updates would interleave
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors
