"""Scrapy requests as JSON text, for durable frontier stores (never pickle), read back as data only.

``Request.to_dict()`` holds bytes (headers, body), which JSON has not; they are
kept as latin-1 text, which maps every byte to one character and back. A meta
value that is not JSON (rare: our components put strings and numbers there) is
dropped with a warning rather than stored in a form that could run code.

Reading a request back trusts nothing in the text: whoever can write to the
store (a shared Redis, a job directory) must not be able to make a worker run
code. Scrapy's ``request_from_dict`` imports the module its ``_class`` names
and takes any attribute of the spider as a callback; :func:`decode_request`
accepts a closed vocabulary instead:

* the class is one of :data:`REQUEST_CLASSES` (the classes focused writes), looked up by
  name in that table: nothing is imported;
* a callback or errback is the name of a method the spider class itself defines
  (a plain identifier, not private, a function of the spider's class, not a property,
  class method or static method, nor one of Scrapy's ``Spider`` methods but ``parse``);
* every field has the type :func:`encode_request` writes, and no other field is present;
* the meta keys that choose where the request connects (:data:`CONNECTION_META`: a proxy, which
  also turns off the internal-address checks by IP) are dropped: the crawl's own proxy
  settings apply again when the request is downloaded.

Anything else raises :class:`BadStoredRequest`, which the stores turn into a
quarantined entry (:mod:`focused.frontier.store`).
"""

from __future__ import annotations

import codecs
import inspect
import json
import logging
from typing import Any

from scrapy.http import Request
from scrapy.spiders import Spider

from focused.frontier.linkrequest import LinkRequest
from focused.frontier.store import BadEntry

logger = logging.getLogger(__name__)

_warned: set[str] = set()

#: The request classes a stored request may name in ``_class`` (``to_dict`` omits it for ``Request``).
REQUEST_CLASSES: dict[str, type[Request]] = {
    "scrapy.http.request.Request": Request,
    "focused.frontier.linkrequest.LinkRequest": LinkRequest,
}


#: Meta keys a stored request loses when it is read back (see the module docstring).
CONNECTION_META = ("proxy", "_auth_proxy")


class BadStoredRequest(BadEntry):
    """A stored request that is not one :func:`encode_request` writes; the message says why (one line)."""


def _text(b: bytes | str) -> str:
    return b.decode("latin-1") if isinstance(b, bytes) else b


def encode_request(request: Request, spider: Spider | None) -> str:
    """``request`` as JSON (its callback by name, as Scrapy's own disk queues keep it)."""
    d = request.to_dict(spider=spider)
    d["headers"] = {_text(k): [_text(v) for v in vs] for k, vs in d["headers"].items()}
    d["body"] = _text(d["body"])
    try:
        return json.dumps(d, separators=(",", ":"))
    except TypeError:
        meta = {}
        for key, value in d["meta"].items():
            try:
                json.dumps(value)
            except TypeError:
                if key not in _warned:
                    _warned.add(key)
                    logger.warning("request meta %r is not JSON: not kept in the frontier store", key)
                continue
            meta[key] = value
        d["meta"] = meta
        return json.dumps(d, separators=(",", ":"))


