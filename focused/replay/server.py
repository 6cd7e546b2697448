"""A loopback HTTP proxy that answers every request from a :class:`ReplayStore`.

Scrapy reaches it as a forward proxy (``request.meta["proxy"] =
server.proxy_url``, or ``http_proxy=...`` in the environment), so the crawler
sees the pages' original URLs. Only plain ``http://`` is replayed: a
``CONNECT`` (an https tunnel) is answered 501, since tunnelled TLS cannot be
answered from a store without a man-in-the-middle certificate.
"""

from __future__ import annotations

import html
import ipaddress
import logging
import os
import socket
import socketserver
import threading
import time
from contextlib import suppress
from errno import EADDRINUSE
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from focused.replay.store import ReplayStore

__all__ = ["PortInUseError", "ReplayServer"]

logger = logging.getLogger(__name__)

# Never forwarded from the store: hop-by-hop headers (RFC 9110 section 7.6.1)
# describe the 1996 connection, not the page, and would break keep-alive;
# Content-Length is recomputed from the body actually sent.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)
_NO_BODY = frozenset({204, 304})
_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>{code} {reason}</title></head>"
    "<body><h1>{code} {reason}</h1><p>{text}</p></body></html>\n"
)


class PortInUseError(OSError):
    """The replay server's port is already taken by another process or server."""


