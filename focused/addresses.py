"""Which network addresses a crawl may contact: internal ones are refused unless allowed.

Plain Python, no Scrapy: :class:`AddressPolicy` is built from the
``FOCUSED_ALLOW_INTERNAL`` setting and answers, for a host name, an IP address
and a port, whether a request there is allowed. Used by the downloader
middleware (:mod:`focused.downloadermiddlewares.internal`) before and after each request and by the
DNS resolver (:mod:`focused.resolver`) at connection time.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Internal ranges: loopback, private (RFC 1918, IPv6 unique-local), link-local
#: (169.254/16 holds the cloud metadata address 169.254.169.254), unspecified,
#: carrier-grade NAT and IPv4 "this network".
INTERNAL_NETWORKS: tuple[IPNetwork, ...] = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "::/128",
        "::1/128",
        "fc00::/7",
        "fe80::/10",
    )
)


#: Values that look like a switch; ``FOCUSED_ALLOW_INTERNAL`` takes hosts, and ``1`` would parse as 0.0.0.1.
YES_NO = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0"})


class AllowListError(ValueError):
    """An entry of ``FOCUSED_ALLOW_INTERNAL`` that is neither a network nor a host name."""


def parse_ip(text: str) -> IPAddress | None:
    """``text`` as an IP address (``[::1]`` brackets allowed), else ``None``."""
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


def effective_ip(ip: IPAddress) -> IPAddress:
    """The IPv4 address inside an IPv4-mapped IPv6 address (``::ffff:a.b.c.d``), else ``ip``."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def is_internal_ip(ip: IPAddress) -> bool:
    """True for loopback, private, link-local, unspecified (and their IPv4-mapped IPv6 forms)."""
    ip = effective_ip(ip)
    return any(ip.version == net.version and ip in net for net in INTERNAL_NETWORKS)


def is_internal_name(host: str) -> bool:
    """Host names that mean this machine without any DNS lookup (``localhost``, ``*.localhost``)."""
    host = host.lower().rstrip(".")
    return host == "localhost" or host.endswith(".localhost")


@dataclass(frozen=True)
class _Entry:
    network: IPNetwork | None = None
    host: str | None = None
    port: int | None = None

    def matches(self, host: str, ip: IPAddress | None, port: int | None) -> bool:
        if self.port is not None and port != self.port:
            return False
        if self.host is not None:
            return host.lower().rstrip(".") == self.host
        if ip is None or self.network is None:
            return False
        ip = effective_ip(ip)
        return ip.version == self.network.version and ip in self.network


def _parse_entry(text: str) -> _Entry:
    entry = text.strip()
    port: int | None = None
    if entry.startswith("["):  # [v6]:port
        inner, _, rest = entry[1:].partition("]")
        entry, port_text = inner, rest.removeprefix(":")
        port = _port(port_text, text) if port_text else None
    elif entry.count(":") == 1:  # v4 or name with a port
        entry, port_text = entry.split(":")
        port = _port(port_text, text)
    try:
        return _Entry(network=ipaddress.ip_network(entry, strict=False), port=port)
    except ValueError:
        pass
    name = entry.lower().rstrip(".")
    if (
        not name
        or "/" in name
        or any(c.isspace() for c in name)
        or not all(part and all(c.isalnum() or c in "-_" for c in part) for part in name.split("."))
    ):
        raise AllowListError(
            f"FOCUSED_ALLOW_INTERNAL: {text!r} is not a network, address or host name "
            "(valid: comma-separated entries like 127.0.0.0/8, ::1, 10.1.2.3:8080, [::1]:8080, intranet.example)"
        )
    return _Entry(host=name, port=port)


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise AllowListError(f"FOCUSED_ALLOW_INTERNAL: bad port in {entry!r} (valid: 1 to 65535)")
    return int(text)


@dataclass(frozen=True)
class AddressPolicy:
    """Refuse internal addresses except those matching an allow-list entry.

    Entries are CIDR networks or addresses (``127.0.0.0/8``, ``::1``) and host
    names (``intranet.example``), each optionally with ``:port``
    (``127.0.0.1:8080``, ``[::1]:8080``), which then allows that port only.
    """

    entries: tuple[_Entry, ...] = field(default_factory=tuple)

    @classmethod
    def from_setting(cls, value: str | list[str] | tuple[str, ...] | None) -> AddressPolicy:
        if value is True or (isinstance(value, str) and value.strip().lower() in YES_NO):
            raise AllowListError(
                f"FOCUSED_ALLOW_INTERNAL: {value!r} is a yes/no value, not a list of hosts; give the hosts "
                "to allow, e.g. 127.0.0.1:8000 (one local server's host:port)"
            )
        if not value:
            return cls()
        items = value.split(",") if isinstance(value, str) else list(value)
        return cls(tuple(_parse_entry(item) for item in items if item.strip()))

    def allows_name(self, host: str, port: int | None = None) -> bool:
        """An allow-list entry names this host (it is then not resolved nor checked)."""
        return any(e.host is not None and e.matches(host, None, port) for e in self.entries)

    def refuses(self, host: str, ip: IPAddress | None, port: int | None = None) -> bool:
        """True if a connection to ``host`` (at ``ip``, when known) and ``port`` must not happen.

        ``ip`` is ``None`` before resolution: only a host that is itself an IP
        literal or a local name (``localhost``) is refused then.
        """
        if self.allows_name(host, port):
            return False
        literal = parse_ip(host)
        if literal is not None:
            ip = literal
        if ip is None:
            if not is_internal_name(host):
                return False
            ip = ipaddress.IPv4Address("127.0.0.1")
        if not is_internal_ip(ip):
            return False
        return not any(e.matches(host, ip, port) for e in self.entries)


def allow_entry(url: str) -> str:
    """The ``FOCUSED_ALLOW_INTERNAL`` entry that allows ``url``'s host and port only: ``127.0.0.1:8000``,
    ``[::1]:8080``, ``intranet.example:80``."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # not a number
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
