"""Shared fixtures: a real Redis server for the tests of the shared frontier."""

from __future__ import annotations

import pytest

from tests.redis_server import RedisServer


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """One ``redis-server`` on a free loopback port for the session; tests use their own key prefixes."""
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server
