"""What the apprentice keeps per link until its target is fetched, and the key that matches pages.

A link's payload goes to bytes in two ways: :meth:`LinkPayload.to_bytes` (its ids as int32), and the tagged bytes
of :func:`encode_links` (its ids as 2-byte gaps where they fit), which the apprentice keeps for the links waiting for
their targets and the frontier stores (:mod:`focused.frontier.payloads`) with every waiting URL.

Scrapy-free; used by :mod:`focused.learning.apprentice.online`.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Sequence
from typing import NamedTuple, cast

import numpy as np
from w3lib.url import safe_url_string

from focused.learning.apprentice.resolve import LONG_URL

__all__ = [
    "DELTAS",
    "LINK",
    "LinkPayload",
    "compact_bytes",
    "compact_layout",
    "decode_link",
    "decode_links",
    "encode_links",
    "pack",
    "page_key",
    "payload_lengths",
    "restart_sums",
    "split_tagged",
    "tagged_lengths",
    "target_group",
    "unpack",
    "unpack_bytes",
]


#: URLs whose :func:`page_key` is remembered (a page's links are keyed three times, and a site's
#: navigation links come back on every page).
PAGE_KEY_CACHE = 16_384


def page_key(url: str) -> str:
    """Key under which a page is matched: ``dir``, ``dir/`` and ``dir/index.html`` alike.

    Cheap on purpose (it runs three times per link, and is remembered for the
    last :data:`PAGE_KEY_CACHE` URLs): lower-cased scheme and host, no
    fragment, no default port, percent-encoded like Scrapy's requests.
    """
    # a URL over LONG_URL (a hostile page's megabyte links, not followed but still keyed) is keyed each time
    return _page_key(url) if len(url) > LONG_URL else _remembered_page_key(url)


def _page_key(url: str) -> str:
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


_remembered_page_key = functools.lru_cache(maxsize=PAGE_KEY_CACHE)(_page_key)


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


#: The kind byte of a link payload's tagged bytes (what a frontier store keeps with a waiting URL, and the
#: apprentice with a link whose target is not judged yet): ``LINK`` + :meth:`LinkPayload.to_bytes`, or ``DELTAS``
#: + the ids as 2-byte gaps (:func:`compact_bytes`), half the bytes, when the ids are sorted (as the crawler
#: makes them) and every gap fits.
LINK, DELTAS = b"L", b"D"


def compact_bytes(payload: LinkPayload) -> bytes | None:
    """``D<u4 n><u1 k><k x f4 side><n x u2 gaps>`` (the first gap from 0), or None if the ids are not
    sorted or a gap is 65,536 or more."""
    ids = np.asarray(payload.ids, dtype=np.int32)
    if ids.size:
        gaps = run_gaps(ids, np.array([ids.size]))
        if gaps.max() > 0xFFFF:  # a negative gap (unsorted) wraps to a large one
            return None
        body = gaps.astype("<u2").tobytes()
    else:
        body = b""
    side = b"" if payload.side is None else np.ascontiguousarray(payload.side, dtype="<f4").tobytes()
    k = 0 if payload.side is None else len(payload.side)
    return DELTAS + len(ids).to_bytes(4, "little") + bytes((k,)) + side + body


def encode_links(payloads: Sequence[LinkPayload]) -> list[bytes]:
    """Each payload's tagged bytes (:data:`DELTAS` where it can be, else :data:`LINK`), a page's links together
    when they have the same number of side views: the same bytes, their gaps, views and headers in a few array
    operations, then a slice of each per link, instead of half a dozen array operations per link."""
    ks = {0 if p.side is None else len(p.side) for p in payloads}
    if len(ks) != 1:  # no payloads, or mixed side views: one by one
        return [compact_bytes(p) or LINK + p.to_bytes() for p in payloads]
    k = ks.pop()
    rows = [np.asarray(p.ids, dtype=np.int32) for p in payloads]
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    ids = np.concatenate(rows)
    starts = np.cumsum(lengths) - lengths
    gaps = run_gaps(ids, lengths)
    first = starts[lengths > 0]
    wide = np.zeros(len(payloads), dtype=bool)
    if first.size:  # a negative gap (unsorted ids) wraps to a large one
        wide[lengths > 0] = np.maximum.reduceat(gaps, first) > 0xFFFF
    body = gaps.astype("<u2").tobytes()
    side = np.stack([p.side for p in payloads if p.side is not None]).astype("<f4").tobytes() if k else b""
    plain = ids.astype("<i4").tobytes() if wide.any() else b""  # the ids of LinkPayload.to_bytes, all at once
    kind = bytes((k,))
    out: list[bytes] = []
    for j, (a, n, too_wide) in enumerate(zip(starts.tolist(), lengths.tolist(), wide.tolist(), strict=True)):
        views = side[4 * k * j : 4 * k * (j + 1)]
        if too_wide:  # a gap too wide for 2 bytes (or unsorted ids): the plain kind, LINK + to_bytes()
            out.append(LINK + n.to_bytes(4, "little") + plain[4 * a : 4 * (a + n)] + kind + views)
        else:
            out.append(DELTAS + n.to_bytes(4, "little") + kind + views + body[2 * a : 2 * (a + n)])
    return out


def compact_layout(data: bytes | bytearray, start: int = 0) -> tuple[int, int]:
    """``(n ids, k side values)`` of the compact link payload body at ``data[start:]``; ``ValueError`` if
    it is damaged (too short, or not exactly as long as its header says)."""
    if len(data) - start < 5:
        raise ValueError("damaged link payload")
    n, k = int.from_bytes(data[start : start + 4], "little"), data[start + 4]
    if len(data) - start != 5 + 4 * k + 2 * n:
        raise ValueError("damaged link payload")
    return n, k


def decode_link(data: bytes) -> LinkPayload:
    """The payload of tagged bytes (:func:`encode_links`); ``ValueError`` for bytes it did not write."""
    kind = data[:1]
    if kind == LINK:
        return LinkPayload.from_bytes(data[1:])
    if kind != DELTAS:
        raise ValueError(f"not a link payload (kind {kind!r})")
    n, k = compact_layout(data, 1)
    side = np.frombuffer(data, dtype="<f4", count=k, offset=6) if k else None
    ids = np.cumsum(np.frombuffer(data, dtype="<u2", count=n, offset=6 + 4 * k), dtype=np.int32)
    return LinkPayload(ids, side)


def decode_links(blobs: Sequence[bytes]) -> list[LinkPayload]:
    """:func:`decode_link` of each blob, the compact ones together: one ``cumsum`` over all their gaps,
    restarted at each payload (:func:`restart_sums`), instead of one per payload (a re-score decodes tens of
    thousands at once, a fetched page its waiting links). The same ids and side views as one by one; each
    payload's ids are a view of one array."""
    out: list[LinkPayload | None] = [None] * len(blobs)
    where: list[int] = []
    counts: list[int] = []
    sides: list[np.ndarray | None] = []
    gaps: list[bytes] = []
    for i, blob in enumerate(blobs):
        if blob[:1] != DELTAS:
            out[i] = decode_link(blob)
            continue
        n, k = compact_layout(blob, 1)
        where.append(i)
        counts.append(n)
        sides.append(np.frombuffer(blob, dtype="<f4", count=k, offset=6) if k else None)
        gaps.append(blob[6 + 4 * k :])
    if where:
        n_ids = np.asarray(counts, dtype=np.int64)
        ids = restart_sums(np.frombuffer(b"".join(gaps), dtype="<u2").astype(np.uint32), n_ids).view(np.int32)
        ends = np.cumsum(n_ids)
        for i, a, b, side in zip(where, (ends - n_ids).tolist(), ends.tolist(), sides, strict=True):
            out[i] = LinkPayload(ids[a:b], side)
    return cast(list[LinkPayload], out)


