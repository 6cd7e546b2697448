"""Payloads as bytes: what the scheduler stores with a waiting URL, per parent, without pickle.

A payload is whatever the link scorer attached to a request (the apprentice's
:class:`~focused.learning.apprentice.payload.LinkPayload`, or any JSON-able value); a store
keeps bytes, tagged by kind so that they decode to what was encoded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from focused.learning.apprentice.linkbatch import LinkBatch
from focused.learning.apprentice.payload import (
    DELTAS,
    LINK,
    LinkPayload,
    compact_bytes,
    decode_link,
    decode_links,
    encode_links,
    restart_sums,
)

_JSON, _BYTES = b"J", b"B"


def encode_payload(payload: Any) -> bytes:
    """Bytes for a store; ``TypeError`` for a value that is neither a link payload, bytes nor JSON-able.

    A link payload whose ids are sorted (as the crawler makes them) is kept as 2-byte gaps between
    consecutive ids, half the bytes of :meth:`LinkPayload.to_bytes` (a waiting URL's largest part),
    when every gap fits; otherwise as ``to_bytes``.
    """
    if isinstance(payload, LinkPayload):
        return compact_bytes(payload) or LINK + payload.to_bytes()
    if isinstance(payload, bytes | bytearray):
        return _BYTES + bytes(payload)
    return _JSON + json.dumps(payload, separators=(",", ":")).encode()


def encode_payloads(payloads: Sequence[Any]) -> list[bytes]:
    """:func:`encode_payload` of each payload; the link payloads of a page together
    (:func:`~focused.learning.apprentice.payload.encode_links`: the same bytes, in a few array operations)."""
    links = [i for i, p in enumerate(payloads) if isinstance(p, LinkPayload)]
    out = [b"" if isinstance(p, LinkPayload) else encode_payload(p) for p in payloads]
    for i, blob in zip(links, encode_links([payloads[i] for i in links]), strict=True):
        out[i] = blob
    return out


def decode_payload(data: bytes) -> Any:
    """Inverse of :func:`encode_payload`; ``ValueError`` for bytes it did not write."""
    kind, body = data[:1], data[1:]
    if kind in (DELTAS, LINK):
        return decode_link(data)
    if kind == _BYTES:
        return body
    if kind == _JSON:
        return json.loads(body)
    raise ValueError(f"unknown payload kind {kind!r}")


def decode_payloads(blobs: Sequence[bytes]) -> list[Any]:
    """:func:`decode_payload` of each blob, the link payloads decoded together
    (:func:`~focused.learning.apprentice.payload.decode_links`: one ``cumsum`` over all the compact ones' gaps)."""
    out: list[Any] = [None] * len(blobs)
    links: list[int] = []
    for i, blob in enumerate(blobs):
        if blob[:1] in (DELTAS, LINK):
            links.append(i)
        else:
            out[i] = decode_payload(blob)
    for i, payload in zip(links, decode_links([blobs[i] for i in links]), strict=True):
        out[i] = payload
    return out


def decode_link_batch(blobs_per_entry: Sequence[Sequence[bytes]]) -> LinkBatch | None:
    """The waiting URLs' payloads as one :class:`LinkBatch`, if all are link payloads (compact, or
    plain where a gap was too wide) with the same number of side views, as the apprentice stores
    them; else ``None`` (decode them one by one).

    The same ids and views as :func:`decode_payloads`, without a Python object per payload: the
    headers, views and ids of all blobs are cut out in a few passes and read as arrays.
    ``ValueError`` for a damaged payload.
    """
    sizes = np.fromiter(map(len, blobs_per_entry), dtype=np.int64, count=len(blobs_per_entry))
    blobs = [blob for entry in blobs_per_entry for blob in entry]
    if not blobs:
        return LinkBatch(sizes, np.zeros(0, np.int64), np.zeros(0, np.int32), None)
    length = np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs))
    if length.min() < 6:
        return None
    header = np.frombuffer(b"".join([blob[:6] for blob in blobs]), dtype=_HEADER)
    compact = header["kind"] == DELTAS[0]
    plain = np.flatnonzero(header["kind"] == LINK[0])
    if compact.sum() + plain.size != len(blobs):
        return None
    counts = header["n"].astype(np.int64)
    # the side views: after the header of a compact payload, after the ids of a plain one
    k_plain = []
    for i, n in zip(plain.tolist(), counts[plain].tolist(), strict=True):
        k_plain.append(blobs[i][5 + 4 * n] if 5 + 4 * n < len(blobs[i]) else -1)
    ks = set(header["k"][compact].tolist()) | set(k_plain)
    if len(ks) != 1 or -1 in ks:
        return None
    k = ks.pop()
    expected = np.where(compact, 6 + 4 * k + 2 * counts, 6 + 4 * counts + 4 * k)
    if np.any(length != expected):
        raise ValueError("damaged link payload")
    # Every payload's ids as gaps, in payload order (a compact payload's are stored; a plain one's are taken
    # between its ids), then one running sum restarted at each payload: the ids again (``restart_sums``).
    total = int(counts.sum())
    gaps = np.empty(total, dtype=np.uint32)
    side = np.empty((len(blobs), k), dtype="<f4") if k else None
    where = np.flatnonzero(compact)
    in_compact = np.repeat(compact, counts) if plain.size else None  # which ids belong to compact payloads
    if where.size:
        parts = [blobs[i] for i in where.tolist()]
        stored = np.frombuffer(b"".join([blob[6 + 4 * k :] for blob in parts]), dtype="<u2")
        if in_compact is None:
            gaps[:] = stored
        else:
            gaps[in_compact] = stored
        if side is not None:
            side[where] = np.frombuffer(b"".join([blob[6 : 6 + 4 * k] for blob in parts]), dtype="<f4").reshape(-1, k)
    if plain.size:
        parts = [blobs[i] for i in plain.tolist()]
        n = counts[plain]
        body = b"".join([blob[5 : 5 + 4 * m] for blob, m in zip(parts, n.tolist(), strict=True)])
        own = np.frombuffer(body, dtype="<u4")
        between = np.empty_like(own)
        if own.size:
            between[0] = own[0]
            np.subtract(own[1:], own[:-1], out=between[1:])  # modulo 2**32: unsorted ids come back too
            firsts = (np.cumsum(n) - n)[n > 0]
            between[firsts] = own[firsts]
        gaps[np.repeat(~compact, counts)] = between
        if side is not None:
            views = [blob[6 + 4 * m :] for blob, m in zip(parts, n.tolist(), strict=True)]
            side[plain] = np.frombuffer(b"".join(views), dtype="<f4").reshape(-1, k)
    ids = restart_sums(gaps, counts).view(np.int32)
    return LinkBatch(sizes, counts, ids, side)


