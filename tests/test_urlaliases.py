"""URL aliases a server answers alike (``dir/``, ``dir/index.html``, ``dir//``) are fetched once."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from focused.bench.runner import run_crawl
from focused.crawldb import iter_pages
from focused.replay.labels import label_key_lookup
from focused.spidermiddlewares.canonical import ALIAS_STAT
from focused.urls import collapse_aliases
from tests.local_server import HTML, Answer, LocalServer, direct_crawl
from tests.sites import SPORT


@pytest.mark.parametrize(
    ("url", "collapsed"),
    [
        ("http://a.test/x//y/", "http://a.test/x/y/"),
        ("http://a.test//", "http://a.test/"),
        ("http://a.test/web/2005/http://b.test//x/", "http://a.test/web/2005/http://b.test/x/"),  # a URL in the path
        ("http://a.test/u/index.html", "http://a.test/u/"),
        ("http://a.test/u/index.htm#top", "http://a.test/u/#top"),
        ("http://a.test/index.html", "http://a.test/"),
        ("http://a.test/u//index.html", "http://a.test/u/"),
        ("http://a.test:80/u/", "http://a.test/u/"),  # the scheme's default port
        ("HTTPS://a.test:443//x?y#z", "HTTPS://a.test/x?y#z"),
        ("http://a.test:8080/u/", "http://a.test:8080/u/"),
        ("https://a.test:80/u/", "https://a.test:80/u/"),
        ("http://user:80@a.test/u/", "http://user:80@a.test/u/"),
        ("http://user:pw@a.test:80/u/", "http://user:pw@a.test:80/u/"),  # left alone: rare, and ambiguous
        ("http://[::1]:80/u//", "http://[::1]/u/"),
        ("http://a.test?q=//x/index.html", "http://a.test?q=//x/index.html"),  # no path
        ("ftp://a.test:21//x/index.html", "ftp://a.test:21//x/index.html"),
        # left alone: a query (the script may read it), another name, another default document, no path
        ("http://a.test/u/index.html?x=1", "http://a.test/u/index.html?x=1"),
        ("http://a.test/x?next=//y/index.html", "http://a.test/x?next=//y/index.html"),
        ("http://a.test/u/myindex.html", "http://a.test/u/myindex.html"),
        ("http://a.test/u/index.htmlx", "http://a.test/u/index.htmlx"),
        ("http://a.test/u/index.php", "http://a.test/u/index.php"),
        ("http://a.test/u/INDEX.HTML", "http://a.test/u/INDEX.HTML"),  # another file where names are case-sensitive
        ("http://a.test", "http://a.test"),
        ("mailto:someone@a.test", "mailto:someone@a.test"),
    ],
)
def test_collapse_aliases(url: str, collapsed: str) -> None:
    assert collapse_aliases(url) == collapsed


def test_collapsing_is_idempotent_and_keeps_a_request_valid() -> None:
    from scrapy import Request

    rng = random.Random(0)
    parts = [*"ab:/?#@[]%.x8042", "index.html", "index.htm", "//", ":80", ":443", "http://", "https://"]
    for _ in range(20_000):
        url = rng.choice(["http://", "https://", "HTTP://", "ftp://", ""])
        url += "".join(rng.choice(parts) for _ in range(rng.randint(0, 12)))
        collapsed = collapse_aliases(url)
        assert collapse_aliases(collapsed) == collapsed, url
        try:
            Request(url)
        except ValueError:
            continue
        Request(collapsed)  # a valid request stays one


def test_labels_name_a_page_under_any_of_its_aliases() -> None:
    key_of = label_key_lookup({"http://a.test/u/": "sport", "http://a.test/v/index.html": "misc"})
    for url in ("http://a.test/u/", "http://a.test/u//", "http://a.test/u/index.html", "http://a.test/u"):
        assert key_of(url) == "http://a.test/u/", url
    assert key_of("http://a.test/v/") == key_of("http://a.test/v//") == "http://a.test/v/index.html"
    assert key_of("http://a.test/w/") is None


def _apache_like(pages: dict[str, bytes]) -> LocalServer:
    """A server that answers ``dir/``, ``dir/index.html`` and ``dir//`` with the same page, as Apache does."""

    def answer(path: str) -> Answer | None:
        path = re.sub("//+", "/", path)
        path = path.removesuffix("index.html")
        body = pages.get(path)
        return None if body is None else (200, HTML, body)

    return LocalServer(answer)