class ReplayServer:
    """Serve a :class:`ReplayStore` as an HTTP/1.1 forward proxy on loopback.

    Accepts absolute-form requests (``GET http://host/path HTTP/1.1``, what a
    client sends to a proxy) and origin-form requests with a ``Host`` header.
    Stored responses go out with their stored status and headers, minus
    hop-by-hop headers and with the real ``Content-Length``; a URL the store
    does not hold gets a 404 (so an absent ``robots.txt`` allows everything).
    Keep-alive connections are served concurrently from daemon threads.

    Parameters
    ----------
    store
        The responses to serve.
    host
        A loopback address; anything else raises ``ValueError``.
    port
        0 for an ephemeral port (read it back from :attr:`port` after :meth:`start`).
    latency
        Seconds to wait before answering each request, to mimic a real network.
    """

    def __init__(self, store: ReplayStore, host: str = "127.0.0.1", port: int = 0, latency: float = 0.0) -> None:
        if not _is_loopback(host):
            raise ValueError(f"the replay server binds to loopback only, not {host!r}")
        if latency < 0:
            raise ValueError(f"latency must be >= 0, not {latency}")
        if not 0 <= port <= 65535:
            raise ValueError(f"invalid port {port}")
        self.store = store
        self.host = host
        self.latency = float(latency)
        self._requested_port = port
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.redirects = 0

    @property
    def port(self) -> int:
        """The bound port once started, else the requested one."""
        return self._httpd.server_address[1] if self._httpd else self._requested_port

    @property
    def proxy_url(self) -> str:
        """``http://HOST:PORT``, the value for Scrapy's ``proxy`` meta key."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> ReplayServer:
        """Bind and serve from a background thread; raises :class:`PortInUseError`."""
        if self._httpd is not None:
            return self
        try:
            httpd = _HTTPServer(self, (self.host, self._requested_port))
        except OSError as exc:
            if exc.errno == EADDRINUSE:
                raise PortInUseError(
                    EADDRINUSE,
                    f"port {self._requested_port} on {self.host} is already in use "
                    "(another replay server?); choose another port or 0 for any free one",
                ) from exc
            raise
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, name="replay-server", daemon=True
        )
        self._thread.start()
        logger.info("replaying %d pages on %s", len(self.store), self.proxy_url)
        return self

    def stop(self) -> None:
        """Stop serving, close open keep-alive connections and free the port."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()  # joins the handler threads
        if self._thread is not None:
            self._thread.join()
        logger.info("replay server stopped: %d hits, %d misses, %d redirects", self.hits, self.misses, self.redirects)

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _count(self, counter: str) -> None:
        with self._lock:
            setattr(self, counter, getattr(self, counter) + 1)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # SO_REUSEADDR lets a restarted server rebind while old connections sit in
    # TIME_WAIT; on POSIX it does not let two servers listen on one port, so a
    # busy port is still detected (EADDRINUSE). On Windows it would, so off there.
    allow_reuse_address = os.name != "nt"
    request_queue_size = 128

    def __init__(self, replay: ReplayServer, address: tuple[str, int]) -> None:
        self.replay = replay
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        host = "127.0.0.1" if address[0] == "localhost" else address[0]
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, address[1]), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind would do a reverse DNS lookup (getfqdn).
        socketserver.TCPServer.server_bind(self)
        self.server_name = str(self.server_address[0])
        self.server_port = int(self.server_address[1])

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._connections_lock:
                self._connections.discard(request)

    def close_connections(self) -> None:
        """Shut down open connections, waking handler threads blocked on idle keep-alive."""
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            with suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        logger.debug("connection from %s failed", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "focused-replay"
    disable_nagle_algorithm = True
    timeout = 120  # seconds an idle keep-alive connection is kept
    server: _HTTPServer

    def do_GET(self) -> None:
        self._replay(send_body=True)

    def do_HEAD(self) -> None:
        self._replay(send_body=False)

    def do_CONNECT(self) -> None:
        self.send_error(HTTPStatus.NOT_IMPLEMENTED, explain="https (a CONNECT tunnel) is not replayed")

    def _replay(self, send_body: bool) -> None:
        replay = self.server.replay
        if not self._discard_request_body():
            return
        url = self._target_url()
        if url is None:
            self.send_error(HTTPStatus.BAD_REQUEST, explain="origin-form request without a Host header")
            return
        if replay.latency:
            time.sleep(replay.latency)
        try:
            lookup = replay.store.resolve(url)
        except ValueError as exc:
            self.send_error(HTTPStatus.BAD_REQUEST, explain=str(exc))
            return
        if lookup.response is not None:
            replay._count("hits")
            resp = lookup.response
            headers = _forwardable(resp.headers)
            self._send(resp.status, headers, resp.body, send_body)
        elif lookup.redirect is not None:
            replay._count("redirects")
            location = html.escape(lookup.redirect)
            body = _page(301, f'The document has moved <a href="{location}">here</a>.')
            headers = [("Location", lookup.redirect), ("Content-Type", "text/html; charset=utf-8")]
            self._send(301, headers, body, send_body)
        else:
            replay._count("misses")
            body = _page(404, f"{html.escape(url)} is not in the replayed web.")
            self._send(404, [("Content-Type", "text/html; charset=utf-8")], body, send_body)

    def _discard_request_body(self) -> bool:
        """Read past a (pointless) GET/HEAD body so the next request parses."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.send_error(HTTPStatus.NOT_IMPLEMENTED, explain="chunked request bodies are not supported")
            return False
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self.send_error(HTTPStatus.BAD_REQUEST, explain="invalid Content-Length")
            return False
        if length:
            self.rfile.read(length)
        return True

    def _target_url(self) -> str | None:
        target = self.path
        if not target.startswith("/") and "://" in target:
            return target  # absolute form, as sent to a proxy
        host = self.headers.get("Host")
        return f"http://{host}{target}" if host else None

    def _send(self, status: int, headers: list[tuple[str, str]], body: bytes, send_body: bool) -> None:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Unknown"
        lines = [f"HTTP/1.1 {status} {reason}"]
        lines.extend(f"{name}: {value}" for name, value in headers)
        if status in _NO_BODY or status < 200:
            body = b""
        else:
            lines.append(f"Content-Length: {len(body)}")
        if self.close_connection:
            lines.append("Connection: close")
        elif self.request_version == "HTTP/1.0":
            lines.append("Connection: keep-alive")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
        self.wfile.write(head + body if send_body else head)
        logger.debug("%s %s -> %d (%d bytes)", self.command, self.path, status, len(body))

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)


def _forwardable(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop hop-by-hop headers (and those a ``Connection`` header names) and line breaks."""
    connection = ",".join(value for name, value in headers if name.lower() == "connection")
    named = {token.strip().lower() for token in connection.split(",")}
    return [
        (name.replace("\r", " ").replace("\n", " "), value.replace("\r", " ").replace("\n", " "))
        for name, value in headers
        if name.lower() not in _HOP_BY_HOP and name.lower() not in named
    ]


def _page(code: int, text: str) -> bytes:
    return _PAGE.format(code=code, reason=HTTPStatus(code).phrase, text=text).encode("utf-8")
