"""A real HTTP server on a free loopback port that answers from a table of paths, for tests.

Crawls reach it directly (no proxy), so they need ``FOCUSED_ALLOW_INTERNAL`` to allow it:
:attr:`LocalServer.allow` is the entry that allows this server's port only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from focused.bench.runner import CrawlSpec
from tests.sites import train_critic

#: path -> (status, headers, body); or a callable of the path returning that.
Answer = tuple[int, list[tuple[str, str]], bytes]
HTML = [("Content-Type", "text/html; charset=utf-8")]


class LocalServer:
    """Serve ``pages`` on ``127.0.0.1:<free port>``; unknown paths get a 404. Counts hits per path."""

    def __init__(self, pages: dict[str, Answer] | Callable[[str], Answer | None]) -> None:
        self.pages = pages
        self.hits: list[str] = []
        #: the User-Agent of each request, in the order of ``hits``
        self.agents: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.hits.append(self.path)
                server.agents.append(self.headers.get("User-Agent"))
                answer = server.answer(self.path)
                status, headers, body = answer or (404, HTML, b"<html><body>not found</body></html>")
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.allow = f"127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def answer(self, path: str) -> Answer | None:
        if callable(self.pages):
            return self.pages(path)
        return self.pages.get(path)

    def __enter__(self) -> LocalServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def direct_crawl(web: LocalServer, tmp: Path, name: str, *, allow: bool = True, **settings: Any) -> CrawlSpec:
    """A bfs crawl of ``web`` from ``/`` without a proxy, topic ``sport``; ``allow``: its port is allowed."""
    if allow:
        settings.setdefault("FOCUSED_ALLOW_INTERNAL", web.allow)
    return CrawlSpec(
        name=name,
        topic="sport",
        strategy="bfs",
        seeds=(web.url + "/",),
        model=train_critic(tmp / "critic.model"),
        proxy="",
        db=tmp / f"{name}.sqlite",
        max_pages=0,
        settings=settings,
    )