def test_a_page_linked_under_several_aliases_is_fetched_once(tmp_path: Path) -> None:
    text = " ".join(random.Random(0).choice(SPORT) for _ in range(200))
    aliases = ["/team/", "/team/index.html", "/team//"]
    anchors = "".join(f'<a href="{href}">team</a> ' for href in aliases)
    pages = {
        "/": f"<html><body><p>{text}</p>{anchors}</body></html>".encode(),
        "/team/": f'<html><body><p>{text}</p><a href="/team/index.html#top">top</a></body></html>'.encode(),
    }
    with _apache_like(pages) as web:
        spec = direct_crawl(web, tmp_path, "aliases")
        result = run_crawl(spec, timeout=120)
    assert result.returncode == 0, result.log.read_text()
    assert sorted(h for h in web.hits if h != "/robots.txt") == ["/", "/team/"]
    assert [p.url.removeprefix(web.url) for p in iter_pages(spec.db)] == ["/", "/team/"]
    assert result.stats.get(ALIAS_STAT) == 3  # /team/index.html, /team//, and /team/index.html#top
    # without the rewrite the same page is fetched under each of its names
    with _apache_like(pages) as web:
        spec = direct_crawl(web, tmp_path, "no-aliases", FOCUSED_URL_ALIASES=False)
        result = run_crawl(spec, timeout=120)
    assert result.returncode == 0, result.log.read_text()
    assert len([h for h in web.hits if h != "/robots.txt"]) == 1 + len(aliases)


def test_true_harvest_counts_a_page_once_whatever_url_fetched_it() -> None:
    from focused.replay.labels import first_fetches_on_topic

    labels = {"http://a.test/u/": "sport", "http://a.test/v.html": "misc", "http://a.test/w/index.html": "sport"}
    urls = [
        "http://a.test/u/",
        "http://a.test/u/index.html",  # the same page again: a wasted fetch
        "http://a.test/v.html",  # off topic
        "http://a.test/x.html",  # unlabelled
        "http://a.test/w//",  # the stored w/index.html, first fetch
        "http://a.test/u//",
    ]
    on_topic = "sport".__eq__
    assert first_fetches_on_topic(urls, labels, on_topic) == [True, False, False, False, True, False]


def test_a_seed_named_by_an_alias_is_not_fetched_again_under_its_link(tmp_path: Path) -> None:
    from dataclasses import replace

    text = " ".join(random.Random(1).choice(SPORT) for _ in range(200))
    pages = {
        "/team/": f'<html><body><p>{text}</p><a href="/team/">team</a> <a href="/x.html">x</a></body></html>'.encode(),
        "/x.html": f'<html><body><p>{text}</p><a href="/team/index.html">back</a></body></html>'.encode(),
    }
    with _apache_like(pages) as web:
        spec = replace(direct_crawl(web, tmp_path, "seed"), seeds=(web.url + "/team/index.html",))
        result = run_crawl(spec, timeout=120)
    assert result.returncode == 0, result.log.read_text()
    # the seed is fetched as given; the links that name it /team/ (and /team/index.html) find it seen
    assert sorted(h for h in web.hits if h != "/robots.txt") == ["/team/index.html", "/x.html"]
    with _apache_like(pages) as web:
        spec = replace(
            direct_crawl(web, tmp_path, "seed-off", FOCUSED_URL_ALIASES=False), seeds=(web.url + "/team/index.html",)
        )
        result = run_crawl(spec, timeout=120)
    assert result.returncode == 0, result.log.read_text()
    assert sorted(h for h in web.hits if h != "/robots.txt") == ["/team/", "/team/index.html", "/x.html"]
