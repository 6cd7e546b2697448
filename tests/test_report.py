"""A quiet crawl log and ``focused report``: one crawl of the generated graph web, its log, its stored
stats and choices, and its HTML report opened in a real headless browser (Debian's chromium)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys

import pytest

from focused.bench.runner import PROJECT_ROOT, run_crawl
from focused.crawldb import iter_pages, read_choices, read_meta
from focused.priority import SEED_PRIORITY
from focused.replay.labels import write_labels
from focused.report.data import load_report
from focused.report.html import harvest_top, render
from tests.require import require_program
from tests.sites import graph_crawl, graph_site, graph_web

PAGES = 60
BASELINE_PAGES = 40
GRAPH_PAGES = 240  # graph_web's default


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    with graph_web(tmp) as web:
        spec = graph_crawl(web, "report", strategy="baseline", max_pages=PAGES, LOG_LEVEL="INFO", FOCUSED_LOG_EVERY=20)
        result = run_crawl(spec, timeout=300)
        assert result.returncode == 0, result.log.read_text()[-3000:]
        other = graph_crawl(web, "report-bfs", strategy="bfs", max_pages=BASELINE_PAGES)
        assert run_crawl(other, timeout=300).returncode == 0
        labels = tmp / "labels.tsv"
        store = graph_site(GRAPH_PAGES)
        write_labels(labels, ((url, label, None) for url, label in store.labels.items()))
        yield {"spec": spec, "result": result, "tmp": tmp, "baseline": other.db, "labels": labels}


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
    """Debian's chromium (``make install`` installs it); missing, a skip that says so, a failure under CI."""
    return require_program(
        "chromium", "chromium-browser", install="make install-chromium (Debian: apt-get install chromium)"
    )


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


def test_the_harvest_axis_is_scaled_to_the_curve():
    assert harvest_top([0.01, 0.06, 0.04]) == pytest.approx(0.069)  # not a flat line at the bottom of 0..1
    assert harvest_top([0.2, 0.95]) == 1.0
    assert harvest_top([0.0]) == 0.05  # an empty harvest still has an axis


def test_report_with_labels_and_a_baseline_reads_well(crawl):
    tmp = crawl["tmp"]
    db, baseline, labels = crawl["spec"].db, crawl["baseline"], crawl["labels"]
    data = load_report(db, labels=labels, baseline=baseline)
    assert data.baseline is not None and len(data.baseline.loss) == len(list(iter_pages(baseline)))
    assert data.baseline.strategy == "bfs" and data.labels_used
    assert data.labelled_on_topic is not None and 0 < data.labelled_on_topic < 1
    # each count once under "skipped": the 404s are the breakdown of focused/ignored_responses, not a second row
    keys = [key for key, _, _ in data.reasons()]
    assert "focused/ignored_responses" in keys and not any(k.startswith("httperror/") for k in keys)
    ignored = dict((k, m) for k, m, _ in data.reasons())["focused/ignored_responses"]
    assert f"HTTP 404: {data.stats['focused/ignored_responses']}" in ignored

    out = tmp / "report-baseline.html"
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    cmd = [sys.executable, "-m", "focused", "report", str(db), "-o", str(out), "--labels", str(labels)]
    cmd += ["--baseline", str(baseline)]
    run = subprocess.run(cmd, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    page = out.read_text()
    assert (
        "beside the baseline report-bfs.sqlite (bfs), a crawl that ignores the topic, every page irrelevant (y = x)"
        in page
    )
    assert page.count(">focused/ignored_responses<") == 1 and "httperror/response_ignored" not in page

    # in the browser, at the width of a laptop, with long URLs in "why fetched": URL columns keep a readable width
    # (not one character per line) and nothing overflows the page
    deep = "/".join(f"department-of-computer-science-{i}" for i in range(4))
    data.choices = [
        dataclasses.replace(c, url=f"{c.url}?{deep}", parent=f"{c.parent}{deep}/index.html") for c in data.choices
    ]
    assert data.choices
    long_page = render(data)
    assert f"title='{data.choices[0].url}'" in long_page  # the whole URL in the tooltip, shortened on the page
    probe = tmp / "probe-baseline.html"
    probe.write_text(
        long_page.replace(
            "</body>",
            "<script>document.body.setAttribute('data-probe', JSON.stringify({"
            "urls: [...document.querySelectorAll('td.u')].map(td => td.getBoundingClientRect().width),"
            "overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth}))"
            "</script></body>",
        )
    )
    dom = _browser(tmp, "--window-size=1200,2400", "--dump-dom", probe.as_uri())
    found = re.search(r'data-probe="([^"]*)"', dom.stdout)
    assert found, (dom.stdout[-500:], dom.stderr[-2000:])
    seen = json.loads(found.group(1).replace("&quot;", '"'))
    assert seen["urls"] and min(seen["urls"]) >= 120, seen  # not one character per line
    assert seen["overflow"] <= 0, seen


def test_a_missing_baseline_is_one_line(crawl, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    cmd = [sys.executable, "-m", "focused", "report", str(crawl["spec"].db), "-o", str(tmp_path / "r.html")]
    cmd += ["--baseline", str(tmp_path / "none.sqlite")]
    run = subprocess.run(cmd, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [f"focused: error: --baseline {tmp_path / 'none.sqlite'}: no such file"]
