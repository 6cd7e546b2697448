"""Pages out as WARC: ``-s FOCUSED_WARC=DIR`` during a crawl of a real local server, and ``focused export``."""

from __future__ import annotations

import gzip
import os
import random
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from focused.bench.runner import PROJECT_ROOT, run_crawl
from focused.crawldb import CrawlDB, iter_pages
from focused.extensions.warcwriter import OPEN_SUFFIX, Capture, WarcFiles
from focused.replay.load import open_store
from focused.replay.server import ReplayServer
from tests.local_server import HTML, LocalServer, direct_crawl
from tests.sites import COOKING, NEUTRAL, SPORT, page, words

SPORT_PAGES = [f"/sport/{i}.html" for i in range(4)]
COOK_PAGES = [f"/cook/{i}.html" for i in range(4)]


def site() -> dict[str, tuple[int, list[tuple[str, str]], bytes]]:
    """Home, four sport and four cooking pages; one sport page is served gzip-compressed."""
    rng = random.Random(5)
    links = [(href, href) for href in SPORT_PAGES + COOK_PAGES]
    pages = {"/": (200, HTML, page("Home", words(NEUTRAL, 40, rng), links))}
    for paths, vocab in ((SPORT_PAGES, SPORT), (COOK_PAGES, COOKING)):
        for path in paths:
            pages[path] = (200, [*HTML, ("X-Test", path)], page(path, words(vocab, 80, rng), [("/", "home")]))
    status, headers, body = pages[SPORT_PAGES[0]]
    pages[SPORT_PAGES[0]] = (status, [*headers, ("Content-Encoding", "gzip")], gzip.compress(body))
    return pages


def served_body(pages: dict, path: str) -> bytes:
    """The page as the crawler reads it (decompressed)."""
    _, headers, body = pages[path]
    return gzip.decompress(body) if ("Content-Encoding", "gzip") in headers else body


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    """One crawl of the site writing all pages to WARC files (shared by the read-back tests)."""
    tmp = tmp_path_factory.mktemp("warc")
    pages = site()
    with LocalServer(pages) as web:
        spec = direct_crawl(web, tmp, "all", FOCUSED_WARC=str(tmp / "warc"), FOCUSED_JOB="job1")
        result = run_crawl(spec, timeout=120)
    assert result.returncode == 0, result.log.read_text()[-3000:]
    return {"pages": pages, "url": web.url, "spec": spec, "result": result, "dir": tmp / "warc", "tmp": tmp}


def records(path: Path) -> list:
    """Every record of a WARC file, read with warcio (its checks on), with its content."""
    out = []
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh, check_digests=True):
            out.append((record, record.content_stream().read()))
    return out


def test_crawl_writes_every_page_as_request_and_response(crawled) -> None:
    folder, pages, url = crawled["dir"], crawled["pages"], crawled["url"]
    files = sorted(folder.iterdir())
    assert [f.name for f in files] == ["job1-00001.warc.gz"]  # complete, renamed: no .open left
    recs = records(files[0])
    assert recs[0][0].rec_type == "warcinfo"
    responses = {r.rec_headers.get_header("WARC-Target-URI"): (r, body) for r, body in recs if r.rec_type == "response"}
    requests = [r for r, _ in recs if r.rec_type == "request"]
    assert set(responses) == {url + path for path in pages}
    assert set(responses) == {p.url for p in iter_pages(crawled["spec"].db)}
    assert len(requests) == len(responses)
    ids = {r.rec_headers.get_header("WARC-Record-ID") for r, _ in responses.values()}
    assert {r.rec_headers.get_header("WARC-Concurrent-To") for r in requests} == ids
    request = next(r for r in requests if r.rec_headers.get_header("WARC-Target-URI") == url + SPORT_PAGES[1])
    assert request.http_headers.protocol == "GET"
    assert request.http_headers.statusline == f"{SPORT_PAGES[1]} HTTP/1.1"
    assert request.http_headers.get_header("Host") == url.removeprefix("http://")
    assert request.http_headers.get_header("User-Agent").startswith("focused/")
    for path in pages:
        record, body = responses[url + path]
        assert body == served_body(pages, path)
        assert record.http_headers.get_statuscode() == "200"
        assert record.http_headers.get_header("X-Test") == (None if path == "/" else path)
        assert record.http_headers.get_header("Content-Length") == str(len(body))
        assert record.http_headers.get_header("Content-Encoding") is None  # the body is stored decompressed
    stats = crawled["result"].stats
    assert stats["focused/warc/pages"] == len(pages) and stats["focused/warc/files"] == 1


