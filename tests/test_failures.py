"""Failure is never exit 0, and never a traceback: ``scrapy crawl focused`` against real local servers.

A crawl whose every seed is refused, unreachable or answered with an error ends with one line naming each
seed, why, and the setting to change, and exit status 1. Bad input (a predicate naming an unknown class,
a seed without its scheme, ``FOCUSED_ALLOW_INTERNAL=true``, an unreachable ``REDIS_URL``) is one line on
stderr before Scrapy starts, and exit status 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from focused.bench.runner import PROJECT_ROOT
from focused.crawldb import iter_pages
from tests.local_server import HTML, LocalServer
from tests.redis_server import free_port
from tests.sites import SPORT, train_critic

PAGE = (200, HTML, f"<html><body><p>{' '.join(SPORT * 5)}</p><a href='/b'>b</a></body></html>".encode())
ROBOTS = (200, [("Content-Type", "text/plain")], b"User-agent: *\nDisallow: /\n")
IMAGE = (200, [("Content-Type", "image/png")], b"\x89PNG\r\n\x1a\n" + bytes(64))


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return train_critic(tmp_path_factory.mktemp("failures") / "critic.model")


@pytest.fixture(scope="module")
def web():
    with LocalServer({"/": PAGE, "/b": PAGE, "/image.png": IMAGE}) as served:
        yield served


@pytest.fixture(scope="module")
def robots():
    with LocalServer({"/robots.txt": ROBOTS, "/": PAGE}) as served:
        yield served


def crawl(model: Path, db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    cmd = [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", "topic=sport", "-a", f"model={model}"]
    cmd += ["-s", f"FOCUSED_DB={db}", "-s", "FOCUSED_PROFILE=replay", *args]
    return subprocess.run(cmd, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def last_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.stderr.strip().splitlines()[-1]


# -- every seed refused -----------------------------------------------------------------------------------


def test_a_refused_loopback_seed_exits_1_naming_the_setting_in_its_exact_form(web, model, tmp_path):
    proc = crawl(model, tmp_path / "refused.sqlite", "-a", f"seeds={web.url}/")
    assert proc.returncode == 1
    line = last_line(proc)
    assert line == (
        f"error: no page was stored: the seed failed: {web.url}/ "
        f"(an internal address: allow it with -s FOCUSED_ALLOW_INTERNAL={web.allow})"
    )
    # the setting as the line gives it lets the crawl through
    again = crawl(
        model, tmp_path / "allowed.sqlite", "-a", f"seeds={web.url}/", "-s", f"FOCUSED_ALLOW_INTERNAL={web.allow}"
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(list(iter_pages(tmp_path / "allowed.sqlite"))) == 2


def test_every_seed_failing_for_its_own_reason_is_one_line(web, robots, model, tmp_path):
    nothing = f"http://127.0.0.1:{free_port()}/"  # a free loopback port: nothing listens
    seeds = [f"{robots.url}/", nothing, f"{web.url}/missing", f"{web.url}/image.png"]
    proc = crawl(
        model, tmp_path / "all.sqlite", "-a", f"seeds={','.join(seeds)}", "-s", "FOCUSED_ALLOW_INTERNAL=127.0.0.1"
    )
    assert proc.returncode == 1
    line = last_line(proc)
    assert line.startswith("error: no page was stored: every seed failed: ")
    assert f"{robots.url}/ (forbidden by its robots.txt; -s ROBOTSTXT_OBEY=False ignores it" in line
    assert f"{nothing} (connection refused: nothing listens there)" in line
    assert f"{web.url}/missing (HTTP 404)" in line
    assert f"{web.url}/image.png (not an HTML page: image/png)" in line
    assert robots.hits == ["/robots.txt"]  # the page itself was not fetched


def test_one_good_seed_is_enough(web, model, tmp_path):
    refused = f"http://127.0.0.1:{free_port()}/"
    proc = crawl(
        model, tmp_path / "one.sqlite", "-a", f"seeds={refused},{web.url}/", "-s", f"FOCUSED_ALLOW_INTERNAL={web.allow}"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "no page was stored" not in proc.stderr


def test_a_spider_that_fails_to_start_is_one_line_and_no_traceback(model, tmp_path):
    """An error raised as the crawl starts (here: no seeds, and the critic has no example URLs)."""
    proc = crawl(model, tmp_path / "noseeds.sqlite")
    assert proc.returncode == 1
    assert "ERROR: no seeds: use -a seeds=URL" in last_line(proc)


# -- bad input: one line before Scrapy starts ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-a", "seeds={url}/", "-a", "predicate=class:astronomy>0.5"], "the critic has no class 'astronomy'"),
        (
            ["-a", "seeds=www.x.edu"],
            "-a seeds=www.x.edu: seeds must be http(s) URLs; not: www.x.edu (did you mean http://www.x.edu?)",
        ),
        (
            ["-a", "seeds={url}/", "-s", "FOCUSED_ALLOW_INTERNAL=true"],
            "not a yes/no value: e.g. FOCUSED_ALLOW_INTERNAL={allow}",
        ),
        (["-a", "seeds={url}/", "-s", "FOCUSED_ALLOW_INTERNAL=1"], "not a yes/no value"),
        (["-a", "seeds={url}/", "-a", "topic=astronomy"], "-a topic=astronomy: unknown topic"),
        (
            ["-a", "seeds={url}/", "-s", "REDIS_URL=redis://127.0.0.1:{free}/0"],
            "REDIS_URL=redis://127.0.0.1:{free}/0: Redis does not answer",
        ),
    ],
    ids=["predicate-class", "seed-scheme", "allow-true", "allow-1", "topic", "redis-unreachable"],
)
def test_bad_input_is_one_line_before_scrapy_starts(web, model, tmp_path, args, expected):
    free = free_port()
    filled = [a.format(url=web.url, allow=web.allow, free=free) for a in args]
    proc = crawl(model, tmp_path / "bad.sqlite", *filled)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr[-3000:]  # no banner, no traceback
    assert lines[0].startswith("error: ") and expected.format(allow=web.allow, free=free) in lines[0], lines[0]