def decode_framed_link_batch(frames: Sequence[bytes]) -> tuple[LinkBatch | None, np.ndarray]:
    """:func:`decode_link_batch` of waiting URLs whose parents' payloads are each one framed blob
    (:func:`~focused.frontier.store.frame`, as the durable stores keep them), without unframing them one by
    one (half the CPU of unframing, then decoding, measured): the frames are joined, their length prefixes
    read entry by entry in step (one array operation per parent rank), then the payloads decoded from the
    joined bytes (:func:`_joined_link_batch`). Also returns which entries' frames are damaged (a bool per
    entry): their payloads are left out of the batch (none for that entry). ``(None, damaged)`` if a
    payload is not a link payload as :func:`decode_link_batch` reads them; ``ValueError`` for a damaged
    payload in a sound frame."""
    size = np.fromiter(map(len, frames), dtype=np.int64, count=len(frames))
    buf = b"".join(frames)
    u8 = np.frombuffer(buf, dtype=np.uint8)
    end = np.cumsum(size)
    pos = end - size
    damaged = np.zeros(len(frames), dtype=bool)
    found_entry: list[np.ndarray] = []
    found_at: list[np.ndarray] = []
    found_len: list[np.ndarray] = []
    active = np.flatnonzero(pos < end)
    while active.size:  # the k-th payload of every entry that has one, at once
        at = pos[active]
        short = at + 4 > end[active]
        n = _u32_at(u8, np.where(short, 0, at))
        short |= at + 4 + n > end[active]
        if short.any():
            damaged[active[short]] = True
            active, at, n = active[~short], at[~short], n[~short]
        found_entry.append(active)
        found_at.append(at + 4)
        found_len.append(n)
        pos[active] = at + 4 + n
        active = active[pos[active] < end[active]]
    entry = np.concatenate(found_entry) if found_entry else np.zeros(0, dtype=np.int64)
    offs = np.concatenate(found_at) if found_at else np.zeros(0, dtype=np.int64)
    length = np.concatenate(found_len) if found_len else np.zeros(0, dtype=np.int64)
    keep = ~damaged[entry]
    order = np.argsort(offs[keep], kind="stable")  # entry by entry, parent by parent: as the bytes lie
    offs, length, entry = offs[keep][order], length[keep][order], entry[keep][order]
    sizes = np.bincount(entry, minlength=len(frames)).astype(np.int64)
    return _joined_link_batch(buf, offs, length, sizes), damaged


