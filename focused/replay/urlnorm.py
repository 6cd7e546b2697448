"""The canonical form of a URL, used as the replay store's key.

:func:`normalize_url` is deliberately simple and purely syntactic (RFC 3986
section 6.2.2 plus default ports): it never guesses that two different paths
name the same page. That guess (``dir/`` vs ``dir/index.html``) is the store's
lookup logic, where it can depend on what is actually stored.

Query arguments are *not* sorted (unlike ``w3lib.url.canonicalize_url``): the
order is part of what a server receives, some CGI scripts depend on it, and a
crawler requests the URL exactly as written in the page, so the stored URL and
the requested one already agree on the order.
"""

from __future__ import annotations

import string
from urllib.parse import urlsplit

__all__ = ["normalize_url"]

_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_PATH_SAFE = _UNRESERVED | frozenset("!$&'()*+,;=:@/")
_QUERY_SAFE = _PATH_SAFE | frozenset("?")
_HEX = frozenset(string.hexdigits)
_DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21}
# Leading/trailing C0 controls and spaces are stripped, tabs and newlines
# inside removed: what browsers (WHATWG URL) and Scrapy's link extractor do.
_STRIP = "".join(chr(c) for c in range(0x21))
_REMOVE = str.maketrans("", "", "\t\r\n")


def normalize_url(url: str) -> str:
    """Return the canonical key of an absolute URL.

    Lowercases scheme and host, drops a default port (80, 443, 21 for ftp),
    drops the fragment, keeps the query (in its order), turns an empty path into
    ``/``, resolves ``.``/``..`` segments and normalises percent-encoding:
    escapes of unreserved characters are decoded (``%7E`` -> ``~``), other
    escapes are upper-cased (``%2f`` -> ``%2F``), and characters that may not
    appear in a URL (spaces, non-ASCII) are UTF-8 percent-encoded.

    Raises
    ------
    ValueError
        When ``url`` is not an absolute URL (no scheme or no host) or has an
        invalid port or host.

    >>> normalize_url("HTTP://WWW.CS.Cornell.EDU:80/~user/a%7eb/../x.html?b=2&a=1#top")
    'http://www.cs.cornell.edu/~user/x.html?b=2&a=1'
    """
    url = url.strip(_STRIP).translate(_REMOVE)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if not scheme or not parts.netloc:
        raise ValueError(f"not an absolute URL: {url!r}")
    host = _normalize_host(parts.hostname or "", url)
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"invalid port in URL {url!r}: {exc}") from exc
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc = f"{netloc}:{port}"
    userinfo, sep, _ = parts.netloc.rpartition("@")
    if sep:
        netloc = f"{_quote(userinfo, _PATH_SAFE - {'@', '/'})}@{netloc}"
    path = _remove_dot_segments(_quote(parts.path, _PATH_SAFE)) or "/"
    query = _quote(parts.query, _QUERY_SAFE)
    return f"{scheme}://{netloc}{path}?{query}" if query else f"{scheme}://{netloc}{path}"


def _normalize_host(host: str, url: str) -> str:
    host = host.rstrip(".")
    if not host:
        raise ValueError(f"URL without a host: {url!r}")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise ValueError(f"invalid host in URL {url!r}: {exc}") from exc
    return host.lower()


def _quote(component: str, safe: frozenset[str]) -> str:
    """Normalise the percent-encoding of one URL component."""
    data = component.encode("utf-8", "surrogatepass")
    out: list[str] = []
    i, n = 0, len(data)
    while i < n:
        char = chr(data[i])
        if char == "%" and i + 2 < n and chr(data[i + 1]) in _HEX and chr(data[i + 2]) in _HEX:
            decoded = chr(int(data[i + 1 : i + 3], 16))
            out.append(decoded if decoded in _UNRESERVED else "%" + data[i + 1 : i + 3].decode().upper())
            i += 3
            continue
        out.append(char if char in safe else f"%{data[i]:02X}")
        i += 1
    return "".join(out)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, on an absolute path."""
    if "/." not in path:
        return path
    output: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
        elif segment == "..":
            if len(output) > 1:
                output.pop()
            if last:
                output.append("")
        else:
            output.append(segment)
    result = "/".join(output)
    return result if result.startswith("/") else "/" + result
