"""A real ``redis-server`` on a free loopback port, in a temporary directory, for tests.

``make install`` installs ``redis-server`` (Debian's package). Without it the
Redis tests are skipped, except in CI (``CI`` set), where they fail (:mod:`tests.require`).
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import redis

from tests.require import require_program


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def require_redis_server() -> str:
    return require_program("redis-server", install="make install-redis (Debian: apt-get install redis-server)")


class RedisServer:
    """``redis-server`` bound to 127.0.0.1; ``persistent`` keeps an append-only file across restarts."""

    def __init__(self, directory: Path, *, persistent: bool = False) -> None:
        self.binary = require_redis_server()
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.persistent = persistent
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        args += ["--dir", str(self.directory), "--appendonly", "yes" if self.persistent else "no"]
        args += ["--appendfsync", "always"] if self.persistent else []
        log = (self.directory / "redis.log").open("ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=self.directory)
        log.close()
        client = redis.Redis(port=self.port, socket_connect_timeout=1)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError as exc:  # not listening yet, or loading its data
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    log = (self.directory / "redis.log").read_text()
                    raise RuntimeError(f"redis-server did not start: {log}") from exc
                time.sleep(0.02)
            finally:
                client.close()
        return self

    def stop(self) -> None:
        """Stop the server (SIGTERM: with persistence on, it writes its append-only file first)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        self.proc = None

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
