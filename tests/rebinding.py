"""The crawl's resolver over a hosts table, for tests: DNS answers without a DNS query.

:class:`HostsTable` takes the place of the thread that calls
``socket.gethostbyname`` under Scrapy's caching resolver; :class:`RebindingResolver`
is :class:`focused.resolver.PolicyResolver` (its answer check, Scrapy's cache)
over that table. A crawl installs it with
``TWISTED_DNS_RESOLVER=tests.rebinding.RebindingResolver``.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from twisted.internet import defer
from twisted.internet.base import ThreadedResolver
from twisted.internet.error import DNSLookupError

from focused.addresses import parse_ip
from focused.resolver import PolicyResolver

if TYPE_CHECKING:
    from collections.abc import Sequence

    from twisted.internet.base import ReactorBase

#: name -> its answers in turn, the last one for good. ``rebind.test`` rebinds: its first answer is public
#: (192.0.2.1, TEST-NET-1, never routed), every later one loopback; the others always answer the same.
HOSTS: dict[str, tuple[str, ...]] = {
    "rebind.test": ("192.0.2.1", "127.0.0.1"),
    "site.test": ("127.0.0.1",),
    "loopback.test": ("127.0.0.1",),
    "mapped.test": ("::ffff:10.0.0.1",),
    "lan.test": ("10.0.0.7",),
    "public.test": ("93.184.216.34",),
}


class HostsTable(ThreadedResolver):
    """Answers from :data:`HOSTS`; an IP literal is its own answer; any other name does not resolve."""

    def __init__(self, reactor: ReactorBase) -> None:
        super().__init__(reactor)
        self.asked: Counter[str] = Counter()

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> defer.Deferred[str]:
        if parse_ip(name) is not None:
            return defer.succeed(name)
        answers = HOSTS.get(name.lower())
        if answers is None:
            return defer.fail(DNSLookupError(f"address {name!r} not found: not in the test hosts table"))
        self.asked[name.lower()] += 1
        return defer.succeed(answers[min(self.asked[name.lower()], len(answers)) - 1])


class RebindingResolver(PolicyResolver, HostsTable):
    """``PolicyResolver`` whose lookups (under Scrapy's cache) read :data:`HOSTS`.

    The method order is ``PolicyResolver``, Scrapy's ``CachingThreadedResolver``,
    then :class:`HostsTable` in place of Twisted's threaded lookup: everything the
    crawl's resolver does is run, only the DNS query is not.
    """