def run_gaps(ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The gap of each of ``ids`` from the id before it in its run (``counts[i]`` ids each; a run's first gap from
    0), as uint32 modulo 2**32 (ids out of order wrap to large gaps): what :func:`restart_sums` turns back into
    the ids."""
    values = np.ascontiguousarray(ids, dtype=np.int32).view(np.uint32)
    gaps = np.empty_like(values)
    if len(values):
        np.subtract(values[1:], values[:-1], out=gaps[1:])
        counts = np.asarray(counts, dtype=np.int64)
        firsts = (np.cumsum(counts) - counts)[counts > 0]
        gaps[firsts] = values[firsts]
    return gaps


def restart_sums(gaps: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The running sums of ``gaps`` (uint32, overwritten) restarted at each run of ``counts[i]`` values, modulo 2**32.

    One ``cumsum`` in uint32 over all runs: each run's first gap is lowered by the previous run's sum
    (its last id), which the running sum then cancels; the modulo arithmetic is exact for int32 ids.
    """
    runs = counts[counts > 0]
    if not runs.size:
        return gaps
    firsts = np.cumsum(runs) - runs
    sums = np.add.reduceat(gaps, firsts, dtype=np.uint32)
    gaps[firsts[1:]] -= sums[:-1]  # in place: the caller's array of gaps is spent
    return np.cumsum(gaps, dtype=np.uint32, out=gaps)


def tagged_lengths(data: bytes | bytearray) -> list[int]:
    """The lengths of the tagged payloads (:func:`encode_links`) joined in ``data``, read from their headers;
    ``ValueError`` for a kind it does not know or when the last one does not end where ``data`` does."""
    lengths: list[int] = []
    at, size = 0, len(data)
    while at < size:
        if at + 6 > size:
            raise ValueError("damaged link payload")
        kind, n = data[at], int.from_bytes(data[at + 1 : at + 5], "little")
        if kind == DELTAS[0]:
            length = 6 + 4 * data[at + 5] + 2 * n
        elif kind == LINK[0]:
            end = at + 5 + 4 * n  # the side views' count, after the ids
            if end >= size:
                raise ValueError("damaged link payload")
            length = 6 + 4 * n + 4 * data[end]
        else:
            raise ValueError(f"not a link payload (kind {bytes((kind,))!r})")
        lengths.append(length)
        at += length
    if at != size:
        raise ValueError("damaged link payload")
    return lengths


def split_tagged(data: bytes | bytearray) -> list[LinkPayload]:
    """The tagged payloads joined in ``data`` (:func:`tagged_lengths`), decoded together (:func:`decode_links`)."""
    view, blobs, at = memoryview(data), [], 0
    for length in tagged_lengths(data):
        blobs.append(bytes(view[at : at + length]))
        at += length
    return decode_links(blobs)


def pack(payloads: Sequence[LinkPayload]) -> tuple[np.ndarray, np.ndarray]:
    blobs = [p.to_bytes() for p in payloads]
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8) if blobs else np.zeros(0, np.uint8)
    return data, np.array([len(b) for b in blobs], dtype=np.int64)


def payload_lengths(data: bytes | bytearray) -> list[int]:
    """The lengths of the :meth:`LinkPayload.to_bytes` payloads joined in ``data`` (the pending links of an
    apprentice checkpoint of format 1), read from their headers; ``ValueError`` when the last one does not end
    where ``data`` does."""
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
