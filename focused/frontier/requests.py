"""Scrapy requests as JSON text, for durable frontier stores (never pickle).

``Request.to_dict()`` holds bytes (headers, body), which JSON has not; they are
kept as latin-1 text, which maps every byte to one character and back. A meta
value that is not JSON (rare: our components put strings and numbers there) is
dropped with a warning rather than stored in a form that could run code.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from scrapy.http import Request
from scrapy.spiders import Spider
from scrapy.utils.request import request_from_dict

logger = logging.getLogger(__name__)

_warned: set[str] = set()


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


def decode_request(text: str, spider: Spider | None) -> Request:
    """Inverse of :func:`encode_request`."""
    d: dict[str, Any] = json.loads(text)
    d["headers"] = {k.encode("latin-1"): [v.encode("latin-1") for v in vs] for k, vs in d["headers"].items()}
    d["body"] = d["body"].encode("latin-1")
    return request_from_dict(d, spider=spider)