def test_our_replay_reads_the_crawl_warc_back(crawled) -> None:
    pages, url = crawled["pages"], crawled["url"]
    store = open_store(crawled["dir"])
    assert len(store) == len(pages)
    for path in pages:
        found = store.resolve(url + path).response
        assert found is not None and found.status == 200
        assert found.body == served_body(pages, path)
        assert found.header("Content-Type") == "text/html; charset=utf-8"


def test_warcio_index_lists_every_record(crawled) -> None:
    (path,) = crawled["dir"].iterdir()
    out = subprocess.run(
        [sys.executable, "-m", "warcio.cli", "index", "-f", "warc-type,warc-target-uri", str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    lines = out.splitlines()
    n = len(crawled["pages"])
    assert len(lines) == 1 + 2 * n
    assert sum('"response"' in line for line in lines) == sum('"request"' in line for line in lines) == n


def test_tiny_max_bytes_rotates_into_several_valid_files(tmp_path: Path) -> None:
    pages = site()
    folder = tmp_path / "warc"
    with LocalServer(pages) as web:
        spec = direct_crawl(web, tmp_path, "rotate", FOCUSED_WARC=str(folder), FOCUSED_WARC_MAX_BYTES=1)
        result = run_crawl(spec, timeout=120)
    assert result.returncode == 0, result.log.read_text()[-3000:]
    files = sorted(folder.iterdir())
    assert len(files) == len(pages)  # every page passes 1 byte: one page per file
    assert [f.name[-14:] for f in files] == [f"-{i:05d}.warc.gz" for i in range(1, len(pages) + 1)]
    urls = []
    for path in files:
        recs = records(path)
        assert [r.rec_type for r, _ in recs] == ["warcinfo", "response", "request"]
        urls.append(recs[1][0].rec_headers.get_header("WARC-Target-URI"))
    assert sorted(urls) == sorted(web.url + p for p in pages)
    assert len(open_store(folder)) == len(pages)


def test_relevant_writes_only_the_relevant_pages(tmp_path: Path) -> None:
    pages = site()
    folder = tmp_path / "warc"
    with LocalServer(pages) as web:
        spec = direct_crawl(web, tmp_path, "relevant", FOCUSED_WARC=str(folder), FOCUSED_WARC_PAGES="relevant")
        result = run_crawl(spec, timeout=120)
    assert result.returncode == 0, result.log.read_text()[-3000:]
    stored = list(iter_pages(spec.db))
    relevant = {p.url for p in stored if p.relevance >= 0.5}
    assert relevant == {web.url + p for p in SPORT_PAGES}  # the topic is sport
    assert len(stored) == len(pages)
    assert {resp.url for resp in open_store(folder).responses()} == relevant
    assert result.stats["focused/warc/pages"] == len(relevant)


def focused_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "focused", *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def test_export_round_trip_through_replay(crawled) -> None:
    db, tmp, url = crawled["spec"].db, crawled["tmp"], crawled["url"]
    out = tmp / "export.warc.gz"
    done = focused_cli("export", str(db), "--warc", str(out))
    assert done.returncode == 0, done.stderr
    assert f"Wrote 9 pages of 9 to {out}" in done.stdout
    stored = {p.url: p for p in iter_pages(db, with_html=True)}
    store = open_store(out)
    assert {r.url for r in store.responses()} == set(stored)
    # served by our replay proxy, the pages are the stored HTML
    with ReplayServer(store) as server:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": server.proxy_url}))
        for page_url, record in stored.items():
            with opener.open(page_url, timeout=10) as reply:
                assert reply.status == 200
                assert reply.headers["Content-Type"] == "text/html; charset=utf-8"
                assert reply.read().decode("utf-8") == record.html
    # WARC-Date is the time of the fetch, not of the export
    (first, _), *_ = [(r, b) for r, b in records(out) if r.rec_type == "response"]
    assert first.rec_headers.get_header("WARC-Date")[:10] == time.strftime(
        "%Y-%m-%d", time.gmtime(min(p.fetched_at for p in stored.values()))
    )

    relevant = tmp / "relevant.warc"
    done = focused_cli("export", str(db), "--warc", str(relevant), "--relevant")
    assert done.returncode == 0, done.stderr
    assert {r.url for r in open_store(relevant).responses()} == {url + p for p in SPORT_PAGES}


def test_export_of_a_database_without_html_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "nohtml.sqlite"
    crawl = CrawlDB(db, store_html=False)
    crawl.add_page(
        url="http://a.test/",
        fetch_order=1,
        parent=None,
        depth=0,
        status=200,
        content_type="text/html",
        title="a",
        relevance=0.9,
        predicted_class="sport",
        top_classes=["sport"],
        links=[],
        html="<html></html>",
    )
    crawl.close()
    done = focused_cli("export", str(db), "--warc", str(tmp_path / "out.warc.gz"))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"focused: error: {db} stores no HTML (the crawl ran with FOCUSED_DB_STORE_HTML=False): nothing to export; "
        "crawl with -s FOCUSED_WARC=DIR to write the pages as they are fetched"
    ]
    assert not (tmp_path / "out.warc.gz").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--warc", "out.txt"], "the name must end in .warc.gz"),
        (["--warc", "out.warc.gz"], "crawl database not found"),
    ],
)
def test_export_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    done = focused_cli(
        "export", str(tmp_path / "missing.sqlite"), *[a.replace("out", str(tmp_path / "out")) for a in args]
    )
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("FOCUSED_WARC_PAGES=some", "FOCUSED_WARC_PAGES=some: unknown page selection; expected one of all, relevant"),
        ("FOCUSED_WARC_MAX_BYTES=0", "FOCUSED_WARC_MAX_BYTES=0: expected a whole number >= 1"),
        ("FOCUSED_WARC=README.md", "is not a folder"),
    ],
)
def test_bad_warc_settings_are_one_line(setting: str, message: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "focused",
            "-a",
            "topic=course",
            "-a",
            "seeds=http://a.test/",
            "-s",
            "FOCUSED_DB=",
            "-s",
            setting,
        ],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr, done.stderr


