"""``focused demo``: the default crawler beside the baseline on a held-out WebKB university, one table at the end;
it never overwrites an earlier crawl without saying so (real runs of the command on the WebKB replay; skipped
only without ../shared)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from focused.bench.runner import PROJECT_ROOT
from focused.cli import CommandError
from focused.commands.demo import DEMO_TOPIC, DEMO_UNIVERSITY, Row, choose_dbs, demo_strategies, table
from focused.crawldb import iter_pages, read_meta
from focused.learning.critic.load import load_critic

ARCHIVE = PROJECT_ROOT.parent / "shared" / "corpora" / "webkb-dev.tar.gz"
needs_archive = pytest.mark.skipif(not ARCHIVE.exists(), reason="../shared/corpora/webkb-dev.tar.gz is absent")


def demo(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    cmd = [sys.executable, "-m", "focused", "demo", *args]
    return subprocess.run(cmd, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)


def table_rows(stdout: str) -> dict[str, list[str]]:
    """The demo's table: strategy -> [pages, on topic, true harvest %, critic's harvest %]."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["strategy", "pages"])
    rows = {}
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        cells = line.split()
        rows[cells[0]] = [cells[1], cells[2], cells[3], cells[5]]
    return rows


@needs_archive
def test_the_demo_crawls_the_held_out_university_with_each_strategy_and_ends_with_the_table(tmp_path):
    db = tmp_path / "demo.sqlite"
    out = demo("--pages", "12", "--db", str(db))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    rows = table_rows(out.stdout)
    assert list(rows) == ["apprentice", "baseline", "bfs"]  # the default first, then the comparisons
    dbs = {"apprentice": db, "baseline": tmp_path / "demo-baseline.sqlite", "bfs": tmp_path / "demo-bfs.sqlite"}
    for strategy, path in dbs.items():
        pages = list(iter_pages(path))
        pages_cell, on_topic, harvest, critic = rows[strategy]
        assert int(pages_cell) == len(pages) >= 12
        assert 0 <= int(on_topic) <= len(pages)
        assert float(harvest) == pytest.approx(100 * int(on_topic) / len(pages), abs=0.06)
        judged = 100 * sum(p.relevance for p in pages) / len(pages)
        assert float(critic) == pytest.approx(judged, abs=0.06)
        assert all("cornell.edu" in p.url for p in pages)  # the web is confined to the held-out university
        assert [strategy, str(path)] in [line.split() for line in out.stdout.splitlines()]  # each database's path
        # every crawl was judged by a critic that never saw cornell
        model = Path(read_meta(path)["critic_model"])
        groups = load_critic(model).metadata["groups"]
        assert DEMO_UNIVERSITY not in groups and {"texas", "washington"} <= set(groups)
    assert f"focused report {db} -o {db.with_suffix('.html')}" in out.stdout
    assert "trained on misc, texas, washington" in out.stdout
    assert f"Topic {DEMO_TOPIC!r}" in out.stdout


@needs_archive
def test_compare_none_is_the_single_crawl_and_a_strategy_given_is_crawled_first(tmp_path):
    db = tmp_path / "one.sqlite"
    out = demo("--strategy", "bfs", "--compare", "none", "--topic", "course", "--pages", "8", "--db", str(db))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert list(table_rows(out.stdout)) == ["bfs"]
    assert sorted(p.name for p in tmp_path.glob("*.sqlite")) == ["one.sqlite"]
    assert "Topic 'course'" in out.stdout
    two = demo(
        "--strategy", "baseline", "--compare", "baseline,bfs", "--pages", "8", "--db", str(tmp_path / "b.sqlite")
    )
    assert two.returncode == 0, two.stdout[-3000:] + two.stderr[-3000:]
    assert list(table_rows(two.stdout)) == ["baseline", "bfs"]  # --strategy is not crawled twice


