"""One page, several URLs: the aliases a web server answers alike, collapsed before a link is queued.

A server with Apache's defaults serves ``dir/``, ``dir/index.html`` and ``dir//`` as one
page; a crawler that queues all three fetches it three times (on the WebKB replay, one
fetch in twenty of a 250-page crawl was such a repeat, ``host:80/`` and ``host/`` too).
:func:`collapse_aliases` rewrites a URL to the form the others collapse to: the scheme's
default port is dropped (RFC 3986, 6.2.3), repeated slashes in the path become one and a
trailing ``index.html`` / ``index.htm`` (no query) is dropped. Apache Nutch's default URL
normalizer makes the same rewrites (among others). Other default documents
(``index.php``, ``default.htm``) depend on the server's configuration and are left alone.

Scrapy-free: the spider middleware is :class:`focused.spidermiddlewares.canonical.CanonicalUrlMiddleware`;
the benchmark's label lookup (:func:`focused.core.runtime.label_key_lookup`) uses it too.
"""

from __future__ import annotations

import re

__all__ = ["collapse_aliases"]

#: Repeated slashes, but not a URL inside a path (``/web/2005/http://a.test/``, an archive's or a proxy's).
_SLASHES = re.compile(r"(?<!:)//+")
_INDEX = ("/index.html", "/index.htm")
_DEFAULT_PORTS = {"http": ":80", "https": ":443"}


def collapse_aliases(url: str) -> str:
    """``url`` (http or https) without the scheme's default port, with its path's repeated slashes collapsed
    and a trailing ``index.html``/``.htm`` dropped (lower case only: where file names are case-sensitive
    ``INDEX.HTML`` is another file). Any other URL is returned as it is."""
    head = url[:8].lower()
    start = 7 if head.startswith("http://") else 8 if head.startswith("https://") else 0
    slash = url.find("/", start) if start else -1
    if slash < 0 or url.find("?", start, slash) >= 0 or url.find("#", start, slash) >= 0:
        return url  # not http(s), or no path
    if url.find(":", start, slash) >= 0:  # a port: http://host:80/ -> http://host/
        port = _DEFAULT_PORTS[head[: start - 3]]
        host_end = slash - len(port)
        # host:80 and [v6]:80, not user:password@host:80 (nor a host with a second port)
        lone = url.find(":", start, host_end) < 0 or url[host_end - 1] == "]"
        if host_end > start and lone and url.endswith(port, start, slash):
            url, slash = url[:host_end] + url[slash:], host_end
    end = len(url)
    for mark in ("?", "#"):
        at = url.find(mark, slash)
        if 0 <= at < end:
            end = at
    path = url[slash:end]
    new = _SLASHES.sub("/", path) if "//" in path else path
    if url[end : end + 1] != "?" and new.endswith(_INDEX):
        new = new[: new.rfind("/") + 1]
    return url if new == path else url[:slash] + new + url[end:]
