"""The page reader never raises on a page, and no page holds the crawl longer than its time budget.

A property-based test (hypothesis) feeds the reader generated HTML: random tags and attributes, ``<base
href>`` and link targets with odd URLs (invalid IPv6 hosts, bad ports, control characters), nesting, and
bytes in bad encodings under declared charsets that lie; every stage the crawl runs on a page must return.
A page that takes longer than ``FOCUSED_PAGE_TIME_BUDGET`` is skipped and counted, in the page-analysis worker
and in the crawl process.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree
from scrapy.http import HtmlResponse

from focused.analysis import worker
from focused.analysis.outlinks import take_links
from focused.analysis.worker import AnalysisConfig, AnalysisPool, analyze_page
from focused.bench.runner import run_crawl
from focused.crawldb import iter_pages
from focused.learning.apprentice.features import decode_html, extract_link_features
from focused.learning.apprentice.linkids import page_link_ids
from focused.learning.apprentice.resolve import MAX_BASE_LENGTH
from focused.page.parse import MAX_ATTRIBUTES, parse_page, prepare
from focused.page.parsed import PageTooSlow
from focused.page.stream import stream_page
from tests.local_server import HTML, LocalServer, direct_crawl

BASE = "http://a.test/dir/page.html"
TAGS = ["a", "area", "base", "div", "p", "span", "b", "font", "table", "td", "script", "style", "title", "html",
        "body", "head", "noscript", "template", "li", "ul", "br", "img", "svg", "math", "iframe", "x-y"]  # fmt: skip
ODD_URLS = [
    "http://[ffff",
    "http://[::1",
    "http://[::1]:99999/",
    "http://a.test:abc/",
    "http://%zz/",
    "https://[v1.x]/",
    "//[",
    "http:// www.x.com",
    "javascript:alert(1)",
    "mailto:x@y",
    "#frag",
    "",
    "?q=1",
    "../../../x",
    "http://\x00host/",
    "http://a.test/\udcff",
    "http://ex\u00e4mple.test/\u2028",
    "data:text/html,<a href=x>",
    "http://" + "a" * 300 + ".test/",
]
CHARSETS = ["utf-8", "latin-1", "shift_jis", "utf-16", "utf-7", "x-bogus", "iso-2022-jp", "gb18030", ""]

urls = st.one_of(st.sampled_from(ODD_URLS), st.text(max_size=40))
attributes = st.lists(
    st.tuples(st.sampled_from(["href", "src", "class", "id", "charset", "style"]), urls), max_size=3
).map(lambda pairs: "".join(f' {k}="{v}"' for k, v in pairs))
texts = st.one_of(st.text(max_size=30), st.sampled_from(["&amp;", "&#0;", "&#x110000;", "&bogus;", "<!--", "]]>"]))


def _element(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda tag, attrs, inner, closed: f"<{tag}{attrs}>{''.join(inner)}" + (f"</{tag}>" if closed else ""),
        st.sampled_from(TAGS),
        attributes,
        st.lists(children, max_size=4),
        st.booleans(),
    )


fragments = st.recursive(texts, _element, max_leaves=30)
deep = st.builds(
    lambda tag, n, inner: f"<{tag}>" * n + inner, st.sampled_from(["div", "b", "font", "a href=x"]),
    st.integers(0, 4000), fragments,
)  # fmt: skip
documents = st.builds(
    lambda base, head, body: f'<html><head><base href="{base}">{head}</head><body>{body}</body></html>',
    urls,
    fragments,
    st.one_of(fragments, deep),
)


def _to_bytes(html: str, charset: str, noise: bytes) -> bytes:
    """The page as a server might send it: a declared charset that may lie, and stray bytes."""
    meta = f'<meta charset="{charset}">' if charset else ""
    data = (meta + html).encode("utf-8", "surrogatepass")
    cut = len(data) // 2
    return data[:cut] + noise + data[cut:]


def read_everything(body: bytes, charset: str) -> None:
    """Every stage the crawl runs on a page, as the spider, the worker and the apprentice run them."""
    headers = {"Content-Type": f"text/html; charset={charset}"} if charset else {"Content-Type": "text/html"}
    response = HtmlResponse(BASE, body=body, headers=headers)
    html = response.text
    parsed = parse_page(html)
    links, _ = take_links(parsed, BASE, response.encoding, 3000)
    assert all(link.startswith(("http://", "https://")) for link in links)
    extract_link_features(html, BASE, parsed=parsed)
    extract_link_features(body, BASE)  # the apprentice's own decoding of the bytes
    decode_html(body, charset or None)
    page_link_ids(parsed, BASE, 5, 2**10)
    analyze_page(AnalysisConfig(d_max=5, n_features=2**10), html, BASE, response.encoding, True)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(documents, st.sampled_from(CHARSETS), st.binary(max_size=16))
def test_the_reader_returns_for_every_page(html: str, charset: str, noise: bytes) -> None:
    read_everything(_to_bytes(html, charset, noise), charset)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=2000), st.sampled_from(CHARSETS))
def test_the_reader_returns_for_any_bytes(body: bytes, charset: str) -> None:
    read_everything(body, charset)


@pytest.mark.parametrize("base", ["http://[ffff", "http://[::1", "//[::1"])
def test_an_unjoinable_base_href_is_dropped_and_counted(base: str) -> None:
    """The fuzz's one failure: urljoin raised ValueError (Invalid IPv6 URL) on the base of the page."""
    html = f'<html><head><base href="{base}"></head><body><a href="/x">x</a><a href="http://[::1/y">y</a></body></html>'
    parsed = parse_page(html)
    links, _ = take_links(parsed, BASE, "utf-8", 100)
    assert links == ["http://a.test/x"]  # resolved against the page's own URL
    assert parsed.bad_base and parsed.bad_links == 1
    assert extract_link_features(html, BASE).urls == ["http://a.test/x"]