@needs_archive
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--compare", "bfs,nosuch"], "--compare nosuch: unknown strategy; valid: "),
        (["--compare", ","], "--compare ',': give strategies, comma-separated, or 'none'"),
        (["--strategy", "nosuch"], "--strategy nosuch: unknown strategy; valid: "),
        (["--university", "nowhere"], "unknown group(s) nowhere in webkb-dev.tar.gz; valid: "),
        (["--topic", "nosuch"], "unknown topic 'nosuch'; valid: "),
        (["--pages", "0"], "--pages: 0 must be at least 1"),
        (["--set", "FOCUSED_MAX_PAGES=many"], "--set "),
        (["--archive", "/nonexistent/webkb.tar.gz"], "archive not found: /nonexistent/webkb.tar.gz"),
    ],
)
def test_bad_input_is_one_line_and_exit_1(tmp_path, args, message):
    out = demo(*args, "--pages", "5", "--db", str(tmp_path / "x.sqlite")) if "--pages" not in args else demo(*args)
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert not list(tmp_path.iterdir())  # nothing crawled


@needs_archive
def test_an_existing_db_is_refused_unless_forced(tmp_path):
    db = tmp_path / "demo.sqlite"
    first = demo("--strategy", "bfs", "--compare", "none", "--pages", "6", "--db", str(db))
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    assert str(db) in first.stdout and "Overwriting" not in first.stdout and "exists" not in first.stdout
    pages = len(list(iter_pages(db)))
    assert pages >= 6
    stamp = db.stat().st_mtime_ns

    again = demo("--strategy", "bfs", "--compare", "none", "--pages", "3", "--db", str(db))
    assert again.returncode == 1
    assert again.stderr.strip().splitlines() == [
        f"focused: error: --db {db} exists (an earlier crawl): give another --db, or --force to overwrite it"
    ]
    assert db.stat().st_mtime_ns == stamp and len(list(iter_pages(db))) == pages  # untouched

    forced = demo("--strategy", "bfs", "--compare", "none", "--pages", "3", "--db", str(db), "--force")
    assert forced.returncode == 0, forced.stdout[-2000:] + forced.stderr[-2000:]
    assert f"Overwriting {db} (--force)" in forced.stdout
    assert 3 <= len(list(iter_pages(db))) < pages


def test_the_default_names_move_on_together_and_say_so(tmp_path):
    both = ["apprentice", "baseline"]
    names = [tmp_path / "demo-course-apprentice.sqlite", tmp_path / "demo-course-baseline.sqlite"]
    assert choose_dbs(None, tmp_path, "course", both, force=False) == (names, "")
    names[1].write_bytes(b"")  # one of them is taken: both move on to -2
    second = [tmp_path / "demo-course-apprentice-2.sqlite", tmp_path / "demo-course-baseline-2.sqlite"]
    assert choose_dbs(None, tmp_path, "course", both, force=False) == (
        second,
        f"{names[1]} exists (an earlier crawl, kept): this demo writes {second[0]}, {second[1]}",
    )
    second[0].write_bytes(b"")
    assert choose_dbs(None, tmp_path, "course", both, force=False)[0] == [
        tmp_path / "demo-course-apprentice-3.sqlite",
        tmp_path / "demo-course-baseline-3.sqlite",
    ]
    assert choose_dbs(None, tmp_path, "course", both, force=True) == (names, f"Overwriting {names[1]} (--force)")
    given = tmp_path / "mine.sqlite"
    assert choose_dbs(str(given), tmp_path, "course", both, force=False) == (
        [given, tmp_path / "mine-baseline.sqlite"],
        "",
    )
    (tmp_path / "mine-baseline.sqlite").write_bytes(b"")  # a comparison's database is guarded too
    with pytest.raises(CommandError, match=r"mine-baseline\.sqlite exists"):
        choose_dbs(str(given), tmp_path, "course", both, force=False)
    assert not any(p.stat().st_size for p in Path(tmp_path).iterdir())  # nothing was written over


def test_the_strategies_and_the_table():
    assert demo_strategies("apprentice", "baseline,bfs") == ["apprentice", "baseline", "bfs"]
    assert demo_strategies("bfs", "baseline,bfs,baseline") == ["bfs", "baseline"]
    assert demo_strategies("baseline", "none") == ["baseline"]
    with pytest.raises(CommandError, match="--compare oracl: unknown strategy"):
        demo_strategies("apprentice", "oracl")
    lines = table([Row("apprentice", 250, 123, 0.333, Path("a")), Row("bfs", 251, 40, 0.1391, Path("b"))])
    assert lines == [
        "strategy    pages  on topic  true harvest  critic's harvest",
        "apprentice    250       123        49.2 %            33.3 %",
        "bfs           251        40        15.9 %            13.9 %",
    ]
