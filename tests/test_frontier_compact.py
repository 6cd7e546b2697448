"""Plain waiting requests are kept as tuples in the memory store and come back equal."""

from __future__ import annotations

from scrapy import Request, Spider
from scrapy.http import FormRequest

from focused.frontier.compact import Packed, RequestPacker
from focused.frontier.memory import MemoryStore
from focused.frontier.store import Push


class _Spider(Spider):
    name = "compact"

    def parse(self, response):  # type: ignore[no-untyped-def]
        yield from ()

    def other(self, response):  # type: ignore[no-untyped-def]
        yield from ()


def _same(a: Request, b: Request) -> None:
    assert (a.url, a.method, a.body, a.meta, a.callback, a.errback, a.dont_filter, a.flags, a.cb_kwargs) == (
        b.url, b.method, b.body, b.meta, b.callback, b.errback, b.dont_filter, b.flags, b.cb_kwargs,
    )  # fmt: skip
    assert dict(a.headers) == dict(b.headers) and a.cookies == b.cookies


def test_plain_requests_are_packed_and_rebuilt_equal() -> None:
    spider, packer = _Spider(), RequestPacker()
    plain = [
        Request("http://a.test/x", callback=spider.parse, meta={"focused_parent": "http://a.test/", "depth": 2}),
        Request("http://a.test/y", callback=spider.parse, meta={"focused_parent": "http://a.test/", "depth": 2}),
        Request("http://a.test/z", callback=spider.other),
        Request("http://a.test/n"),
    ]
    packed = [packer.pack(r) for r in plain]
    assert all(isinstance(p, Packed) for p in packed)
    assert packed[0][2] is packed[1][2] and packed[0][3] is packed[1][3]  # one callback, one key tuple
    for request, item in zip(plain, packed, strict=True):
        back = packer.unpack(item, 7)
        _same(back, request)
        assert back.priority == 7


def test_other_requests_are_kept_as_they_are() -> None:
    spider, packer = _Spider(), RequestPacker()
    others = [
        FormRequest("http://a.test/f", formdata={"q": "1"}),
        Request("http://a.test/p", method="POST", body=b"x"),
        Request("http://a.test/h", headers={"X-A": "1"}),
        Request("http://a.test/c", cookies={"s": "1"}),
        Request("http://a.test/d", dont_filter=True),
        Request("http://a.test/e", callback=spider.parse, errback=spider.other),
        Request("http://a.test/k", callback=spider.parse, cb_kwargs={"k": 1}),
        Request("http://a.test/g", flags=["x"]),
    ]
    for request in others:
        assert packer.pack(request) is request
        assert packer.unpack(request, 3) is request


def test_memory_store_pops_rebuilt_requests() -> None:
    spider, store = _Spider(), MemoryStore()
    request = Request("http://a.test/x", callback=spider.parse, meta={"focused_parent": "http://a.test/"}, priority=5)
    store.push_many([Push("k", request, 5, None)])
    popped = store.pop_many(1)[0]
    _same(popped.item, request)
    assert popped.priority == 5 and popped.item.priority == 5
