"""Downloader middleware that refuses requests to internal addresses (SSRF).

Every request passes here, links, redirects and meta refreshes alike (Scrapy
sends a redirect's new request through the downloader middlewares again):

* before the download, the host is checked: an IP literal or ``localhost``
  directly; a name is resolved once (through the installed resolver, whose
  cache the connection then uses) and its address checked;
* at connection time, :class:`focused.resolver.PolicyResolver` (``DNS_RESOLVER``)
  refuses a name that now resolves to an internal address (DNS rebinding);
* after the download, the address actually connected to
  (``Response.ip_address``) is checked, and the response dropped if internal.

A request that goes through a proxy the operator configured
(``FOCUSED_REPLAY_PROXY``, ``http_proxy``) connects to the proxy, not to the
target: the proxy is trusted and the target is checked by name only (an IP
literal or ``localhost``); the proxy resolves names itself.

Refusals are counted in ``focused/refused/internal`` and logged once per host.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urlsplit

from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.error import DNSLookupError

from focused.addresses import AddressPolicy, AllowListError, IPAddress, allow_entry, parse_ip
from focused.errors import ConfigError
from focused.settings.access import setting

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response

logger = logging.getLogger(__name__)

STAT = "focused/refused/internal"


class InternalAddressError(DNSLookupError):
    """A name resolved to an internal address that is not allowed (raised by the resolver)."""


class InternalAddressRefused(IgnoreRequest):
    """A request refused because its host is an internal address; ``allow`` is the
    ``FOCUSED_ALLOW_INTERNAL`` entry that would allow it (``host:port``)."""

    def __init__(self, url: str, allow: str) -> None:
        super().__init__(f"internal address refused: {url}")
        self.url = url
        self.allow = allow


def build_policy(settings_value: object) -> AddressPolicy:
    """The policy of ``FOCUSED_ALLOW_INTERNAL``; a bad entry is a :class:`ConfigError`."""
    try:
        return AddressPolicy.from_setting(settings_value)  # type: ignore[arg-type]
    except AllowListError as exc:
        raise ConfigError(str(exc)) from exc


class RefuseInternalMiddleware:
    """Refuse (``IgnoreRequest``) requests to internal addresses unless ``FOCUSED_ALLOW_INTERNAL`` allows them."""

    def __init__(self, crawler: Crawler, policy: AddressPolicy) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.policy = policy
        self._logged: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler, build_policy(setting(crawler.settings, "FOCUSED_ALLOW_INTERNAL")))

    async def process_request(self, request: Request) -> None:
        parts = urlsplit(request.url)
        host, port = parts.hostname or "", _port(parts)
        if self.policy.refuses(host, None, port):
            self._refuse(request, host, parse_ip(host) or "local name")
        if request.meta.get("proxy") or parse_ip(host) is not None or self.policy.allows_name(host, port):
            return None
        ip = await self._resolve(host)
        if ip is not None and self.policy.refuses(host, ip, port):
            self._refuse(request, host, ip)
        return None

    def process_response(self, request: Request, response: Response) -> Response:
        ip = response.ip_address
        if ip is None or request.meta.get("proxy"):
            return response
        parts = urlsplit(request.url)
        host, port = parts.hostname or "", _port(parts)
        if self.policy.refuses(host, ip, port):
            self._refuse(request, host, ip, after=True)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        if isinstance(exception, InternalAddressError):
            self._refuse(request, urlsplit(request.url).hostname or "", str(exception), after=True)

    async def _resolve(self, host: str) -> IPAddress | None:
        """The host's address through the reactor's resolver (cached for the connection); ``None`` if unknown."""
        from twisted.internet import reactor

        try:
            address = await maybe_deferred_to_future(reactor.resolve(host))  # type: ignore[arg-type]
        except InternalAddressError:
            return parse_ip("127.0.0.1")  # the resolver refused it: an internal address
        except Exception:  # the download reports a name that does not resolve
            return None
        return parse_ip(str(address))

    def _refuse(self, request: Request, host: str, ip: object, *, after: bool = False) -> None:
        self.stats.inc_value(STAT)
        key = host.lower()
        allow = allow_entry(request.url)
        if key not in self._logged:
            self._logged.add(key)
            logger.warning(
                "Refused %s: host %s is an internal address (%s%s); allow it with -s FOCUSED_ALLOW_INTERNAL=%s "
                "(further refusals of this host are counted in %s, not logged)",
                request.url,
                host,
                ip,
                ", reached after the DNS check" if after else "",
                allow,
                STAT,
            )
        raise InternalAddressRefused(request.url, allow)


def _port(parts: SplitResult) -> int | None:
    try:
        port = parts.port
    except ValueError:  # not a number: the download fails on it anyway
        return None
    if port is not None:
        return port
    return 443 if parts.scheme == "https" else 80
