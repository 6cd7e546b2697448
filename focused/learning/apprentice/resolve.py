"""The absolute URL of each link of a parsed page, as Scrapy's link extractor would join it (``<base href>``
first, then the page's URL), with the guards a hostile page needs: a base too long to copy into every link, an
href urljoin cannot join. Used by the link features (:mod:`focused.learning.apprentice.features`,
:mod:`~focused.learning.apprentice.linkids`) and the outlinks (:mod:`focused.analysis.outlinks`). Scrapy-free.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

from focused.page.parsed import ParsedPage

__all__ = ["LONG_URL", "MAX_BASE_LENGTH", "ROOTED_MEMO", "resolve_links"]

#: Scrapy's default ``URLLENGTH_LIMIT``, past which it drops a request: the longest base a link is resolved
#: against (:data:`MAX_BASE_LENGTH`), and the longest URL the process's memos of URLs keep (a longer one is read
#: each time, so that a memo's bytes stay bounded by its entries).
LONG_URL = 2083

_SCHEMES = ("http", "https")
_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def resolve_links(parsed: ParsedPage, base_url: str, upto: int | None = None) -> list[str | None]:
    """The absolute http(s) URL (no fragment) of each of ``parsed.links`` (the first ``upto``), or None.

    Memoised on ``parsed``: a later call resolves only the links not resolved yet.
    """
    upto = len(parsed.links) if upto is None else min(upto, len(parsed.links))
    if parsed.resolved is None or parsed.resolved[0] != base_url:
        parsed.resolved = (base_url, [])
    out = parsed.resolved[1]
    if len(out) >= upto:
        return out
    base = base_url.partition("#")[0]
    if parsed.base_href:
        try:
            joined = urljoin(base, parsed.base_href.strip()).partition("#")[0]
        except ValueError:  # <base href="http://[ffff">: an invalid IPv6 host; the page's own URL is the base
            parsed.bad_base = True
        else:
            if len(joined) > MAX_BASE_LENGTH:  # a hostile base: see MAX_BASE_LENGTH; the page's own URL is the base
                parsed.bad_base = True
            else:
                base = joined
    long_base = len(base) > MAX_BASE_LENGTH
    resolved: dict[str, str | None] = {}
    origin = _origin(base)
    rooted = _rooted
    for href, _, _ in parsed.links[len(out) : upto]:
        url = resolved.get(href, "")
        if url == "":
            key = (
                (origin, href)
                if origin is not None and not long_base and len(href) <= LONG_URL and _root_relative(href)
                else None
            )
            url = rooted.get(key, "") if key is not None else ""
            if url == "":
                try:
                    if long_base and not _SCHEME_RE.match(href.lstrip()):
                        raise ValueError("relative to a base over MAX_BASE_LENGTH")
                    url = _resolve(base, href)
                except ValueError:  # an href urljoin cannot join (an invalid IPv6 host): dropped, counted
                    url = None
                    parsed.bad_links += 1
                else:
                    if key is not None:
                        if len(rooted) >= ROOTED_MEMO:
                            rooted.clear()
                        rooted[key] = url
            resolved[href] = url
        out.append(url)
    return out


#: The longest base a link is resolved against. Resolving reads and copies the whole base for every link: a hostile
#: ``<base href>`` as long as a page, times the page's thousands of relative links, is gigabytes of URLs. A longer
#: ``<base href>`` is ignored (``bad_base``); against a longer page URL only absolute links are resolved, the others
#: dropped and counted (``bad_links``).
MAX_BASE_LENGTH = LONG_URL

#: Root-relative hrefs (``/wiki/Physics``) whose resolution one process remembers, by the base's scheme and
#: host (all urljoin reads of the base for them): a site's pages link the same paths page after page.
ROOTED_MEMO = 100_000
_rooted: dict[tuple[str, str], str | None] = {}


def _origin(base: str) -> str | None:
    """``scheme://netloc`` of an http(s) base URL, or None (another base, or one urlsplit refuses)."""
    try:
        parts = urlsplit(base)
    except ValueError:
        return None
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in _SCHEMES and parts.netloc else None


def _root_relative(href: str) -> bool:
    """Whether urljoin resolves ``href`` from the base's scheme and host alone: one slash, then a path,
    with nothing urlsplit removes or strips inside it (tabs, newlines, control characters)."""
    href = href.strip()
    return href[:1] == "/" and href[1:2] != "/" and href.isprintable()


def _resolve(base_url: str, href: str) -> str | None:
    """Absolute http(s) URL of ``href`` without fragment, or None; ``ValueError`` if urljoin cannot join them."""
    href = href.strip().partition("#")[0]  # a bare "#x" is the page itself
    scheme = _SCHEME_RE.match(href)
    if scheme and scheme.group(1).lower() not in _SCHEMES:
        return None  # mailto:, javascript:, ftp:, ... without the cost of urljoin
    url = urljoin(base_url, href)  # ValueError for an invalid IPv6 host: the caller drops and counts it
    scheme = _SCHEME_RE.match(url)
    if not scheme or scheme.group(1).lower() not in _SCHEMES:
        return None
    return url
