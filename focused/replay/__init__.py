"""Offline replay of a stored web: serve stored HTTP responses by their original URL.

A :class:`ReplayServer` is a loopback HTTP proxy in front of a
:class:`ReplayStore` (loaded from the WebKB archive or from WARC files), so the
Scrapy crawler runs unchanged against real URLs and real 1990s HTML::

    store = open_store("../shared/corpora/webkb-dev.tar.gz")
    with ReplayServer(store) as server:
        ...  # Request(url, meta={"proxy": server.proxy_url})
"""

from focused.replay.labels import read_labels, write_labels
from focused.replay.server import PortInUseError, ReplayServer
from focused.replay.store import Lookup, ReplayStore, StoredResponse, StoreError, open_store
from focused.replay.urlnorm import normalize_url
from focused.replay.warc import iter_warc, webkb_to_warc, write_warc

__all__ = [
    "Lookup",
    "PortInUseError",
    "ReplayServer",
    "ReplayStore",
    "StoreError",
    "StoredResponse",
    "iter_warc",
    "normalize_url",
    "open_store",
    "read_labels",
    "webkb_to_warc",
    "write_labels",
    "write_warc",
]