def test_a_base_too_long_to_resolve_against_is_not_used() -> None:
    """Every relative link is resolved by reading and copying its base: a <base href> as long as a page times its
    thousands of links was gigabytes of URLs. A <base href> over MAX_BASE_LENGTH is ignored (the page's URL is
    the base, counted as a bad base); against a page URL over it, only absolute links are taken."""
    long_base = "http://a.test/" + "d/" * 50_000
    hrefs = "".join(f'<a href="x{i}">x</a>' for i in range(50)) + '<a href="http://b.test/y">y</a><a href="/r">r</a>'
    parsed = parse_page(f'<html><head><base href="{long_base}"></head><body>{hrefs}</body></html>')
    links, _ = take_links(parsed, BASE, "utf-8", 100)
    assert parsed.bad_base and len(links) == 52 and links[0] == "http://a.test/dir/x0" and "http://a.test/r" in links
    at_limit = "http://a.test/" + "d" * (MAX_BASE_LENGTH - len("http://a.test/") - 1) + "/"
    parsed = parse_page(f'<html><head><base href="{at_limit}"></head><body>{hrefs}</body></html>')
    links, _ = take_links(parsed, BASE, "utf-8", 100)
    assert not parsed.bad_base and links[0] == at_limit + "x0"
    parsed = parse_page(f"<html><body>{hrefs}</body></html>")
    links, _ = take_links(parsed, long_base, "utf-8", 100)
    assert links == ["http://b.test/y"] and parsed.bad_links == 51


def test_links_over_the_url_length_limit_are_dropped_and_counted() -> None:
    """Scrapy drops a request past URLLENGTH_LIMIT, but only after every stage before it kept the URL (the
    apprentice's waiting links, caches of URLs): a page of megabyte URLs grew them all. Dropped where they are
    read, counted; 0 keeps them."""
    from focused.analysis import outlinks

    long = "http://b.test/" + "q" * 5000
    html = f'<a href="/one">1</a><a href="{long}">2</a><a href="/two">3</a>'
    parsed = parse_page(html)
    links, _ = take_links(parsed, BASE, "utf-8", 100, 2083)
    assert links == ["http://a.test/one", "http://a.test/two"] and parsed.long_links == 1
    assert (long, "utf-8") not in outlinks._accepted_memo  # read each time, not remembered
    parsed = parse_page(html)
    assert take_links(parsed, BASE, "utf-8", 100)[0][1] == long and parsed.long_links == 0


@pytest.mark.parametrize("workers", ["0", "1"], ids=["crawl-process", "worker"])
def test_a_crawl_drops_links_over_its_url_length_limit(tmp_path: Path, workers: str) -> None:
    seed = (
        b'<html><body><p>football match</p><a href="/ok">ok</a> <a href="/' + b"x" * 3000 + b'">long</a></body></html>'
    )
    site = {"/": (200, HTML, seed), "/ok": (200, HTML, b"<html><body><p>football match report</p></body></html>")}
    with LocalServer(site) as web:
        spec = direct_crawl(web, tmp_path, f"long-{workers}", FOCUSED_ANALYSIS_WORKERS=workers)
        result = run_crawl(spec, timeout=300)
    assert result.returncode == 0, result.log.read_text()[-3000:]
    assert result.stats["focused/links/too_long"] == 1, json.dumps(result.stats)
    assert "urllength/request_ignored_count" not in result.stats  # dropped before Scrapy had to
    assert sorted(page.url for page in iter_pages(spec.db)) == [f"{web.url}/", f"{web.url}/ok"]


def many_attributes(n: int, value: str = '"v"') -> str:
    return " ".join(f"a{i}={value}" for i in range(n))


