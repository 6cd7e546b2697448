"""Waiting requests of the memory store, kept small.

A waiting :class:`~scrapy.Request` object with its headers, cookies, flags and
meta dict costs several hundred bytes, more than the URL it is for; a frontier
holds hundreds of thousands. A *plain* request (a ``Request`` or the spider's
:class:`~focused.frontier.linkrequest.LinkRequest`, a ``GET`` without body,
headers, cookies, flags, errback or callback keyword arguments, as the spider
yields them) is kept as a tuple of its class, its URL, its callback (one shared object per
bound method), the names of its meta keys (one shared tuple per set of names)
and their values, and rebuilt when it is popped. Any other request is kept as
it is. In memory only: the durable stores keep requests as JSON
(:mod:`focused.frontier.requests`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scrapy import Request

from focused.frontier.linkrequest import LinkRequest

#: The request classes packed (their constructors take the same arguments).
_PLAIN = (Request, LinkRequest)


class Packed(tuple[Any, ...]):
    """(class, url, callback, meta keys, meta values): what a plain waiting request is kept as."""

    __slots__ = ()


class RequestPacker:
    """Packs plain requests into tuples and rebuilds them (see the module docstring)."""

    def __init__(self) -> None:
        self._callbacks: dict[tuple[int, int], Callable[..., Any]] = {}
        self._keys: dict[tuple[str, ...], tuple[str, ...]] = {}

    def pack(self, request: Any) -> Any:
        """The packed form of a plain request; any other request (or item) itself."""
        if (
            type(request) not in _PLAIN
            or request.method != "GET"
            or request.body
            or request.headers
            or request.cookies
            or request.flags
            or request.errback is not None
            or request.dont_filter
            or request.encoding != "utf-8"
            or request.cb_kwargs
        ):
            return request
        meta = request.meta
        keys = tuple(meta)
        keys = self._keys.setdefault(keys, keys)
        return Packed((type(request), request.url, self._shared(request.callback), keys, tuple(meta.values())))

    def unpack(self, item: Any, priority: int) -> Any:
        """The request again (a packed one rebuilt with ``priority``); anything else as it is."""
        if type(item) is not Packed:
            return item
        cls, url, callback, keys, values = item
        return cls(url, callback=callback, meta=dict(zip(keys, values, strict=True)), priority=priority)

    def _shared(self, callback: Any) -> Any:
        func, owner = getattr(callback, "__func__", None), getattr(callback, "__self__", None)
        if func is None or owner is None:
            return callback
        return self._callbacks.setdefault((id(func), id(owner)), callback)