def capture(n: int) -> Capture:
    return Capture(
        url=f"http://a.test/{n}",
        method="GET",
        request_headers=[(b"User-Agent", b"t")],
        request_body=b"",
        status=200,
        protocol="HTTP/1.1",
        response_headers=[(b"Content-Type", b"text/html")],
        body=b"<html>%d</html>" % n,
        date="2024-01-01T00:00:00Z",
    )


def test_the_file_being_written_is_open_until_closed(tmp_path: Path) -> None:
    files = WarcFiles(tmp_path, "w", max_bytes=10**9)
    files.add(capture(1))
    for _ in range(200):  # the writer thread takes it within a poll
        if files.records:
            break
        time.sleep(0.05)
    assert [p.name for p in tmp_path.iterdir()] == [f"w-00001.warc.gz{OPEN_SUFFIX}"]  # a kill now: only .open
    files.close()
    assert [p.name for p in tmp_path.iterdir()] == ["w-00001.warc.gz"]
    assert [r.rec_type for r, _ in records(tmp_path / "w-00001.warc.gz")] == ["warcinfo", "response", "request"]


def test_two_writers_in_one_folder_never_share_a_file(tmp_path: Path) -> None:
    first, second = WarcFiles(tmp_path, "w", max_bytes=1), WarcFiles(tmp_path, "w", max_bytes=1)
    for n in range(3):
        first.add(capture(n))
        second.add(capture(10 + n))
    first.close()
    second.close()
    assert len(list(tmp_path.iterdir())) == 6
    urls = sorted(resp.url for resp in open_store(tmp_path).responses())
    assert len(urls) == 6


def test_a_failed_write_is_reported_once(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    folder = tmp_path / "gone"
    files = WarcFiles(folder, "w", max_bytes=10**9, on_error=errors.append)
    folder.rmdir()
    files.add(capture(1))
    files.add(capture(2))
    files.close()
    assert len(errors) == 1 and isinstance(errors[0], FileNotFoundError)
    assert files.error is errors[0] and not files.add(capture(3))


def test_headers_follow_the_stored_body_and_keep_no_secret(tmp_path: Path) -> None:
    files = WarcFiles(tmp_path, "h", max_bytes=10**9)
    body = b"<html>decoded</html>"
    files.add(
        Capture(
            url="http://a.test/p?q=1",
            method="GET",
            request_headers=[(b"Proxy-Authorization", b"Basic c2VjcmV0"), (b"Accept", b"text/html")],
            request_body=b"",
            status=200,
            protocol="HTTP/1.1",
            response_headers=[
                (b"Content-Type", b"text/html"),
                (b"Transfer-Encoding", b"chunked"),
                (b"Content-Length", b"7"),  # of the compressed body on the wire
                (b"X-Name", b"caf\xe9"),  # not UTF-8: HTTP headers are ISO-8859-1
            ],
            body=body,
            date="2024-01-01T00:00:00Z",
        )
    )
    files.close()
    assert files.error is None
    (_, _), (response, stored), (request, _) = records(tmp_path / "h-00001.warc.gz")
    assert stored == body
    assert response.http_headers.get_header("Content-Length") == str(len(body))
    assert response.http_headers.get_header("Transfer-Encoding") is None
    assert response.http_headers.get_header("X-Name") is not None
    assert request.http_headers.statusline == "/p?q=1 HTTP/1.1"
    assert request.http_headers.get_header("Proxy-Authorization") is None
    assert request.http_headers.get_header("Host") == "a.test"
    assert open_store(tmp_path).resolve("http://a.test/p?q=1").response.body == body
