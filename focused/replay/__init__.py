"""Offline replay of a stored web: serve stored HTTP responses by their original URL.

A :class:`ReplayServer` is a loopback HTTP proxy in front of a
:class:`ReplayStore` (loaded from the WebKB archive or from WARC files), so the
Scrapy crawler runs unchanged against real URLs and real 1990s HTML::

    store = open_store("../shared/corpora/webkb-dev.tar.gz")
    with ReplayServer(store) as server:
        ...  # Request(url, meta={"proxy": server.proxy_url})

- ``store``: the stored responses, looked up by URL as a 1990s web server would;
- ``load``: opening a WebKB archive or WARC files (``open_store``), and WebKB to WARC;
- ``warc``: reading and writing WARC files;
- ``labels``: page labels (a TSV file) and ground-truth lookups by URL;
- ``server``: the loopback HTTP proxy;
- ``urlnorm``: the normal form of a URL that keys the store;
- ``files``: the error every reader raises, and output that appears only once complete.
"""
