"""The extension that writes the crawl's pages to WARC files (``FOCUSED_WARC``): a focused crawl's corpus.

Every page the crawl labels (``FOCUSED_WARC_PAGES = "all"``), or only those the
critic judged relevant (``"relevant"``), becomes a WARC ``response`` record and
the ``request`` record that fetched it (linked by ``WARC-Concurrent-To``), with
the HTTP headers and body as Scrapy received them. Scrapy has already
decompressed the body (HttpCompressionMiddleware) and de-chunked it, so the
response record keeps the headers consistent with the stored body:
``Transfer-Encoding`` is dropped and ``Content-Length`` is the body's length;
``Content-Encoding`` is gone once Scrapy decoded every encoding (one it cannot
decode stays, with the body still encoded). ``Proxy-Authorization`` is left
out of the request record.

The extension listens to ``item_scraped``, which carries the response, after
the pipeline's :data:`focused.signals.page_labelled` has said whether the page
is relevant. It only queues the response's parts; one writer thread builds the
records, gzips them (one gzip member per record) and writes them, so the
reactor never waits on the disk unless the writer falls
:data:`MAX_PENDING_BYTES` behind. Files are ``<job>-<NNNNN>.warc.gz`` in
``FOCUSED_WARC`` (job: ``FOCUSED_JOB``, else the crawl's start time and
process id), each begun with a ``warcinfo`` record and closed at
``FOCUSED_WARC_MAX_BYTES``. A file being written is named ``….warc.gz.open``
and renamed once complete, so every ``.warc.gz`` is valid; a killed crawl
leaves at most its one ``.open`` file, whose whole records are still readable.
"""

from __future__ import annotations

import io
import logging
import os
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import signals as scrapy_signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.threads import deferToThread
from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

from focused import __version__, signals
from focused.items import PageItem
from focused.paths import project_path
from focused.settings.access import setting

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from focused.signals import LabelledPage

logger = logging.getLogger(__name__)

#: Bytes of queued pages the writer may lag behind; past it the reactor waits for the writer (back-pressure).
MAX_PENDING_BYTES = 64 * 1024 * 1024
#: How often the writer thread looks for queued pages when it has none.
POLL_SECONDS = 0.05
#: Suffix of the file being written.
OPEN_SUFFIX = ".open"
#: Verdicts of pages labelled but not yet scraped, kept at most (item_scraped follows page_labelled at once).
_MAX_VERDICTS = 10_000
#: Response headers that describe the bytes on the wire, not the body Scrapy hands over.
_WIRE_HEADERS = {"transfer-encoding", "content-length"}
#: Request headers a corpus must not keep.
_SECRET_HEADERS = {"proxy-authorization"}


@dataclass(frozen=True)
class Capture:
    """One fetched page as the crawl got it (taken on the reactor thread, turned into records by the writer)."""

    url: str
    method: str
    request_headers: list[tuple[bytes, bytes]]
    request_body: bytes
    status: int
    protocol: str
    response_headers: list[tuple[bytes, bytes]]
    body: bytes
    date: str  # WARC-Date of the capture
    ip_address: str = ""

    @property
    def size(self) -> int:
        return len(self.body) + len(self.request_body)


def _headers(headers: Any) -> list[tuple[bytes, bytes]]:
    """Scrapy's multi-valued ``Headers`` as ``(name, value)`` pairs, in order."""
    return [(bytes(name), bytes(value)) for name, values in headers.items() for value in values]


def _text(value: bytes) -> str:
    return value.decode("latin-1").replace("\r", " ").replace("\n", " ")  # HTTP headers are ISO-8859-1