def test_a_tag_keeps_its_first_attributes() -> None:
    """libxml2's parse of a tag takes time in the square of its attributes: past MAX_ATTRIBUTES they are cut
    before the parse (the first ones kept: the link's href), whatever their values hold."""
    for value, bare in (('"v"', ""), ("'>'", ""), ('"<b>"', ""), ("v", ""), ("v", " b")):
        tag_html = f"<a href=/m {many_attributes(5000, value)}{bare}>moon</a>"
        html = f"<html><body><p>stars and planets</p>{tag_html}</body></html>"
        prepared, _ = prepare(html)
        tag = etree.fromstring(prepared, etree.HTMLParser()).find(".//a")
        assert len(tag.attrib) == MAX_ATTRIBUTES and tag.get("href") == "/m" and tag.get("a254") is not None
        page = parse_page(html)
        assert [link[0] for link in page.links] == ["/m"]
        assert page.text == parse_page("<p>stars and planets</p><a href=/m>moon</a>").text
    for n in (MAX_ATTRIBUTES - 1, MAX_ATTRIBUTES):  # a tag of MAX_ATTRIBUTES or fewer is left as it is
        html = f"<p>x</p><a href=/m {many_attributes(n - 1)}>moon</a><img {' '.join(f'b{i}' for i in range(n))}>"
        assert prepare(html)[0] == html
    # the cut stops where the tag does: text and tags after it are kept
    html = f"<div {many_attributes(400)}>one</div><p>two <a href=/t>three</a></p>"
    assert parse_page(html).text.split() == ["one", "two", "three"]


# ---------------------------------------------------------------------- the time budget


def nested(depth: int) -> str:
    return "<html><body>" + "<div>x <a href='/a'>l</a>" * depth + "</body></html>"


def test_the_streaming_parser_stops_at_its_deadline() -> None:
    html = nested(100_000)
    with pytest.raises(PageTooSlow):
        stream_page(html, time.monotonic())  # already past: stops before the first piece
    with pytest.raises(PageTooSlow):
        parse_page(html, time.monotonic() + 0.05)
    page = stream_page(nested(3000), time.monotonic() + 600)  # a deadline far away changes nothing
    assert page.links == stream_page(nested(3000)).links and len(page.links) == 3000


def test_the_worker_skips_a_page_past_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """In the worker, the budget is an alarm: it stops any Python part of the reading, not only the parser."""
    monkeypatch.setattr(worker, "_config", AnalysisConfig(time_budget=0.05))
    previous = signal.signal(signal.SIGALRM, worker._too_slow)
    try:
        monkeypatch.setattr(worker, "analyze_page", lambda *args: time.sleep(5))  # a reading that never ends
        assert worker._analyze("<p>x</p>", BASE, "utf-8", True).too_slow
        monkeypatch.undo()
        monkeypatch.setattr(worker, "_config", AnalysisConfig(time_budget=60))
        analysis = worker._analyze("<p>x <a href='/b'>b</a></p>", BASE, "utf-8", True)
        assert not analysis.too_slow and analysis.links == ["http://a.test/b"]
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # the alarm is off between pages
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_a_worker_process_skips_the_slow_page_and_reads_the_next() -> None:
    pool = AnalysisPool(AnalysisConfig(time_budget=0.2))
    try:
        pool.ready.result(timeout=120)
        slow = pool.submit(nested(100_000), BASE, "utf-8", True).result(timeout=120)
        assert slow.too_slow and not slow.links
        fine = pool.submit("<p>x <a href='/b'>b</a></p>", BASE, "utf-8", True).result(timeout=120)
        assert not fine.too_slow and fine.links == ["http://a.test/b"]
    finally:
        pool.close()


def _site() -> dict[str, tuple[int, list[tuple[str, str]], bytes]]:
    seed = '<html><body><p>football match</p><a href="/deep">deep</a> <a href="/ok">ok</a></body></html>'
    return {
        "/": (200, HTML, seed.encode()),
        "/deep": (200, HTML, nested(100_000).encode()),
        "/ok": (200, HTML, b"<html><body><p>football match report</p></body></html>"),
    }


@pytest.mark.parametrize("workers", ["0", "1"], ids=["crawl-process", "worker"])
def test_a_crawl_skips_a_page_past_its_budget(tmp_path: Path, workers: str) -> None:
    """The 100,000-deep page (seconds of streaming parse) is skipped and counted; the crawl goes on."""
    with LocalServer(_site()) as web:
        spec = direct_crawl(
            web, tmp_path, f"slow-{workers}", FOCUSED_PAGE_TIME_BUDGET="0.3", FOCUSED_ANALYSIS_WORKERS=workers
        )
        result = run_crawl(spec, timeout=300)
    log = result.log.read_text()
    assert result.returncode == 0, log[-3000:]
    assert result.stats["focused/pages/skipped_slow"] == 1, json.dumps(result.stats)
    assert sorted(page.url.rsplit("/", 1)[1] for page in iter_pages(spec.db)) == ["", "ok"]
    assert "FOCUSED_PAGE_TIME_BUDGET" in log and "Traceback" not in log
