"""Shared fixtures: a real Redis server for the tests of the shared frontier; how ``make test`` spreads the
test files over pytest-xdist's workers."""

from __future__ import annotations

import pytest

from tests.redis_server import RedisServer

#: Test files that share something outside their ``tmp_path``, so one worker runs them one after the other:
#: ``focused demo`` builds (at its first run) and reuses the WebKB critics and link graphs in results/cache/webkb/.
SHARED = {"test_demo.py": "results-cache", "test_webkb.py": "results-cache"}

#: The files that take longest (real crawls killed and resumed, several workers, the WebKB demo), handed out
#: first so that no worker is left with a long one at the end; only the order changes, never what runs.
SLOW_FIRST = (
    "test_kill_resume.py",
    "test_distributed.py",
    "test_demo.py",
    "test_webkb.py",
    "test_distributed_workers.py",
    "test_intelligent.py",
    "test_analysis.py",
    "test_topic_examples.py",
    "test_redis_housekeeping.py",
    "test_stored_data.py",
    "test_apprentice_crawl.py",
    "test_scrapyd.py",
    "test_crawl.py",
    "test_budget.py",
    "test_wiki.py",
    "test_siblings.py",
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--dist loadgroup`` (``make test``), each test file is one unit of work for one worker, so a module
    fixture (a trained critic, a served web, a Scrapyd) is built once, as in a serial run; the files in
    :data:`SHARED` are one unit; the :data:`SLOW_FIRST` files are handed out first. Runs before xdist's own
    hook, which names the units after these marks."""
    if not config.getoption("loadgroup", False):  # set in the workers of --dist loadgroup (their dist is "no")
        return
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's tests keep their order
    for item in items:
        item.add_marker(pytest.mark.xdist_group(SHARED.get(item.path.name, item.path.name)))


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """One ``redis-server`` on a free loopback port for the session; tests use their own key prefixes."""
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server
