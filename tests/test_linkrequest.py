"""The spider's link requests: Scrapy's requests, with the safe URL remembered."""

from __future__ import annotations

import pytest
from scrapy import Request, Spider
from scrapy.utils.request import request_from_dict

from focused.frontier import linkrequest
from focused.frontier.compact import Packed, RequestPacker
from focused.frontier.linkrequest import LinkRequest
from focused.frontier.requests import decode_request, encode_request

URLS = [
    "http://a.test/wiki/Caf\u00e9 au lait",
    "http://a.test/x?q=a b&r=%41%zz",
    "https://b\u00fccher.test/p\u00e4th#frag",
    "http://a.test/already%20safe",
    "HTTP://A.TEST/Upper",
]


class _Spider(Spider):
    name = "links"

    def parse(self, response):  # type: ignore[no-untyped-def]
        yield from ()


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_link_requests_have_scrapys_urls_and_remember_them(encoding: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(linkrequest, "_safe", {})
    for url in URLS * 2:  # the second time from the memo
        assert LinkRequest(url, encoding=encoding).url == Request(url, encoding=encoding).url
    assert set(linkrequest._safe[encoding]) == set(URLS)
    safe = URLS[3]
    assert linkrequest._safe[encoding][safe] is safe  # an already safe URL is not copied
    with pytest.raises(ValueError, match="Missing scheme"):
        LinkRequest("no-scheme/page")
    assert "no-scheme/page" not in linkrequest._safe.get("utf-8", {})
    verbatim = LinkRequest("http://a.test/a b", meta={"verbatim_url": True})
    assert verbatim.url == "http://a.test/a b" and "http://a.test/a b" not in linkrequest._safe.get("utf-8", {})


def test_a_full_memo_starts_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(linkrequest, "_safe", {})
    monkeypatch.setattr(linkrequest, "MEMO_SIZE", 2)
    for url in URLS:
        assert LinkRequest(url).url == Request(url).url
        assert len(linkrequest._safe["utf-8"]) <= 2


def test_link_requests_keep_their_class_when_copied_stored_and_packed() -> None:
    spider = _Spider()
    request = LinkRequest(URLS[0], callback=spider.parse, meta={"focused_parent": "http://a.test/"})
    assert type(request.replace(priority=3)) is LinkRequest
    again = request_from_dict(request.to_dict(spider=spider), spider=spider)
    assert type(again) is LinkRequest and again.url == request.url
    stored = decode_request(encode_request(request, spider), spider)
    assert type(stored) is LinkRequest and stored.url == request.url and stored.meta == request.meta
    packer = RequestPacker()
    packed = packer.pack(request)
    assert type(packed) is Packed
    back = packer.unpack(packed, 7)
    assert type(back) is LinkRequest and back.url == request.url and back.priority == 7
    assert back.callback == spider.parse and back.meta == request.meta
