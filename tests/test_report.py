"""A quiet crawl log and ``focused report``: one crawl of the generated graph web, its log, its stored
stats and choices, and its HTML report opened in a real headless browser (Debian's chromium)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from focused.bench.runner import PROJECT_ROOT, run_crawl
from focused.crawldb import iter_pages, read_choices, read_meta
from focused.priority import SEED_PRIORITY
from tests.sites import graph_crawl, graph_web

PAGES = 60


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    with graph_web(tmp) as web:
        spec = graph_crawl(web, "report", strategy="baseline", max_pages=PAGES, LOG_LEVEL="INFO", FOCUSED_LOG_EVERY=20)
        result = run_crawl(spec, timeout=300)
        assert result.returncode == 0, result.log.read_text()[-3000:]
        yield {"spec": spec, "result": result, "tmp": tmp}


def test_ignored_responses_are_counted_not_logged(crawl):
    log = crawl["result"].log.read_text()
    stats = crawl["result"].stats
    assert "Ignoring response" not in log
    assert stats["focused/ignored_responses"] == stats["httperror/response_ignored_status_count/404"] > 0
    assert len(re.findall(r"pages=\d+ harvest=", log)) == PAGES // 20  # the line a person follows is there


def test_final_stats_and_why_pages_were_fetched_are_stored(crawl):
    db = crawl["spec"].db
    stored = read_meta(db)["stats"]
    final = crawl["result"].stats  # the stats Scrapy dumped when the crawl closed
    assert stored["focused/pages"] == final["focused/pages"] >= PAGES
    assert stored["focused/ignored_responses"] == final["focused/ignored_responses"] > 0
    choices = read_choices(db)
    pages = list(iter_pages(db))
    assert set(choices) == {p.url for p in pages}
    linked = [choices[p.url] for p in pages if p.parent]
    assert linked and all(0 <= priority < SEED_PRIORITY and score is not None for priority, score in linked)


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    # the install step installs it (make install-chromium, as root); try the same here before giving up
    install = subprocess.run(
        ["make", "--no-print-directory", "install-chromium"], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.skip(
            f"chromium is not installed and `make install-chromium` could not install it: {install.stderr[-300:]}"
        )
    return found


def _browser(tmp, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'chromium-profile'}",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)


def test_report_is_self_contained_and_renders_with_its_plots(crawl):
    tmp = crawl["tmp"]
    out = tmp / "report.html"
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    cmd = [sys.executable, "-m", "focused", "report", str(crawl["spec"].db), "-o", str(out)]
    run = subprocess.run(cmd, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    page = out.read_text()
    # self-contained: no scripts, stylesheets or images from anywhere but the file itself
    assert "<script" not in page and "<link" not in page and "url(" not in page
    sources = re.findall(r"src='([^']*)'", page)
    assert len(sources) == 2 and all(s.startswith("data:image/png;base64,") for s in sources)
    for heading in ("The most relevant pages found", "Pages per host", "Skipped or refused", "Why these pages"):
        assert heading in page
    assert "focused/ignored_responses" in page and "site.test" in page
    # the browser decodes both plots: a probe appended to a copy reports each image's natural size
    probe = tmp / "probe.html"
    probe.write_text(
        page.replace(
            "</body>",
            "<script>document.body.setAttribute('data-probe', JSON.stringify("
            "[...document.images].map(i => [i.complete, i.naturalWidth, i.naturalHeight])))</script></body>",
        )
    )
    dom = _browser(tmp, "--dump-dom", probe.as_uri())
    found = re.search(r'data-probe="([^"]*)"', dom.stdout)
    assert found, (dom.stdout[-500:], dom.stderr[-2000:])
    images = json.loads(found.group(1).replace("&quot;", '"'))
    assert len(images) == 2 and all(ok and w >= 400 and h >= 200 for ok, w, h in images), images
    # and the report itself, as a person sees it: a screenshot that is not blank
    shot = tmp / "report.png"
    _browser(tmp, f"--screenshot={shot}", "--window-size=1200,1600", out.as_uri())
    from PIL import Image

    with Image.open(shot) as image:
        colors = image.convert("RGB").getcolors(maxcolors=1_000_000)
    assert colors is not None and len(colors) > 50  # text, tables and the plots' lines, not one flat colour
