"""Crawls of the real WebKB dev archive through the replay (without the corpus: skipped, failed under CI)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from focused.bench.metrics import crawl_curve
from focused.bench.runner import PROJECT_ROOT, CrawlSpec, run_crawl
from focused.crawldb import iter_pages
from focused.learning.critic.load import load_critic
from focused.replay.load import open_store
from focused.replay.server import ReplayServer
from tests.require import require_corpus

MODEL = PROJECT_ROOT / "models" / "webkb-pagetype.npz"
SEED = "http://www.cs.cornell.edu/"


@pytest.fixture(scope="module", autouse=True)
def archive():
    """The dev archive every test here crawls (the demo command's default archive)."""
    return require_corpus("webkb-dev.tar.gz")


@pytest.fixture(scope="module")
def store(archive):
    return open_store(archive)


def test_baseline_crawl_of_cornell(store, tmp_path):
    with ReplayServer(store) as server:
        spec = CrawlSpec(
            name="cornell",
            topic="course",
            strategy="baseline",
            seeds=(SEED,),
            model=MODEL,
            proxy=server.proxy_url,
            db=tmp_path / "cornell.sqlite",
            max_pages=150,
        )
        result = run_crawl(spec, timeout=300)
        assert result.returncode == 0, result.log.read_text()[-3000:]
        assert server.hits >= 150
    pages = list(iter_pages(spec.db))
    assert 150 <= len(pages) <= 160
    assert pages[0].url == SEED
    on_site = sum(".cornell.edu" in p.url for p in pages)
    assert on_site >= 0.8 * len(pages)  # a department's site is mostly self-contained
    topic = load_critic(MODEL).resolve_topic("course")
    curve = crawl_curve(str(spec.db), store.labels, topic)
    assert sum(curve.true_relevant) >= 5  # real course home pages were found
    stats = result.stats
    assert stats["focused/pages"] == len(pages)
    assert stats.get("downloader/response_status_count/404", 0) > 0  # links out of the archive are dead
    assert 0 < stats["focused/harvest_rate"] < 1


LOG_EVERY_20 = ("--set", "FOCUSED_LOG_EVERY=20")


def test_demo_command_logs_progress_and_the_closing_summary(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "focused",
            "demo",
            "--compare",
            "none",
            "--pages",
            "60",
            "--db",
            str(tmp_path / "demo.sqlite"),
            *LOG_EVERY_20,
        ],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "true harvest" in proc.stdout and "critic's harvest" in proc.stdout  # the demo's table
    log = (tmp_path / "demo.log").read_text()  # the crawl's own log, beside its database
    assert "Crawl summary: focused_max_pages" in log  # the crawl's closing summary
    assert "pages=40 harvest=" in log  # progress in the log every 20 pages (--set), not 50
    assert "pages=50 harvest=" not in log
