"""Internal addresses (SSRF): the policy, the middleware's checks, the resolver, and a real crawl."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Request
from scrapy.resolver import dnscache
from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure

from focused.addresses import AddressPolicy, is_internal_ip
from focused.bench.runner import PROJECT_ROOT, run_crawl
from focused.crawldb import iter_pages
from focused.downloadermiddlewares.internal import STAT, InternalAddressError, RefuseInternalMiddleware
from focused.errors import ConfigError
from tests.local_server import HTML, LocalServer, direct_crawl
from tests.rebinding import RebindingResolver
from tests.sites import SPORT

INTERNAL = [
    "127.0.0.1",
    "127.8.9.10",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.254",
    "192.168.1.1",
    "169.254.169.254",
    "0.0.0.0",
    "100.64.0.1",
    "::1",
    "::",
    "fc00::1",
    "fd12:3456::1",
    "fe80::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
]
PUBLIC = ["8.8.8.8", "172.32.0.1", "192.169.0.1", "2001:4860:4860::8888", "::ffff:8.8.8.8"]


@pytest.mark.parametrize("ip", INTERNAL)
def test_internal_ranges_are_refused(ip: str) -> None:
    assert is_internal_ip(ipaddress.ip_address(ip))
    assert AddressPolicy().refuses(ip, None, 80)  # an IP literal host
    assert AddressPolicy().refuses("public.example", ipaddress.ip_address(ip), 80)  # a name resolving there


@pytest.mark.parametrize("ip", PUBLIC)
def test_public_addresses_pass(ip: str) -> None:
    assert not AddressPolicy().refuses(ip, None, 80)
    assert not AddressPolicy().refuses("public.example", ipaddress.ip_address(ip), 80)


def test_local_names_are_refused_before_any_lookup() -> None:
    policy = AddressPolicy()
    assert policy.refuses("localhost", None, 80) and policy.refuses("a.localhost.", None, 80)
    assert not policy.refuses("example.org", None, 80)  # decided once resolved


def test_allow_list_entries() -> None:
    policy = AddressPolicy.from_setting("127.0.0.0/8, ::1, 10.1.2.3:8080, [fd00::1]:81, Intranet.Example")
    ip = ipaddress.ip_address
    assert not policy.refuses("127.0.0.1", None, 9) and not policy.refuses("localhost", None, 9)
    assert not policy.refuses("::1", None, 9) and not policy.refuses("::ffff:127.0.0.1", None, 9)
    assert not policy.refuses("10.1.2.3", None, 8080) and policy.refuses("10.1.2.3", None, 8081)
    assert not policy.refuses("fd00::1", None, 81) and policy.refuses("fd00::1", None, 80)
    assert not policy.refuses("intranet.example", ip("10.9.9.9"), 80)
    assert policy.refuses("other.example", ip("10.9.9.9"), 80) and policy.refuses("192.168.0.1", None, 80)


@pytest.mark.parametrize("bad", ["not a host", "10.0.0.1:99999", "http://x/", "a..b"])
def test_bad_allow_list_is_one_config_error(bad: str) -> None:
    with pytest.raises(ConfigError, match="FOCUSED_ALLOW_INTERNAL"):
        RefuseInternalMiddleware.from_crawler(get_crawler(settings_dict={"FOCUSED_ALLOW_INTERNAL": bad}))


def _middleware(allow: str = "") -> RefuseInternalMiddleware:
    crawler = get_crawler(settings_dict={"FOCUSED_ALLOW_INTERNAL": allow})
    crawler.stats.open_spider()
    return RefuseInternalMiddleware.from_crawler(crawler)


def test_the_address_connected_to_is_checked_after_the_download() -> None:
    """DNS rebinding: a public name that connected to an internal address is dropped."""
    mw = _middleware()
    request = Request("http://public.example/page")
    response = HtmlResponse(
        request.url, body=b"<html>INTERNAL SECRET</html>", ip_address=ipaddress.ip_address("10.0.0.5")
    )
    with pytest.raises(IgnoreRequest):
        mw.process_response(request, response)
    assert mw.stats.get_value(STAT) == 1
    public = HtmlResponse(request.url, body=b"<html>ok</html>", ip_address=ipaddress.ip_address("93.184.216.34"))
    assert mw.process_response(request, public) is public
    # Through a configured proxy the address is the proxy's (trusted), not the target's.
    proxied = Request("http://public.example/page", meta={"proxy": "http://127.0.0.1:8899"})
    via_proxy = HtmlResponse(request.url, body=b"<html>ok</html>", ip_address=ipaddress.ip_address("127.0.0.1"))
    assert mw.process_response(proxied, via_proxy) is via_proxy


def test_a_proxied_request_is_checked_by_its_target() -> None:
    mw = _middleware()
    with pytest.raises(IgnoreRequest):
        asyncio.run(mw.process_request(Request("http://127.0.0.1:5000/", meta={"proxy": "http://127.0.0.1:8899"})))


@pytest.fixture
def no_dns_cache() -> Iterator[None]:
    """Scrapy's DNS cache is one per process: no test sees the answers another test cached."""
    dnscache.clear()
    yield
    dnscache.clear()