def _u32_at(u8: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The little-endian uint32 at each byte offset ``at`` of ``u8``, as int64."""
    out = u8[at].astype(np.int64)
    for i in (1, 2, 3):
        out |= u8[at + i].astype(np.int64) << (8 * i)
    return out


def _joined_link_batch(buf: bytes, offs: np.ndarray, length: np.ndarray, sizes: np.ndarray) -> LinkBatch | None:
    """The link payloads at ``buf[offs[i] : offs[i] + length[i]]`` (``sizes[j]`` of them for entry j, in order)
    as one :class:`LinkBatch`; ``None`` unless all are link payloads with the same number of side views.
    ``ValueError`` for a damaged one.

    The headers and side views are gathered from the joined bytes with array operations; each payload's
    gaps or ids are cut out with one slice and joined, and one running sum restarted at each compact
    payload (``restart_sums``) turns the gaps into ids.
    """
    if not len(offs):
        return LinkBatch(sizes, np.zeros(0, np.int64), np.zeros(0, np.int32), None)
    if length.min() < 6:
        return None
    u8 = np.frombuffer(buf, dtype=np.uint8)
    kind = u8[offs]
    delta = kind == DELTAS[0]
    plain = kind == LINK[0]
    if not np.all(delta | plain):
        return None
    counts = _u32_at(u8, offs + 1)
    # the number of side views: after the header of a compact payload, after the ids of a plain one
    at_k = np.where(delta, offs + 5, offs + 5 + 4 * counts)
    if np.any(at_k >= offs + length):
        return None
    ks = u8[at_k]
    k = int(ks[0])
    if np.any(ks != k):
        return None
    if np.any(length != np.where(plain, 6 + 4 * counts + 4 * k, 6 + 4 * k + 2 * counts)):
        raise ValueError("damaged link payload")
    side = None
    if k:
        at_side = np.where(plain, offs + 6 + 4 * counts, offs + 6)
        side = u8[at_side[:, None] + np.arange(4 * k)].view("<f4").reshape(-1, k)
    ids = np.empty(0, dtype=np.int32)
    if delta.any():
        gaps = _sections(buf, offs[delta] + 6 + 4 * k, 2 * counts[delta], "<u2")
        ids = restart_sums(gaps.astype(np.uint32), counts[delta]).view(np.int32)
    if plain.any():
        own = _sections(buf, offs[plain] + 5, 4 * counts[plain], "<i4")
        if delta.any():
            in_delta = np.repeat(delta, counts)
            joined = np.empty(len(in_delta), dtype=np.int32)
            joined[in_delta] = ids
            joined[~in_delta] = own
            ids = joined
        else:
            ids = own.astype(np.int32)
    return LinkBatch(sizes, counts, ids, side)


def _sections(buf: bytes, starts: np.ndarray, sizes: np.ndarray, dtype: str) -> np.ndarray:
    """The items of ``dtype`` at ``buf[starts[i] : starts[i] + sizes[i]]`` (bytes; ``starts`` rising, the
    sections apart), joined.

    One mask over the whole buffer, read in the widest unit (4, 2 or 1 bytes) that divides every start and
    size: the runs to skip and to keep alternate, so the mask is one ``np.repeat`` of them, and the items one
    selection; a slice per section cost several times as much (docs/results.md, re-scoring)."""
    if not len(starts):
        return np.zeros(0, dtype=dtype)
    common = int(np.bitwise_or.reduce(starts)) | int(np.bitwise_or.reduce(sizes))
    unit = 4 if common % 4 == 0 else 2 if common % 2 == 0 else 1
    units = np.frombuffer(buf, dtype=f"u{unit}", count=len(buf) // unit)
    at, n = starts // unit, sizes // unit
    runs = np.empty(2 * len(at) + 1, dtype=np.int64)  # skip, keep, skip, ..., keep, skip
    runs[0] = at[0]
    runs[1::2] = n
    runs[2:-1:2] = at[1:] - at[:-1] - n[:-1]
    runs[-1] = units.size - at[-1] - n[-1]
    keep = np.zeros(runs.size, dtype=bool)
    keep[1::2] = True
    return units[np.repeat(keep, runs)].view(dtype)


#: The header of a compact link payload: kind, number of ids, number of side views.
_HEADER = np.dtype([("kind", "u1"), ("n", "<u4"), ("k", "u1")])
