"""What the apprentice keeps per link until its target is fetched, and the key that matches pages.

Scrapy-free; used by :mod:`focused.learning.apprentice.online`.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from w3lib.url import safe_url_string

__all__ = [
    "LinkPayload",
    "pack",
    "page_key",
    "payload_lengths",
    "split_payloads",
    "target_group",
    "unpack",
    "unpack_bytes",
]


#: URLs whose :func:`page_key` is remembered (a page's links are keyed three times, and a site's
#: navigation links come back on every page).
PAGE_KEY_CACHE = 16_384


@functools.lru_cache(maxsize=PAGE_KEY_CACHE)
def page_key(url: str) -> str:
    """Key under which a page is matched: ``dir``, ``dir/`` and ``dir/index.html`` alike.

    Cheap on purpose (it runs three times per link, and is remembered for the
    last :data:`PAGE_KEY_CACHE` URLs): lower-cased scheme and host, no
    fragment, no default port, percent-encoded like Scrapy's requests.
    """
    if not url.isascii() or " " in url:
        url = safe_url_string(url)
    url = url.split("#", 1)[0]
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    host, _, path = rest.partition("/")
    host = host.lower()
    if host.endswith(":80"):
        host = host[:-3]
    key = f"{scheme.lower()}://{host}/{path}"
    for suffix in ("/index.html", "/index.htm"):
        if key.endswith(suffix):
            key = key[: -len(suffix) + 1]
    return key.rstrip("/")


def target_group(key: str) -> int:
    """A stable non-negative int naming the page of a :func:`page_key` (CRC-32; the same in every process)."""
    return zlib.crc32(key.encode("utf-8"))


class LinkPayload(NamedTuple):
    """What is kept per link (u, v) until v is fetched, and with v's waiting request.

    ``ids`` are the compact hashed ⟨t,d⟩ (and class) feature ids; ``side`` the
    critic's views of the link (:func:`~focused.learning.apprentice.model.critic_views`,
    float32), or ``None`` when the apprentice has no side features.
    """

    ids: np.ndarray
    side: np.ndarray | None = None

    def to_bytes(self) -> bytes:
        """``<u4 n><n x i4 ids><u1 k><k x f4 side>``: what a frontier store keeps (no pickle)."""
        ids = np.ascontiguousarray(self.ids, dtype="<i4")
        side = b"" if self.side is None else np.ascontiguousarray(self.side, dtype="<f4").tobytes()
        k = 0 if self.side is None else len(self.side)
        return len(ids).to_bytes(4, "little") + ids.tobytes() + bytes((k,)) + side

    @classmethod
    def from_bytes(cls, data: bytes) -> LinkPayload:
        """Inverse of :meth:`to_bytes`; ``ValueError`` on a damaged payload."""
        size = len(data)
        n = int.from_bytes(data[:4], "little")
        end = 4 + 4 * n
        if size <= end or size != end + 1 + 4 * data[end]:
            raise ValueError("damaged link payload")
        ids = np.frombuffer(data, dtype="<i4", count=n, offset=4)
        k = data[end]
        return cls(ids, np.frombuffer(data, dtype="<f4", count=k, offset=end + 1) if k else None)


def pack(payloads: Sequence[LinkPayload]) -> tuple[np.ndarray, np.ndarray]:
    blobs = [p.to_bytes() for p in payloads]
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8) if blobs else np.zeros(0, np.uint8)
    return data, np.array([len(b) for b in blobs], dtype=np.int64)


def payload_lengths(data: bytes | bytearray) -> list[int]:
    """The lengths of the :meth:`LinkPayload.to_bytes` payloads joined in ``data``, read from their headers;
    ``ValueError`` when the last one does not end where ``data`` does."""
    lengths: list[int] = []
    at, size = 0, len(data)
    while at < size:
        end = at + 4 + 4 * int.from_bytes(data[at : at + 4], "little")
        if end >= size:
            raise ValueError("damaged link payload")
        lengths.append(end + 1 + 4 * data[end] - at)
        at += lengths[-1]
    if at != size:
        raise ValueError("damaged link payload")
    return lengths


def split_payloads(data: bytes | bytearray) -> list[LinkPayload]:
    """The payloads joined in ``data`` (:func:`payload_lengths`), each with ids of its own."""
    view, out, at = memoryview(data), [], 0
    for length in payload_lengths(data):
        out.append(LinkPayload.from_bytes(bytes(view[at : at + length])))
        at += length
    return out


def unpack_bytes(data: np.ndarray, lengths: np.ndarray) -> list[LinkPayload]:
    raw = np.asarray(data, dtype=np.uint8).tobytes()
    ends = np.cumsum(np.asarray(lengths, dtype=np.int64))
    if len(ends) and (ends[-1] != len(raw) or (np.asarray(lengths) < 0).any()):
        raise ValueError("payload lengths do not match the data")
    starts = np.concatenate([[0], ends[:-1]]) if len(ends) else ends
    return [LinkPayload.from_bytes(raw[a:b]) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]


def unpack(payloads: Sequence[LinkPayload], n_side: int) -> tuple[list[np.ndarray], np.ndarray | None]:
    """Feature id arrays and, if ``n_side``, the (n, n_side) side features of payloads (their first
    ``n_side`` side columns: a sibling-feedback payload carries its source's tag after them)."""
    ids = [p.ids for p in payloads]
    if not n_side:
        return ids, None
    sides = [p.side for p in payloads if p.side is not None and len(p.side) >= n_side]
    if len(sides) != len(payloads):
        raise ValueError("the model needs side features, but a link payload has none")
    return ids, np.stack([s[:n_side] for s in sides]).astype(np.float64)  # more columns: a source tag