def _resolver(allow: str = "", **settings: object) -> RebindingResolver:
    """The crawl's resolver as Scrapy builds it, over the test hosts table (no DNS query)."""
    from twisted.internet import reactor

    crawler = get_crawler(settings_dict={"FOCUSED_ALLOW_INTERNAL": allow, **settings})
    return RebindingResolver.from_crawler(crawler, reactor)  # type: ignore[arg-type]


def _lookup(resolver: RebindingResolver, name: str) -> object:
    """``getHostByName(name)``: the address, or the failure (the hosts table answers at once)."""
    results: list[object] = []
    resolver.getHostByName(name).addBoth(results.append)
    assert len(results) == 1
    return results[0]


def _refused(result: object) -> bool:
    return isinstance(result, Failure) and result.check(InternalAddressError) is not None


@pytest.mark.parametrize("name", ["loopback.test", "mapped.test", "lan.test"])
def test_the_resolver_refuses_a_name_that_resolves_to_an_internal_address(no_dns_cache: None, name: str) -> None:
    """Through ``getHostByName`` (the path a connection takes), cached answers included."""
    resolver = _resolver()
    assert _refused(_lookup(resolver, name))
    assert _refused(_lookup(resolver, name))  # again, from Scrapy's DNS cache
    assert resolver.asked[name] == 1
    assert _lookup(resolver, "public.test") == "93.184.216.34"
    assert _lookup(resolver, "127.0.0.1") == "127.0.0.1"  # an IP literal is no DNS answer: the middleware checks it


def test_the_resolver_lets_allowed_internal_names_through(no_dns_cache: None) -> None:
    assert _lookup(_resolver("lan.test"), "lan.test") == "10.0.0.7"
    assert _lookup(_resolver("10.0.0.0/8"), "lan.test") == "10.0.0.7"
    assert _refused(_lookup(_resolver("lan.test"), "loopback.test"))


def test_the_resolver_refuses_a_name_that_rebinds_after_the_check(no_dns_cache: None) -> None:
    """DNS rebinding: the middleware's lookup got a public address, the connection's gets loopback."""
    resolver = _resolver(DNSCACHE_ENABLED=False)
    assert _lookup(resolver, "rebind.test") == "192.0.2.1"
    assert _refused(_lookup(resolver, "rebind.test"))
    assert resolver.asked["rebind.test"] == 2


def test_a_crawl_never_connects_to_a_name_that_rebinds_to_an_internal_address(tmp_path: Path) -> None:
    """A real crawl: a link's name resolves to a public address at the middleware's check, to loopback at
    connection time (``tests.rebinding``). The resolver refuses it, so the server there is never reached."""
    with LocalServer({"/secret": (200, HTML, b"<html><body>INTERNAL SECRET</body></html>")}) as inside:
        text = " ".join(SPORT * 6)
        with LocalServer({"/": _page("home", text, [f"http://rebind.test:{inside.port}/secret"])}) as web:
            spec = direct_crawl(
                web,
                tmp_path,
                "rebind",
                allow=False,
                FOCUSED_ALLOW_INTERNAL=f"site.test:{web.port}",  # by name: no port of 127.0.0.1 is allowed
                TWISTED_DNS_RESOLVER="tests.rebinding.RebindingResolver",
                DNSCACHE_ENABLED=False,  # each lookup asks the hosts table again, as a rebinding attack needs
            )
            spec = replace(spec, seeds=(f"http://site.test:{web.port}/",))
            result = run_crawl(spec, timeout=120)
    log = result.log.read_text()
    assert result.returncode == 0, log[-3000:]
    assert web.hits and "/" in web.hits
    assert inside.hits == []  # not even robots.txt
    # the connection's lookup failed (Twisted reports the resolver's refusal as a name without addresses) ...
    assert any("DNS lookup failed" in line and "rebind.test" in line for line in log.splitlines())
    # ... and the page's own check, after it, found the name internal
    assert f"Refused http://rebind.test:{inside.port}/secret: host rebind.test is an internal address" in log
    assert result.stats[STAT] >= 1
    assert [p.url for p in iter_pages(spec.db)] == [f"http://site.test:{web.port}/"]


