"""The URL-keyed fingerprint cache gives exactly the crawler's fingerprints."""

from __future__ import annotations

from scrapy import Request
from scrapy.utils.request import RequestFingerprinter

from focused.core.fingerprints import UrlFingerprints


class _HeaderFingerprinter:
    """A custom fingerprinter: the cache must not be used for it."""

    calls = 0

    def fingerprint(self, request: Request) -> bytes:
        self.calls += 1
        return request.headers.get("X-Key", b"none")


def test_same_fingerprints_as_scrapy() -> None:
    scrapy_fp = RequestFingerprinter()
    cached = UrlFingerprints(scrapy_fp, max_urls=3)
    requests = [
        Request("http://a.test/x?b=2&a=1"),
        Request("http://a.test/x?a=1&b=2"),  # the same page, canonically
        Request("http://a.test/x#frag"),
        Request("http://a.test/x", method="POST", body=b"q=1"),
        Request("http://a.test/x", method="POST", body=b"q=2"),
        Request("http://a.test/x?b=2&a=1", meta={"verbatim_url": True}),
        Request("http://a.test/y"),
        Request("http://a.test/z"),
        Request("http://a.test/w"),  # the cache is full here and starts afresh
    ]
    for _ in range(2):
        for request in requests:
            fresh = Request(request.url, method=request.method, body=request.body, meta=dict(request.meta))
            assert cached(fresh) == scrapy_fp.fingerprint(request), request
    assert cached(requests[0]) == cached(requests[1])
    assert cached(requests[5]) != cached(requests[0])
    assert cached(requests[3]) != cached(requests[4])


def test_custom_fingerprinter_is_always_asked() -> None:
    custom = _HeaderFingerprinter()
    cached = UrlFingerprints(custom)
    assert cached(Request("http://a.test/", headers={"X-Key": "1"})) == b"1"
    assert cached(Request("http://a.test/", headers={"X-Key": "2"})) == b"2"
    assert custom.calls == 2