class WarcFiles:
    """Size-rotated ``.warc.gz`` files in ``folder``, written by one thread (Scrapy-free).

    :meth:`add` only queues; :meth:`close` writes what is queued, closes the
    current file and joins the thread (it blocks: call it off the reactor).
    ``on_error`` is called (from the writer thread) when a write fails; the
    writer then drops what it is given.
    """

    def __init__(self, folder: str | Path, prefix: str, max_bytes: int, on_error: Any = None) -> None:
        self.folder = Path(folder)
        self.prefix = prefix
        self.max_bytes = max(1, max_bytes)
        self.on_error = on_error
        self.files: list[Path] = []  # completed files
        self.records = 0  # pages written
        self.bytes = 0  # bytes of the completed files
        self.error: BaseException | None = None
        self._queue: deque[Capture] = deque()
        self._pending = 0
        self._pending_lock = threading.Lock()
        self._drained = threading.Event()
        self._wake = threading.Event()
        self._closing = False
        self._seq = 0
        self._fh: IO[bytes] | None = None
        self._writer: WARCWriter | None = None
        self._path: Path | None = None
        self._pages_in_file = 0
        self.folder.mkdir(parents=True, exist_ok=True)  # on the caller's thread: a bad folder fails at start
        self._thread = threading.Thread(target=self._run, name="focused-warc", daemon=True)
        self._thread.start()

    def add(self, capture: Capture) -> bool:
        """Queue one page; ``False`` if the writer has failed (nothing more is written)."""
        if self.error is not None:
            return False
        with self._pending_lock:
            self._pending += capture.size
            over = self._pending > MAX_PENDING_BYTES
        self._queue.append(capture)
        if over:  # the disk is slower than the crawl: wait rather than hold an unbounded queue
            self._wake.set()
            while self._pending > MAX_PENDING_BYTES and self.error is None and self._thread.is_alive():
                self._drained.wait(POLL_SECONDS)
                self._drained.clear()
        return True

    def close(self) -> None:
        """Write what is queued, complete the current file and stop the writer thread."""
        self._closing = True
        self._wake.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            if not self._queue:
                if self._closing:
                    break
                self._wake.wait(POLL_SECONDS)
                self._wake.clear()
                continue
            capture = self._queue.popleft()
            with self._pending_lock:
                self._pending -= capture.size
            self._drained.set()
            if self.error is None:
                try:
                    self._write(capture)
                except Exception as exc:  # disk full, folder gone: say so once, stop writing
                    self._failed(exc)
        if self.error is None:
            try:
                self._finish_file()
            except Exception as exc:
                self._failed(exc)

    def _failed(self, exc: BaseException) -> None:
        self.error = exc
        self._drained.set()
        if self.on_error is not None:
            self.on_error(exc)

    def _write(self, capture: Capture) -> None:
        if self._writer is None:
            self._open_file()
        assert self._writer is not None and self._fh is not None
        response = self._response_record(self._writer, capture)
        request = self._request_record(self._writer, capture)
        self._writer.write_request_response_pair(request, response)
        self.records += 1
        self._pages_in_file += 1
        if self._fh.tell() >= self.max_bytes:
            self._finish_file()

    def _open_file(self) -> None:
        """Claim the next free ``<prefix>-<NNNNN>.warc.gz`` (two crawls may share a folder) and begin it."""
        while True:
            self._seq += 1
            final = self.folder / f"{self.prefix}-{self._seq:05d}.warc.gz"
            partial = final.with_name(final.name + OPEN_SUFFIX)
            if final.exists():
                continue
            try:
                fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                continue
            if final.exists():  # completed by another writer between the two looks
                os.close(fd)
                partial.unlink()
                continue
            break
        self._fh = os.fdopen(fd, "wb", buffering=1024 * 1024)
        self._path = final
        self._pages_in_file = 0
        self._writer = WARCWriter(self._fh, gzip=True, warc_version="1.0")
        info = {"software": f"focused/{__version__} (warcio)", "format": "WARC File Format 1.0"}
        self._writer.write_record(self._writer.create_warcinfo_record(final.name, info))

    def _finish_file(self) -> None:
        if self._fh is None or self._path is None:
            return
        self._fh.flush()
        os.fsync(self._fh.fileno())
        size = self._fh.tell()
        self._fh.close()
        os.replace(self._path.with_name(self._path.name + OPEN_SUFFIX), self._path)
        self.files.append(self._path)
        self.bytes += size
        logger.info("WARC file complete: %s (%d pages, %.1f MB)", self._path, self._pages_in_file, size / 1e6)
        self._fh = self._writer = self._path = None

    @staticmethod
    def _response_record(writer: WARCWriter, capture: Capture) -> Any:
        headers = [(_text(k), _text(v)) for k, v in capture.response_headers if _text(k).lower() not in _WIRE_HEADERS]
        headers.append(("Content-Length", str(len(capture.body))))
        try:
            reason = HTTPStatus(capture.status).phrase
        except ValueError:
            reason = "Unknown"
        http_headers = StatusAndHeaders(f"{capture.status} {reason}", headers, protocol=capture.protocol)
        warc_headers = {"WARC-Date": capture.date}
        if capture.ip_address:
            warc_headers["WARC-IP-Address"] = capture.ip_address
        return writer.create_warc_record(
            capture.url,
            "response",
            payload=io.BytesIO(capture.body),
            length=len(capture.body),
            http_headers=http_headers,
            warc_headers_dict=warc_headers,
        )

    @staticmethod
    def _request_record(writer: WARCWriter, capture: Capture) -> Any:
        parts = urlsplit(capture.url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = [(_text(k), _text(v)) for k, v in capture.request_headers if _text(k).lower() not in _SECRET_HEADERS]
        if not any(name.lower() == "host" for name, _ in headers):
            headers.insert(0, ("Host", parts.netloc))
        # Scrapy sends HTTP/1.1 whatever the server answers with
        http_headers = StatusAndHeaders(f"{capture.method} {target} HTTP/1.1", headers, is_http_request=True)
        return writer.create_warc_record(
            capture.url,
            "request",
            payload=io.BytesIO(capture.request_body),
            length=len(capture.request_body),
            http_headers=http_headers,
            warc_headers_dict={"WARC-Date": capture.date},
        )


class WarcWriter:
    """Write the crawl's pages (all, or the relevant ones) to WARC files in ``FOCUSED_WARC``."""

    def __init__(self, crawler: Crawler, files: WarcFiles, relevant_only: bool) -> None:
        self.crawler = crawler
        self.files = files
        self.relevant_only = relevant_only
        self.verdicts: dict[str, bool] = {}
        self.failed = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        folder = setting(crawler.settings, "FOCUSED_WARC") or ""
        if not folder:
            raise NotConfigured
        job = setting(crawler.settings, "FOCUSED_JOB") or f"focused-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        files = WarcFiles(
            project_path(folder),
            job.replace("/", "_").replace(os.sep, "_"),
            setting(crawler.settings, "FOCUSED_WARC_MAX_BYTES"),
        )
        ext = cls(crawler, files, setting(crawler.settings, "FOCUSED_WARC_PAGES") == "relevant")
        files.on_error = ext._writer_died
        leftovers = sorted(p.name for p in files.folder.glob(f"*.warc.gz{OPEN_SUFFIX}"))
        if leftovers:
            logger.warning(
                "%s holds %d incomplete WARC file(s) of a crawl that was stopped (%s): their whole records "
                "are readable; rename one to .warc.gz to keep it",
                files.folder,
                len(leftovers),
                ", ".join(leftovers[:3]) + (", ..." if len(leftovers) > 3 else ""),
            )
        if ext.relevant_only:
            crawler.signals.connect(ext.page_labelled, signal=signals.page_labelled)
        crawler.signals.connect(ext.item_scraped, signal=scrapy_signals.item_scraped)
        crawler.signals.connect(ext.spider_closed, signal=scrapy_signals.spider_closed)
        logger.info(
            "Writing %s pages to WARC files %s/%s-NNNNN.warc.gz",
            "relevant" if ext.relevant_only else "all",
            files.folder,
            files.prefix,
        )
        return ext

    def page_labelled(self, page: LabelledPage) -> None:
        if len(self.verdicts) >= _MAX_VERDICTS:  # an item some later pipeline dropped: never scraped
            del self.verdicts[next(iter(self.verdicts))]
        self.verdicts[page.url] = page.relevant

    def item_scraped(self, item: Any, response: Response) -> None:
        if not isinstance(item, PageItem) or self.failed:
            return
        if self.relevant_only and not self.verdicts.pop(item.url, False):
            return
        request = response.request
        capture = Capture(
            url=response.url,
            method=request.method if request is not None else "GET",
            request_headers=_headers(request.headers) if request is not None else [],
            request_body=request.body if request is not None else b"",
            status=response.status,
            protocol=response.protocol or "HTTP/1.1",
            response_headers=_headers(response.headers),
            body=response.body,
            date=datetime_to_iso_date(datetime.now(UTC).replace(tzinfo=None)),
            ip_address=str(response.ip_address or ""),
        )
        if self.files.add(capture):
            self.crawler.stats.inc_value("focused/warc/pages")

    async def spider_closed(self) -> None:
        await maybe_deferred_to_future(deferToThread(self.files.close))
        stats = self.crawler.stats
        stats.set_value("focused/warc/files", len(self.files.files))
        stats.set_value("focused/warc/bytes", self.files.bytes)
        if self.files.files:
            logger.info(
                "Wrote %d pages to %d WARC file(s) in %s", self.files.records, len(self.files.files), self.files.folder
            )

    def _writer_died(self, exc: BaseException) -> None:
        """Called from the writer thread: stop the crawl on the reactor thread."""
        from twisted.internet import reactor

        reactor.callFromThread(self._writer_failed, exc)

    def _writer_failed(self, exc: BaseException) -> None:
        """The WARC files cannot take pages any more: stop the crawl (exit status 1) with one error line."""
        if self.failed:
            return
        self.failed = True
        logger.error(
            "The WARC writer failed (%s): stopping the crawl; %d pages were written to WARC files in %s",
            exc,
            self.files.records,
            self.files.folder,
        )
        self.crawler.stats.set_value("focused/warc/error", str(exc))
        engine = self.crawler.engine
        if engine is not None and engine.spider is not None:
            deferred_from_coro(engine.close_spider_async(reason="warc_failed"))
