"""A parsed page's outlinks as Scrapy's link extractor would request them (Scrapy-free: its list of ignored
extensions is copied here), for the spider and for the page-analysis worker (:mod:`focused.analysis.worker`)."""

from __future__ import annotations

from urllib.parse import urlparse

from w3lib.url import safe_url_string

from focused.learning.apprentice.resolve import LONG_URL, resolve_links
from focused.page.parsed import ParsedPage


def take_links(
    parsed: ParsedPage, url: str, encoding: str, max_links: int, max_url_length: int = 0
) -> tuple[list[str], int]:
    """The page's outlinks (at most ``max_links``; 0: all) and how many ``<a href>`` were left unread.

    The links Scrapy's ``LinkExtractor(unique=True)`` would give (percent-encoded
    with the page's encoding, without the extensions it ignores), read from the
    page's one parse, once each, in document order, without the page itself. A
    link without a usable host (``http:// www.x.com``, ``http://%20/x``) is
    dropped here: the downloader would fail on it with an error per link. Past
    the cap the page is cut (``parsed`` keeps only the anchors read), so that no
    later stage works on the links not taken. A link longer than ``max_url_length`` (the crawl's
    ``URLLENGTH_LIMIT``, past which Scrapy drops the request; 0: no limit) is dropped here, counted in
    ``parsed.long_links``: a hostile page's megabyte URLs would otherwise be kept by every later stage (the
    apprentice's waiting links, the frontier, caches of URLs) until Scrapy drops them.
    """
    own = url.split("#", 1)[0]
    links: dict[str, None] = {}
    cap = max_links or len(parsed.links)
    read = 0
    while read < len(parsed.links) and len(links) < cap:
        upto = min(len(parsed.links), read + cap - len(links))  # resolve only what may be taken
        for resolved in resolve_links(parsed, url, upto)[read:upto]:
            if resolved is None:
                continue
            accepted = _accepted(resolved, encoding)
            if accepted is not None and max_url_length and len(accepted) > max_url_length:
                parsed.long_links += 1
            elif accepted is not None and accepted != own:
                links[accepted] = None
        read = upto
    over = len(parsed.links) - read
    if over:
        parsed.truncate(read)
    return list(links), over


#: ``scrapy.linkextractors.IGNORED_EXTENSIONS`` (Scrapy 2.x), copied: importing it imports all of Scrapy and
#: Twisted (``scrapy/__init__``), 24 MB more in the page-analysis worker, which needs nothing else of them.
#: tests/test_outlinks_scrapy_free.py checks that the copy is Scrapy's list.
IGNORED_EXTENSIONS = tuple(
    (
        "7z 7zip bz2 rar tar tar.gz xz zip mng pct bmp gif jpg jpeg png pst psp tif tiff ai drw dxf eps ps svg "
        "cdr ico webp mp3 wma ogg wav ra aac mid au aiff 3gp asf asx avi mov mp4 mpg qt rm swf wmv m4a m4v flv "
        "webm xls xlsm xlsx xltm xltx potm potx ppt pptm pptx pps doc docb docm docx dotm dotx odt ods odg odp "
        "css pdf exe bin rss dmg iso apk jar sh rb js hta bat cpl msi msp py "
    ).split()
)
_DENIED_EXTENSIONS = tuple(f".{ext}" for ext in IGNORED_EXTENSIONS)
_accepted_memo: dict[tuple[str, str], str | None] = {}
_MEMO_SIZE = 100_000


def _accepted(url: str, encoding: str) -> str | None:
    """``url`` as Scrapy's link extractor would request it, or None if it is not followed (memoised)."""
    key = (url, encoding)
    if key in _accepted_memo:
        return _accepted_memo[key]
    safe = _safe(url, encoding)
    if len(url) <= LONG_URL:  # a longer one is read each time: the memo's bytes stay bounded by its entries
        if len(_accepted_memo) >= _MEMO_SIZE:
            _accepted_memo.clear()
        _accepted_memo[key] = safe
    return safe


def _safe(url: str, encoding: str) -> str | None:
    """:func:`_accepted` without its memo."""
    try:
        safe: str | None = safe_url_string(url, encoding=encoding).split("#", 1)[0]
    except ValueError:
        safe = None
    try:
        parts = urlparse(safe) if safe is not None else None
    except ValueError:  # e.g. an invalid IPv6 host
        safe = parts = None
    if parts is not None and (
        parts.scheme not in ("http", "https")
        or not _valid_host(parts.hostname)
        or parts.path.lower().endswith(_DENIED_EXTENSIONS)
    ):
        safe = None
    return safe


def _valid_host(host: str | None) -> bool:
    """A non-empty host without whitespace or percent-escapes (which no DNS name has)."""
    if not host:
        return False
    return not any(c.isspace() or c == "%" for c in host)
