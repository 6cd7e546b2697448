"""A DNS resolver that never hands the downloader an internal address (DNS rebinding).

Scrapy's default resolver with one more check: a name whose address is internal
(:mod:`focused.addresses`) and not allowed by ``FOCUSED_ALLOW_INTERNAL`` fails
with :class:`focused.downloadermiddlewares.internal.InternalAddressError`, so the connection is never
made, even when the name resolved to a public address at the middleware's check
a moment earlier. Installed with ``DNS_RESOLVER``/``TWISTED_DNS_RESOLVER``; it
resolves for the whole process, so it reads the process's settings. The
configured proxies' hosts (``FOCUSED_REPLAY_PROXY``, ``http_proxy``...) are
trusted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from urllib.request import getproxies

from scrapy.resolver import CachingThreadedResolver

from focused.addresses import AddressPolicy, parse_ip
from focused.downloadermiddlewares.internal import InternalAddressError, build_policy
from focused.errors import ConfigError
from focused.settings.access import setting

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Self

    from scrapy.crawler import Crawler
    from twisted.internet.base import ReactorBase
    from twisted.internet.defer import Deferred


class PolicyResolver(CachingThreadedResolver):
    """:class:`CachingThreadedResolver` that refuses internal addresses not allowed by the policy."""

    def __init__(
        self, reactor: ReactorBase, cache_size: int, timeout: float, policy: AddressPolicy, trusted: set[str]
    ) -> None:
        super().__init__(reactor, cache_size, timeout)
        self.policy = policy
        self.trusted = trusted

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: ReactorBase) -> Self:
        settings = crawler.settings
        cache_size = settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0
        proxies = [setting(settings, "FOCUSED_REPLAY_PROXY") or "", *getproxies().values()]
        trusted = {host.lower() for host in (urlsplit(p).hostname for p in proxies) if host}
        try:
            policy = build_policy(setting(settings, "FOCUSED_ALLOW_INTERNAL"))
        except ConfigError:  # reported in one line by the middleware, when the crawl starts; refuse all meanwhile
            policy = AddressPolicy()
        return cls(reactor, cache_size, settings.getfloat("DNS_TIMEOUT"), policy, trusted)

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Deferred[str]:
        d = super().getHostByName(name, timeout)
        if name.lower() in self.trusted or parse_ip(name) is not None:
            return d  # a configured proxy; an IP literal is no DNS answer (the middleware checked it, port and all)
        return d.addCallback(self._check, name)

    def _check(self, address: Any, name: str) -> Any:
        ip = parse_ip(str(address))
        # The port is not known here: an allow-list entry with a port lets the name through, the
        # middleware then checks the port against the address connected to.
        if ip is not None and self.policy.refuses(name, ip) and not self._allowed_on_some_port(name, ip):
            raise InternalAddressError(name, f"resolves to the internal address {ip}")
        return address

    def _allowed_on_some_port(self, name: str, ip: Any) -> bool:
        return any(e.port is not None and e.matches(name, ip, e.port) for e in self.policy.entries)
