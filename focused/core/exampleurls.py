"""Example URLs fetched with the crawl's address rules (:mod:`focused.core.examples` reads the examples).

An example URL's host is resolved and refused when the crawl may not contact it (:func:`check_address`, from
``FOCUSED_ALLOW_INTERNAL``), redirects included; through a proxy of the environment it is checked by name, as the
crawl checks its requests. A URL that gives no page (an HTTP error, no answer, a PDF) is :class:`Unavailable`:
its caller leaves it out. Scrapy-free.
"""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request
import zlib
from typing import Any
from urllib.parse import urlsplit

from focused.addresses import AddressPolicy, allow_entry, parse_ip
from focused.errors import ConfigError
from focused.page.text import content_type_charset, is_page_type

__all__ = ["Unavailable", "check_address", "fetch_page"]

#: Seconds to wait for one example URL's next bytes, and the most bytes read of it.
FETCH_TIMEOUT = 20.0
MAX_BYTES = 5_000_000
#: Seconds one example URL may take in all: a server that sends a byte now and then holds no crawl's start.
FETCH_DEADLINE = 60.0


class Unavailable(ConfigError):
    """An example URL that could be asked for but gave no page (an HTTP error, no answer, not a page)."""


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to an address the policy allows."""

    def __init__(self, policy: AddressPolicy) -> None:
        self.policy = policy

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        check_address(newurl, self.policy)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def check_address(url: str, policy: AddressPolicy) -> None:
    """ConfigError when ``url``'s host resolves to an address the crawl may not contact.

    Fetched through a proxy (``http_proxy`` and the like, unless ``no_proxy`` names the host), the URL is
    checked by name only, as the crawl checks its requests through a proxy: the proxy, which the operator
    configured, connects and resolves names itself; an internal IP literal or ``localhost`` is still refused.
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ConfigError(f"example URL {url}: bad port") from None
    if policy.allows_name(host, port):
        return
    literal = parse_ip(host)
    if literal is None and _through_proxy(parts.scheme, host):
        if policy.refuses(host, None, port):  # a local name: localhost
            raise _internal(url, host, "a local name")
        return
    if literal is not None:
        addresses = [literal]
    else:
        try:
            infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
        except OSError as exc:
            raise ConfigError(f"example URL {url}: cannot resolve {host} ({exc})") from None
        addresses = [ip for info in infos if (ip := parse_ip(str(info[4][0]))) is not None]
    for ip in addresses:
        if policy.refuses(host, ip, port):
            raise _internal(url, host, ip)


def _internal(url: str, host: str, what: object) -> ConfigError:
    return ConfigError(
        f"example URL {url}: {host} is an internal address ({what}); allow it with "
        f"FOCUSED_ALLOW_INTERNAL={allow_entry(url)}"
    )


def _through_proxy(scheme: str, host: str) -> bool:
    """Whether urllib sends a request for ``scheme://host`` to a proxy of the environment."""
    return scheme.lower() in urllib.request.getproxies() and not urllib.request.proxy_bypass(host)


def fetch_page(url: str, policy: AddressPolicy, user_agent: str) -> tuple[bytes, str | None]:
    """The body of one example URL whose address the caller checked (:func:`check_address`), and the charset its
    ``Content-Type`` declares (the crawl decodes the page by it), asked for as ``user_agent`` (the crawl's
    ``USER_AGENT``: a site that refuses other agents refuses the crawl too); its redirects are checked here.
    :class:`Unavailable` when it gives no page; ConfigError (one line) for a refused redirect."""
    opener = urllib.request.build_opener(_Redirects(policy))
    request = urllib.request.Request(url, headers={"User-Agent": user_agent})
    try:
        with opener.open(request, timeout=FETCH_TIMEOUT) as response:
            content_type = response.headers.get("Content-Type", "")
            if not is_page_type(content_type):  # as the crawl skips it: a PDF's bytes are no example's words
                raise Unavailable(f"example URL {url}: {content_type} is not a page (HTML or plain text)")
            return _body(response, url), content_type_charset(content_type)
    except ConfigError:  # not a page (Unavailable), or a redirect to an address the crawl refuses: as it is
        raise
    except urllib.error.HTTPError as exc:
        raise Unavailable(f"example URL {url}: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Unavailable(f"example URL {url}: cannot fetch it ({reason})") from None


def _body(response: Any, url: str) -> bytes:
    """The first :data:`MAX_BYTES` of the page within :data:`FETCH_DEADLINE`, decompressed when the server
    compressed it unasked (``Content-Encoding: gzip`` or ``deflate``; the decompressed page is bounded too)."""
    deadline = time.monotonic() + FETCH_DEADLINE
    chunks: list[bytes] = []
    size = 0
    while size < MAX_BYTES:
        chunk = response.read1(min(65536, MAX_BYTES - size))  # what has come, not a full buffer: the deadline holds
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if time.monotonic() > deadline:
            raise Unavailable(f"example URL {url}: still sending after {FETCH_DEADLINE:g} s")
    body = b"".join(chunks)
    coding = response.headers.get("Content-Encoding", "").strip().lower()
    if coding in ("gzip", "x-gzip", "deflate"):
        try:  # wbits 47: a gzip or zlib header, found by zlib; MAX_BYTES: a small body that inflates is no bomb
            body = zlib.decompressobj(47).decompress(body, MAX_BYTES)
        except zlib.error:
            raise Unavailable(f"example URL {url}: its {coding} body cannot be decompressed") from None
    return body
