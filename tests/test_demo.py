"""``focused demo`` never overwrites an earlier crawl without saying so (real runs of the command on the WebKB
replay; skipped only without ../shared)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from focused.bench.runner import PROJECT_ROOT
from focused.cli import CommandError
from focused.commands.demo import choose_db
from focused.crawldb import iter_pages

ARCHIVE = PROJECT_ROOT.parent / "shared" / "corpora" / "webkb-dev.tar.gz"


def demo(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    cmd = [sys.executable, "-m", "focused", "demo", "--strategy", "bfs", *args]
    return subprocess.run(cmd, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.skipif(not ARCHIVE.exists(), reason="../shared/corpora/webkb-dev.tar.gz is absent")
def test_an_existing_db_is_refused_unless_forced(tmp_path):
    db = tmp_path / "demo.sqlite"
    first = demo("--pages", "6", "--db", str(db))
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    assert str(db) in first.stdout and "Overwriting" not in first.stdout and "exists" not in first.stdout
    pages = len(list(iter_pages(db)))
    assert pages >= 6
    stamp = db.stat().st_mtime_ns

    again = demo("--pages", "3", "--db", str(db))
    assert again.returncode == 1
    assert again.stderr.strip().splitlines() == [
        f"focused: error: --db {db} exists (an earlier crawl): give another --db, or --force to overwrite it"
    ]
    assert db.stat().st_mtime_ns == stamp and len(list(iter_pages(db))) == pages  # untouched

    forced = demo("--pages", "3", "--db", str(db), "--force")
    assert forced.returncode == 0, forced.stdout[-2000:] + forced.stderr[-2000:]
    assert f"Overwriting {db} (--force)" in forced.stdout
    assert 3 <= len(list(iter_pages(db))) < pages


def test_the_default_name_moves_on_and_says_so(tmp_path):
    default = tmp_path / "demo-course-bfs.sqlite"
    assert choose_db(None, default, force=False) == (default, "")
    default.write_bytes(b"")
    second = tmp_path / "demo-course-bfs-2.sqlite"
    assert choose_db(None, default, force=False) == (
        second,
        f"{default} exists (an earlier crawl, kept): this crawl writes {second}",
    )
    second.write_bytes(b"")
    assert choose_db(None, default, force=False)[0] == tmp_path / "demo-course-bfs-3.sqlite"
    assert choose_db(None, default, force=True) == (default, f"Overwriting {default} (--force)")
    given = tmp_path / "mine.sqlite"
    assert choose_db(str(given), default, force=False) == (given, "")
    given.write_bytes(b"")
    with pytest.raises(CommandError, match="exists"):
        choose_db(str(given), default, force=False)
    assert not any(p.stat().st_size for p in Path(tmp_path).iterdir())  # nothing was written over
