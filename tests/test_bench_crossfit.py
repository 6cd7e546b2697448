"""The wiki track's protocol on any labelled WARC: ``focused bench --tracks wiki --archive X --labels L``."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from focused.bench.crossfit import crossfit_track, labelled_track
from focused.bench.runner import PROJECT_ROOT
from focused.learning.critic.load import load_critic
from focused.replay.labels import write_labels
from focused.replay.store import StoredResponse
from focused.replay.warc import write_warc
from tests.sites import COOKING, NEUTRAL, SPORT, words

SITE = "http://almanac.test"
#: Two category paths (one with a deeper sub-path), 20 pages each, and one navigation page.
PATHS = {"Sport.Football": SPORT, "Food.Baking": COOKING}


def _page(title: str, text: str, links: list[tuple[str, str]]) -> bytes:
    """Not Wikispeedia's template: a blog-like page with a header menu, an article and a footer of links."""
    menu = "".join(f'<a class="tab" href="{href}">{label}</a>' for href, label in links[:2])
    related = "".join(f'<p class="more">Read next: <a href="{href}">{label}</a></p>' for href, label in links[2:])
    return (
        f"<!doctype html><html><head><title>{title} | The Almanac</title></head><body>"
        f"<header>{menu}</header><main><article><h2>{title}</h2><div class='entry'>{text}</div>"
        f"</article>{related}</main><footer>{words(NEUTRAL, 6, random.Random(title))}</footer></body></html>"
    ).encode()


def almanac(tmp_path: Path, *, n: int = 20, seed: int = 3) -> tuple[Path, Path]:
    """A WARC of 41 pages (a front page and ``n`` per category path) and its labels, no group column."""
    rng = random.Random(seed)
    headers = [("Content-Type", "text/html; charset=utf-8")]
    records, rows = [], []
    slugs = {path: [f"{SITE}/{path.split('.')[-1].lower()}/{i}" for i in range(n)] for path in PATHS}
    front = [(url, f"story {i}") for urls in slugs.values() for i, url in enumerate(urls[:3])]
    records.append(StoredResponse(f"{SITE}/", 200, headers, _page("Front page", words(NEUTRAL, 30, rng), front)))
    rows.append((f"{SITE}/", "Navigation", None))
    for path, vocab in PATHS.items():
        own, other = slugs[path], [u for p, us in slugs.items() if p != path for u in us]
        for i, url in enumerate(own):
            links = [(f"{SITE}/", "home"), (own[(i + 1) % n], "next")]
            links += [(u, "see also") for u in rng.sample(own, 3)] + [(rng.choice(other), "elsewhere")]
            text = words(vocab, 80, rng) + " " + words(NEUTRAL, 20, rng)
            records.append(StoredResponse(url, 200, headers, _page(f"{path} {i}", text, links)))
            label = f"{path}.Leagues" if path.startswith("Sport") and i % 4 == 0 else path
            rows.append((url, label, None))
    warc, labels = tmp_path / "almanac.warc.gz", tmp_path / "almanac.tsv"
    write_warc(warc, records)
    write_labels(labels, rows)
    return warc, labels


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    return subprocess.run(
        [sys.executable, "-m", "focused", "bench", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=PROJECT_ROOT,
        timeout=600,
        check=False,
    )


def test_crossfit_track_on_a_labelled_warc_without_groups(tmp_path: Path):
    warc, labels = almanac(tmp_path)
    track = crossfit_track("almanac", warc, tmp_path / "cache", labels=labels)
    # default topics: the biggest classes of the category paths, ties by name
    assert [c.topic for c in track.cases] == ["Food.Baking", "Sport.Football"]
    critic = load_critic(track.cases[0].model)
    assert critic.kind == "crossfit" and critic.classes == ["Food.Baking", "Sport.Football"]
    for case in track.cases:
        assert case.confine is None and len(case.seeds) == 3
        assert all(f"/{case.topic.split('.')[-1].lower()}/" in seed for seed in case.seeds)  # its own pages
        assert len(case.targets) == 20  # every page of the path, the deeper Sport.Football.Leagues included
    # the held-out-group track takes labels without a group column: the same protocol
    again = labelled_track("almanac", warc, tmp_path / "cache2", labels=labels, topics=["Sport"])
    assert [(c.topic, c.confine, len(c.targets)) for c in again.cases] == [("Sport", None, 20)]


def test_bench_wiki_track_on_a_labelled_warc(tmp_path: Path):
    warc, labels = almanac(tmp_path)
    out = tmp_path / "out"
    # one request at a time: the fetch order is then the strategy's alone (with several in flight, a slot that
    # opens while the pages that link the topic's are still downloading takes another page: under CI's load the
    # oracle once fetched a non-Sport page among its first 20)
    proc = _bench("--tracks", "wiki", "--archive", str(warc), "--labels", str(labels), "--out", str(out),
                  "--topics", "Sport", "--strategies", "bfs,oracle", "--budget", "100", "--no-throughput",
                  "-s", "FOCUSED_REPLAY_CONCURRENCY=1")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((out / "bench.json").read_text())
    cases = result["tracks"]["almanac"]["cases"]
    assert [(c["group"], c["topic"], c["reachable"], c["reachable_targets"]) for c in cases] == [
        ("Sport", "Sport", 41, 20)
    ]
    assert set(result["summary"]["almanac"]["strategies"]) == {"bfs", "oracle"}
    table = (out / "bench.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")}
    assert {"bfs", "oracle"} <= set(rows), table
    runs = {r["strategy"]: r for r in result["runs"]}
    assert all(r["ok"] and r["pages"] == 41 for r in runs.values())  # the whole web, and nothing else
    # the oracle reads the category labels: the 20 pages under Sport (Sport.Football.Leagues too) come first
    assert runs["oracle"]["cumulative_loss"][19] == 0
    assert runs["bfs"]["cumulative_loss"][19] > 0


@pytest.mark.parametrize(
    ("labels_text", "args", "message"),
    [
        (f"{SITE}/food/1\n", [], "expected url<TAB>label[<TAB>group]"),
        (f"{SITE}/food/1\tNavigation\n{SITE}/\tNavigation\n", [], "no page of almanac.warc.gz has a category"),
        (None, ["--topics", "Knitting"], "unknown topic 'Knitting'"),
        (None, ["--tracks", "webkb", "--hold-out", "north"], "--hold-out needs groups, and almanac.tsv has no group"),
    ],
)
def test_bench_bad_labels_or_topics_one_line_exit_1(
    tmp_path: Path, labels_text: str | None, args: list[str], message: str
):
    warc, labels = almanac(tmp_path)
    if labels_text is not None:
        labels.write_text(labels_text)
    proc = _bench("--tracks", "wiki", "--archive", str(warc), "--labels", str(labels), "--out", str(tmp_path / "o"),
                  "--no-throughput", *args)  # fmt: skip
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()  # INFO progress lines may come first; the error is one line
    errors = [line for line in lines if "error" in line.lower()]
    assert errors == [lines[-1]] and message in lines[-1] and "Traceback" not in proc.stderr, proc.stderr
