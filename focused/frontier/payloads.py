"""Payloads as bytes: what the scheduler stores with a waiting URL, per parent, without pickle.

A payload is whatever the link scorer attached to a request (the apprentice's
:class:`~focused.learning.online.LinkPayload`, or any JSON-able value); a store
keeps bytes, tagged by kind so that they decode to what was encoded.
"""

from __future__ import annotations

import json
from typing import Any

from focused.learning.online import LinkPayload

_LINK, _JSON, _BYTES = b"L", b"J", b"B"


def encode_payload(payload: Any) -> bytes:
    """Bytes for a store; ``TypeError`` for a value that is neither a link payload, bytes nor JSON-able."""
    if isinstance(payload, LinkPayload):
        return _LINK + payload.to_bytes()
    if isinstance(payload, bytes | bytearray):
        return _BYTES + bytes(payload)
    return _JSON + json.dumps(payload, separators=(",", ":")).encode()


def decode_payload(data: bytes) -> Any:
    """Inverse of :func:`encode_payload`; ``ValueError`` for bytes it did not write."""
    kind, body = data[:1], data[1:]
    if kind == _LINK:
        return LinkPayload.from_bytes(body)
    if kind == _BYTES:
        return body
    if kind == _JSON:
        return json.loads(body)
    raise ValueError(f"unknown payload kind {kind!r}")