def decode_request(text: str | bytes, spider: Spider | None) -> Request:
    """Inverse of :func:`encode_request`; :class:`BadStoredRequest` for anything it did not write.

    Never imports a module and never calls anything the text names but the
    request class's constructor and a lookup of the spider's own methods.
    """
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise BadStoredRequest("not UTF-8 text (binary data, a pickle?)") from None
    if not isinstance(text, str):
        raise BadStoredRequest(f"a {type(text).__name__}, not JSON text")
    try:
        d = json.loads(text)
    except ValueError as exc:  # RecursionError is not one: a deep nesting is caught below
        raise BadStoredRequest(f"not JSON ({exc})") from None
    except RecursionError:
        raise BadStoredRequest("not JSON (nested too deeply)") from None
    if not isinstance(d, dict):
        raise BadStoredRequest(f"a JSON {type(d).__name__}, not an object")
    unknown = sorted(set(d) - _FIELDS.keys() - {"_class"})
    if unknown:
        raise BadStoredRequest(f"unknown field {unknown[0][:60]!r}")
    name = d.get("_class", "scrapy.http.request.Request")
    cls = REQUEST_CLASSES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise BadStoredRequest(f"request class {str(name)[:100]!r} is not one focused writes")
    for field, check in _FIELDS.items():
        if field in d and not check(d[field]):
            raise BadStoredRequest(f"field {field!r} is not {_EXPECTED[field]}")
    if "url" not in d:
        raise BadStoredRequest("no url")
    kwargs = {k: v for k, v in d.items() if k not in ("_class", "callback", "errback", "headers", "body")}
    if "meta" in d:
        kwargs["meta"] = {k: v for k, v in d["meta"].items() if k not in CONNECTION_META}
    kwargs["headers"] = {
        k.encode("latin-1"): [v.encode("latin-1") for v in vs] for k, vs in d.get("headers", {}).items()
    }
    if "body" in d:
        kwargs["body"] = d["body"].encode("latin-1")
    for field in ("callback", "errback"):
        if d.get(field) is not None:
            kwargs[field] = spider_method(spider, d[field], field)
    try:
        return cls(**kwargs)
    except (ValueError, TypeError, LookupError) as exc:  # a URL without a scheme, a cookie of the wrong shape...
        raise BadStoredRequest(f"not a valid request ({type(exc).__name__}: {str(exc)[:200]})") from None


def spider_method(spider: Spider | None, name: str, field: str = "callback") -> Any:
    """The bound method ``name`` of ``spider``, if the spider's class defines it as a plain method
    (module docstring); :class:`BadStoredRequest` otherwise. Looks the name up statically first, so
    that no property or descriptor runs."""
    if spider is None:
        raise BadStoredRequest(f"{field} {name[:100]!r} but no spider to look it up on")
    if not name.isidentifier() or name.startswith("_"):
        raise BadStoredRequest(f"{field} {name[:100]!r} is not a method name")
    owner = next((c for c in type(spider).__mro__ if name in vars(c)), None)
    raw = inspect.getattr_static(spider, name, None)
    if (
        owner is None
        or not inspect.isfunction(raw)
        or (owner.__module__.split(".")[0] in ("scrapy", "builtins") and name != "parse")
    ):
        raise BadStoredRequest(f"{field} {name!r} is not a method of spider {getattr(spider, 'name', '?')!r}")
    method = getattr(spider, name)
    if not inspect.ismethod(method) or method.__self__ is not spider:
        raise BadStoredRequest(f"{field} {name!r} is not a method of spider {getattr(spider, 'name', '?')!r}")
    return method


def _is_text_encoding(value: Any) -> bool:
    """A codec name of the standard library's text encodings (a short plain name: the codec lookup
    imports at most a module of the ``encodings`` package)."""
    if not isinstance(value, str) or not 0 < len(value) <= 40 or not value.replace("-", "_").isidentifier():
        return False
    try:
        return bool(codecs.lookup(value)._is_text_encoding)
    except LookupError:
        return False


def _str_lists(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(vs, list) and all(isinstance(v, str) for v in vs) for k, vs in value.items()
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_FIELDS: dict[str, Any] = {
    "url": lambda v: isinstance(v, str) and bool(v),
    "callback": lambda v: v is None or isinstance(v, str),
    "errback": lambda v: v is None or isinstance(v, str),
    "method": lambda v: isinstance(v, str) and v.isalpha() and len(v) <= 16,
    "headers": _str_lists,
    "body": lambda v: isinstance(v, str),
    "cookies": lambda v: (
        (isinstance(v, dict) and all(isinstance(k, str) for k in v))
        or (isinstance(v, list) and all(isinstance(c, dict) for c in v))
    ),
    "meta": lambda v: isinstance(v, dict),
    "encoding": _is_text_encoding,
    "priority": _is_int,
    "dont_filter": lambda v: isinstance(v, bool),
    "flags": lambda v: isinstance(v, list) and all(isinstance(f, str) for f in v),
    "cb_kwargs": lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v),
}
_EXPECTED = {
    "url": "a URL",
    "callback": "a method name",
    "errback": "a method name",
    "method": "an HTTP method",
    "headers": "an object of lists of strings",
    "body": "a string",
    "cookies": "an object or a list of objects",
    "meta": "an object",
    "encoding": "a text encoding",
    "priority": "an integer",
    "dont_filter": "true or false",
    "flags": "a list of strings",
    "cb_kwargs": "an object",
}
