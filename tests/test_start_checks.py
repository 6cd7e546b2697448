"""What a crawl checks and opens when it starts: a crawl database that is no database is one line; a resume
says which database it writes when told another; Scrapy's remote control listens on no port; the budget
holds after a seed page of 200,000 links."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from focused.bench.runner import run_crawl
from focused.crawldb import iter_pages
from tests.commands import scrapy_crawl
from tests.local_server import HTML, LocalServer, direct_crawl


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"hello, I am a text file\n", "is not an SQLite crawl database"),
        (os.urandom(3000), "is not an SQLite crawl database"),
    ],
    ids=["text", "random"],
)
def test_a_db_that_is_no_sqlite_file_is_one_line(tmp_path: Path, content: bytes, expected: str) -> None:
    """It gave the right line, then Scrapy's 94-line CoreStats AssertionError traceback."""
    db = tmp_path / "not.db"
    db.write_bytes(content)
    proc = scrapy_crawl("-a", "topic=course", "-a", "seeds=http://127.0.0.1:9/", "-a", f"db={db}")
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0] and str(db) in lines[0], proc.stderr[-3000:]
    assert db.read_bytes() == content  # untouched


def test_a_job_whose_db_became_another_file_ends_in_one_line(tmp_path: Path) -> None:
    """A resume finds the job's database replaced by something else: one error line, no traceback, exit 1."""
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    db = tmp_path / "job.sqlite"
    db.write_bytes(b"not a database at all")
    (jobdir / "focused-crawl.json").write_text(
        f'{{"format": "focused.crawl", "format_version": 1, "crawl_db": "{db}", "started": 0}}'
    )
    proc = scrapy_crawl("-a", "topic=course", "-a", "seeds=http://127.0.0.1:9/", "-s", f"JOBDIR={jobdir}")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "is not an SQLite crawl database" in errors[0], proc.stderr[-3000:]


SITE = {
    "/": (200, HTML, b"<html><body><p>football match</p><a href='/two'>two</a></body></html>"),
    "/two": (200, HTML, b"<html><body><p>football match report</p></body></html>"),
}


def test_a_resume_told_another_db_says_which_it_uses(tmp_path: Path) -> None:
    with LocalServer(SITE) as web:
        jobdir = tmp_path / "job"
        spec = replace(direct_crawl(web, tmp_path, "first", FOCUSED_PROFILE="replay", JOBDIR=str(jobdir)), max_pages=1)
        assert run_crawl(spec, timeout=300).returncode == 0
        other = tmp_path / "other.sqlite"
        again = run_crawl(replace(spec, db=other, max_pages=2), timeout=300, resume=True)
    log = again.log.read_text()
    assert again.returncode == 0, log[-3000:]
    warnings = [line for line in log.splitlines() if f"-a db={other} is not used" in line]
    assert len(warnings) == 1 and str(spec.db) in warnings[0], log[-3000:]
    assert not other.exists()
    assert len(list(iter_pages(spec.db))) == 2  # the job's database went on


# ---------------------------------------------------------------------- listening sockets


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _crawl_processes() -> list[int]:
    """The crawl's processes: this test's child running ``scrapy crawl`` and its own children (the
    page-analysis worker), not the servers other tests of the session started (Redis, Scrapyd)."""
    roots = []
    for pid in _descendants(os.getpid()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"scrapy" in cmdline and b"crawl" in cmdline:
            roots.append(pid)
    return [pid for root in roots for pid in (root, *_descendants(root))]


def listening_ports(pids: list[int]) -> set[int]:
    """The TCP ports these processes listen on (from /proc: their socket inodes in LISTEN state)."""
    ports: set[int] = set()
    for pid in pids:
        try:
            inodes = {
                os.readlink(fd).removeprefix("socket:[").removesuffix("]")
                for fd in Path(f"/proc/{pid}/fd").iterdir()
                if os.readlink(fd).startswith("socket:")
            }
            tables = [Path(f"/proc/{pid}/net/tcp").read_text(), Path(f"/proc/{pid}/net/tcp6").read_text()]
        except OSError:
            continue
        for table in tables:
            for row in table.splitlines()[1:]:
                fields = row.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("enabled", [False, True], ids=["default", "asked-for"])
def test_a_crawl_listens_on_no_port(tmp_path: Path, enabled: bool) -> None:
    """While the crawl fetches its second page, the crawl's processes are looked at: no listening socket,
    unless REMOTE_CONTROL_ENABLED=True asks for Scrapy's remote control (which shows the test can fail)."""
    seen: list[set[int]] = []

    def answer(path: str) -> tuple[int, list[tuple[str, str]], bytes] | None:
        if path == "/two":
            seen.append(listening_ports(_crawl_processes()))
        return SITE.get(path)

    settings = {"FOCUSED_PROFILE": "replay"} | ({"REMOTE_CONTROL_ENABLED": "True"} if enabled else {})
    with LocalServer(answer) as web:
        spec = replace(direct_crawl(web, tmp_path, f"ports-{enabled}", **settings), max_pages=2)
        result = run_crawl(spec, timeout=300)
    assert result.returncode == 0, result.log.read_text()[-3000:]
    assert len(seen) == 1
    assert bool(seen[0]) == enabled, seen
    assert ("Remote control HTTP server listening" in result.log.read_text()) == enabled


# ---------------------------------------------------------------------- the budget after a huge page


def test_the_budget_holds_after_a_seed_of_200000_links(tmp_path: Path) -> None:
    """A seed page of 200,000 links (4 MB) and a budget of 3 (the live-web profile, 16 requests in the
    downloader): 3 pages stored, 3 fetched (and robots.txt)."""
    links = "".join(f"<a href=/p{i}>m</a>" for i in range(200_000))
    seed = f"<html><body><p>football match</p>{links}</body></html>".encode()

    def answer(path: str) -> tuple[int, list[tuple[str, str]], bytes] | None:
        if path == "/":
            return (200, HTML, seed)
        if path.startswith("/p"):
            return (200, HTML, f"<html><body><p>football {path}</p></body></html>".encode())
        return None

    with LocalServer(answer) as web:
        spec = replace(direct_crawl(web, tmp_path, "huge"), max_pages=3)  # the default cap: 3,000 links taken
        result = run_crawl(spec, timeout=600)
        hits = [h for h in web.hits if h != "/robots.txt"]
    assert result.returncode == 0, result.log.read_text()[-3000:]
    assert len(list(iter_pages(spec.db))) == 3
    assert result.stats["finish_reason"] == "focused_max_pages"
    assert len(hits) == 3, hits