def _page(title: str, body: str, links: list[str], head: str = "") -> tuple[int, list[tuple[str, str]], bytes]:
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    html = f"<html><head><title>{title}</title>{head}</head><body><p>{body}</p>{anchors}</body></html>"
    return 200, HTML, html.encode()


def test_crawl_refuses_links_redirects_and_refreshes_to_internal_addresses(tmp_path: Path) -> None:
    """A real crawl of a loopback site allowed on its own port: every way to another local port is refused."""
    secret = {"/secret": (200, HTML, b"<html><body>INTERNAL SECRET</body></html>")}
    with LocalServer(secret) as inside:
        other = f"127.0.0.1:{inside.port}"
        text = " ".join(SPORT * 6)
        site: dict[str, tuple[int, list[tuple[str, str]], bytes]] = {}
        with LocalServer(site) as web:
            site["/"] = _page(
                "home",
                text,
                [
                    "/ok",
                    "/redirect",
                    "/refresh",
                    f"http://{other}/secret",
                    f"http://localhost:{inside.port}/secret",
                    f"http://[::1]:{inside.port}/secret",
                    "http://10.0.0.1/secret",
                    "http://169.254.169.254/latest/meta-data/",
                    f"http://[::ffff:127.0.0.1]:{inside.port}/secret",
                ],
            )
            site["/ok"] = _page("ok", text, [f"http://{other}/secret?again=1"])
            site["/redirect"] = (302, [("Location", f"http://{other}/secret?via=302")], b"")
            refresh = f'<meta http-equiv="refresh" content="0; url=http://localhost:{inside.port}/secret?via=refresh">'
            site["/refresh"] = _page("refresh", text, [], head=refresh)
            spec = direct_crawl(web, tmp_path, "ssrf", FOCUSED_REPLAY_CONCURRENCY=2)
            result = run_crawl(spec, timeout=120)
    assert result.returncode == 0, result.log.read_text()
    assert inside.hits == []  # nothing reached the other port, not even robots.txt
    assert {"/", "/ok", "/redirect", "/refresh"} <= set(web.hits)
    pages = list(iter_pages(spec.db, with_html=True))
    assert {p.url for p in pages} == {web.url + "/", web.url + "/ok"}  # /refresh became its redirect
    assert not any("INTERNAL SECRET" in (p.html or "") for p in pages)
    # 9 distinct refused URLs (the 302 and the refresh included), plus robots.txt of refused hosts
    assert result.stats[STAT] >= 9
    log = result.log.read_text()
    refused_lines = [line for line in log.splitlines() if "Refused " in line and "internal address" in line]
    hosts = [line.split(": host ")[1].split()[0] for line in refused_lines]
    assert sorted(hosts) == sorted(set(hosts))  # one line per host, not per URL
    assert {"127.0.0.1", "localhost", "10.0.0.1", "169.254.169.254", "::1"} <= set(hosts)


def test_a_loopback_seed_is_refused_by_default(tmp_path: Path) -> None:
    with LocalServer({"/": _page("home", "hello", [])}) as web:
        spec = direct_crawl(web, tmp_path, "seed", allow=False)
        result = run_crawl(spec, timeout=120)
    assert result.returncode == 1  # no page: the crawl failed (tests/test_failures.py)
    assert web.hits == [] and result.stats[STAT] >= 1
    assert f"allow it with -s FOCUSED_ALLOW_INTERNAL={web.allow}" in result.log.read_text()


def test_a_bad_allow_list_stops_scrapy_crawl_with_one_line(tmp_path: Path) -> None:
    """The resolver is built before the crawl: it must leave the error to the middleware's one line."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    cmd = [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", "topic=course", "-a", "seeds=http://a.test/"]
    cmd += ["-s", "FOCUSED_ALLOW_INTERNAL=10.0.0.1:99999", "-s", "FOCUSED_DB="]
    proc = subprocess.run(cmd, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "FOCUSED_ALLOW_INTERNAL" in proc.stderr and "bad port in '10.0.0.1:99999'" in proc.stderr
