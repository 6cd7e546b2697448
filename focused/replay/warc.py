"""Stored responses to and from WARC files (via warcio).

The replay's archive format of record: standard WARC/1.0 ``response`` records
that any WARC tool (pywb, warcio, OpenWayback) reads, with the labels kept
beside them in a TSV (:mod:`focused.replay.labels`).
"""

from __future__ import annotations

import io
import logging
import zlib
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from email.utils import mktime_tz, parsedate_tz
from http import HTTPStatus
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import ChunkedDataReader
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

from focused import __version__
from focused.replay.files import StoreError, atomic_output
from focused.replay.store import StoredResponse

__all__ = ["iter_warc", "write_warc"]

logger = logging.getLogger(__name__)

_EARLIEST = 631152000  # 1990-01-01: older "Date" headers are clock errors
_OCTET_STREAM = "application/octet-stream"
_RESOURCE_SCHEMES = ("ftp:", "file:")


def write_warc(path: str | Path, responses: Iterable[StoredResponse]) -> int:
    """Write ``responses`` as WARC ``response`` records; return how many.

    Gzipped (one gzip member per record) when ``path`` ends in ``.gz``. The
    file appears only once complete (temporary file, then rename). The HTTP
    ``Content-Length`` is rewritten to the body's real length (stored WebKB
    headers often carry a stale one) and ``Transfer-Encoding`` is dropped, as
    the body is stored de-chunked. ``WARC-Date`` is the stored ``Date`` header
    when it parses, the capture time. Non-HTTP URLs (``ftp:``, ``file:``) become
    ``resource`` records keeping only the Content-Type.
    """
    path = Path(path)
    count = 0
    with atomic_output(path) as fh:
        writer = WARCWriter(fh, gzip=path.name.endswith(".gz"), warc_version="1.0")
        info = {"software": f"focused/{__version__} (warcio)", "format": "WARC File Format 1.0"}
        writer.write_record(writer.create_warcinfo_record(path.name, info))
        for resp in responses:
            writer.write_record(_response_record(writer, resp))
            count += 1
    logger.info("wrote %d response records to %s", count, path)
    return count


def _response_record(writer: WARCWriter, resp: StoredResponse) -> ArcWarcRecord:
    warc_headers = {}
    date = _capture_date(resp)
    if date:
        warc_headers["WARC-Date"] = date
    if not resp.url.lower().startswith(("http:", "https:")):
        # No HTTP message to record (ftp:, file:): a "resource" record, as the
        # WARC standard has it; only the Content-Type survives.
        return writer.create_warc_record(
            resp.url,
            "resource",
            payload=io.BytesIO(resp.body),
            length=len(resp.body),
            warc_content_type=_clean(resp.header("Content-Type") or _OCTET_STREAM),
            warc_headers_dict=warc_headers,
        )
    headers: list[tuple[str, str]] = []
    has_length = False
    for name, value in resp.headers:
        name, value = _clean(name), _clean(value)
        lname = name.lower()
        if lname == "transfer-encoding":
            continue
        if lname == "content-length":
            if has_length:
                continue
            value, has_length = str(len(resp.body)), True
        headers.append((name, value))
    try:
        reason = HTTPStatus(resp.status).phrase
    except ValueError:
        reason = "Unknown"
    http_headers = StatusAndHeaders(f"{resp.status} {reason}", headers, protocol="HTTP/1.1")
    return writer.create_warc_record(
        resp.url,
        "response",
        payload=io.BytesIO(resp.body),
        length=len(resp.body),
        http_headers=http_headers,
        warc_headers_dict=warc_headers,
    )


def _clean(value: str) -> str:
    return value.replace("\r", " ").replace("\n", " ")


def _capture_date(resp: StoredResponse) -> str | None:
    value = resp.header("Date")
    parsed = parsedate_tz(value) if value else None  # RFC 1123, RFC 850 and asctime dates
    try:
        stamp = mktime_tz(parsed) if parsed else None
    except (OverflowError, ValueError):
        stamp = None
    if stamp is None or not _EARLIEST <= stamp <= datetime.now(UTC).timestamp():
        return None
    when = datetime.fromtimestamp(stamp, UTC).replace(tzinfo=None)
    return datetime_to_iso_date(when)


def iter_warc(path: str | Path) -> Iterator[StoredResponse]:
    """Yield the HTTP ``response`` records of a WARC file, gzipped or not.

    ``resource`` records of ``ftp:``/``file:`` URLs (how :func:`write_warc`
    stores those) are read as 200 responses; other records (``warcinfo``,
    ``request``, ``revisit``, ``metadata``, ``dns:``) are skipped. Bodies are the stored bytes, still
    content-encoded if they were; a chunked body is de-chunked and its
    ``Transfer-Encoding`` header dropped, so it can be served with a length.

    Raises
    ------
    StoreError
        When the file is missing, unreadable, not a WARC, or has a truncated record.
    """
    try:
        with open(path, "rb") as fh:
            for number, record in enumerate(ArchiveIterator(fh), 1):
                if record.format != "warc":
                    raise StoreError(f"{path} is not a WARC file (record {number} is {record.format!r})")
                block = record.raw_stream.read()
                # warcio reads a truncated record without complaint: check its length.
                expected = None if record.length is None else record.length - _header_length(record)
                if expected != len(block):
                    raise StoreError(f"{path}: record {number} is truncated or has no valid Content-Length")
                if record.rec_type == "response" and record.http_headers:
                    resp = _stored_response(record, block)
                    if resp is not None:
                        yield resp
                elif record.rec_type == "resource":
                    url = _target_uri(record)
                    if url.lower().startswith(_RESOURCE_SCHEMES):
                        ctype = record.rec_headers.get_header("Content-Type")
                        headers = [("Content-Type", ctype)] if ctype and ctype != _OCTET_STREAM else []
                        yield StoredResponse(url, 200, headers, block)
    except (OSError, EOFError, zlib.error, ArchiveLoadFailed, ValueError) as exc:
        raise StoreError(f"cannot read WARC file {path}: {exc}") from exc


def _header_length(record: ArcWarcRecord) -> int:
    return record.http_headers.total_len if record.http_headers else 0


def _target_uri(record: ArcWarcRecord) -> str:
    return (record.rec_headers.get_header("WARC-Target-URI") or "").strip("<> ")


def _stored_response(record: ArcWarcRecord, body: bytes) -> StoredResponse | None:
    url = _target_uri(record)
    try:
        status = int(record.http_headers.get_statuscode())
    except (TypeError, ValueError):
        logger.warning("skipping %s: bad status line %r", url, record.http_headers.statusline)
        return None
    headers = list(record.http_headers.headers)
    if any(k.lower() == "transfer-encoding" and "chunked" in v.lower() for k, v in headers):
        body = ChunkedDataReader(io.BytesIO(body)).read()
        headers = [(k, v) for k, v in headers if k.lower() != "transfer-encoding"]
    return StoredResponse(url, status, headers, body)
