"""The crawl's closing summary (:mod:`focused.extensions.summary`), from real ``scrapy crawl`` runs of a local site.

Also: a normal crawl logs no ``ScrapyDeprecationWarning`` (the apprentice's closing handlers are coroutines).
"""

from __future__ import annotations

import os
import random
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from focused.bench.runner import PROJECT_ROOT, CrawlSpec, run_crawl
from focused.extensions.summary import (
    FORM_HINT_PAGES,
    MANY_CLASSES,
    CrawlSummary,
    Figures,
    RelevantRule,
    Tally,
    from_examples_on_corpora,
    resume_command,
    seconds_text,
)
from focused.learning.critic.naive_bayes import Critic
from focused.replay.labels import write_labels
from tests.local_server import HTML, LocalServer
from tests.sites import COOKING, NEUTRAL, SPORT, page, train_critic, words

LEAVES = 5


def site_pages(seed: int = 1) -> dict[str, tuple[int, list[tuple[str, str]], bytes]]:
    """``/`` links to a cooking hub and a sport hub, each with ``LEAVES`` leaves of its kind: 13 pages."""
    rng = random.Random(seed)
    pages = {"/": page("Home", words(NEUTRAL, 40, rng), [("/cook/", "kitchen"), ("/sport/", "games")])}
    for kind, vocab in (("cook", COOKING), ("sport", SPORT)):
        leaves = [(f"/{kind}/{i}.html", f"{kind} {i}") for i in range(LEAVES)]
        pages[f"/{kind}/"] = page(kind, words(vocab, 80, rng), leaves)
        for href, _ in leaves:
            pages[href] = page(href, words(vocab, 80, rng), [("/", "home")])
    return {path: (200, HTML, body) for path, body in pages.items()}


@pytest.fixture(scope="module")
def web():
    with LocalServer(site_pages()) as server:
        yield server


def many_class_critic(path: Path) -> Path:
    """12 classes: ``sport`` and two near-copies of it (a sport page's Pr(sport) is about 1/3), cooking, misc and
    seven classes of made-up words. Pr(sport|page) stays under 0.5 where sport is still the most probable class."""
    rng = random.Random(5)
    vocabularies = {"sport": SPORT, "sport_b": SPORT, "sport_c": SPORT, "cooking": COOKING, "misc": NEUTRAL}
    for i in range(MANY_CLASSES + 2 - len(vocabularies)):
        vocabularies[f"filler{i}"] = tuple(f"w{i}x{j}" for j in range(12))
    texts, labels = [], []
    for label, vocab in vocabularies.items():
        for _ in range(30):
            texts.append(words(vocab, 60, rng) + " " + words(NEUTRAL, 10, rng))
            labels.append(label)
    Critic.train(texts, labels, n_features=2**12, metadata={"test": True}).save(path)
    return path


def crawl(web: LocalServer, tmp: Path, name: str, *, model: Path | None = None, labels: Path | None = None,
          max_pages: int = 0, strategy: str = "bfs", **settings: object):  # fmt: skip
    spec = CrawlSpec(
        name=name,
        topic="sport",
        strategy=strategy,
        seeds=(web.url + "/",),
        model=model or train_critic(tmp / "critic.npz"),
        proxy="",
        db=tmp / f"{name}.sqlite",
        max_pages=max_pages,
        labels=labels,
        settings={"FOCUSED_ALLOW_INTERNAL": web.allow, "FOCUSED_REPLAY_CONCURRENCY": 1, **settings},
    )
    result = run_crawl(spec, timeout=120)
    log = result.log.read_text()
    assert result.returncode == 0, log[-3000:]
    return spec, result, log


def summary_of(log: str) -> dict[str, str]:
    """The summary's ``name: value`` lines (the block after "Crawl summary:")."""
    assert log.count("Crawl summary:") == 1, log[-3000:]
    block = log.split("Crawl summary:", 1)[1].splitlines()
    fields = {"reason": block[0].strip()}
    for line in block[1:]:
        if not line.startswith("  "):
            break
        name, _, value = line.strip().partition(": ")
        if value:
            fields[name] = value.strip()
    return fields


def db_figures(db: Path) -> tuple[int, float, int, dict[str, int]]:
    conn = sqlite3.connect(db)
    try:
        n, mean, over = conn.execute("SELECT COUNT(*), AVG(relevance), SUM(relevance >= 0.5) FROM pages").fetchone()
        classes = dict(conn.execute("SELECT predicted_class, COUNT(*) FROM pages GROUP BY predicted_class"))
    finally:
        conn.close()
    return n, mean, over, classes


def test_summary_of_a_crawl_with_labels_and_a_job_directory(web, tmp_path):
    labels = tmp_path / "labels.tsv"
    rows = [(web.url + path, "sport" if path.startswith("/sport/") else "other", None) for path in site_pages()]
    write_labels(labels, rows)
    jobdir = tmp_path / "job"
    spec, result, log = crawl(web, tmp_path, "labelled", labels=labels, JOBDIR=jobdir)
    fields = summary_of(log)
    n, mean, over, _ = db_figures(spec.db)
    assert n == len(site_pages())
    assert fields["reason"] == "finished (the frontier is empty)"
    assert re.fullmatch(rf"{n} in \d+\.\d s", fields["pages stored"]), fields
    assert fields["harvest"].startswith(f"{mean:.3f} (the critic's mean Pr(topic|page); loss {1 - mean:.3f})")
    assert fields["relevant pages"] == f"{over} of {n} (Pr(topic|page) >= 0.5)"
    conn = sqlite3.connect(spec.db)
    truth = conn.execute("SELECT COUNT(*) FROM pages WHERE url LIKE '%/sport/%'").fetchone()[0]
    conn.close()
    assert fields["true harvest"] == f"{truth / n:.3f} ({truth} of {n} pages are labelled 'sport' in labels.tsv)"
    assert result.stats["focused/summary/true_harvest"] == round(truth / n, 4)
    assert Path(fields["crawl database"]).resolve() == spec.db.resolve()
    assert fields["report"] == f"focused report {fields['crawl database']} -o {fields['crawl database'][:-7]}.html"
    resume = fields["resume"]
    assert resume.startswith("scrapy crawl focused -a topic=sport ") and f"JOBDIR={jobdir}" in resume
    assert "(the frontier is empty: a resumed crawl has nothing left to fetch)" in log
    assert "Dumping Scrapy stats" not in log and "'downloader/request_count'" not in log  # no 70-line stats dict
    assert result.stats["focused/summary/pages"] == n and result.stats["downloader/request_count"] > 0


def test_a_crawl_stopped_early_and_its_report_command(web, tmp_path):
    spec, _, log = crawl(web, tmp_path, "report", CLOSESPIDER_ITEMCOUNT=3)
    fields = summary_of(log)
    assert fields["reason"] == "closespider_itemcount (CLOSESPIDER_ITEMCOUNT was reached)"
    assert fields["pages stored"].startswith(f"{db_figures(spec.db)[0]} in ")
    assert "resume" not in fields  # no JOBDIR
    command = fields["report"].split()
    proc = subprocess.run(
        [sys.executable, "-m", "focused", *command[1:]],
        cwd=PROJECT_ROOT,
        env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert spec.db.with_suffix(".html").exists()


def test_many_class_critic_counts_the_most_probable_class(web, tmp_path):
    model = many_class_critic(tmp_path / "many.npz")
    spec, result, log = crawl(web, tmp_path, "many", model=model)
    fields = summary_of(log)
    n, _, over, classes = db_figures(spec.db)
    top = classes.get("sport", 0)
    assert top > over  # the case the rule is for: sport is the most probable class, at Pr < 0.5
    assert fields["relevant pages"] == (
        f"{top} of {n} (the critic's most probable class, of 12, is in the topic; {over} have Pr(topic|page) >= 0.5)"
    )
    assert result.stats["focused/summary/relevant_rule"] == "top-class"
    # an explicit threshold is the user's rule
    _, result, log = crawl(web, tmp_path, "many-threshold", model=model, FOCUSED_RELEVANCE_THRESHOLD=0.3)
    assert "(Pr(topic|page) >= 0.3)" in summary_of(log)["relevant pages"]
    assert result.stats["focused/summary/relevant_rule"] == "threshold"


def test_summary_reaches_stderr_when_the_log_goes_to_a_file(web, tmp_path):
    model = train_critic(tmp_path / "critic.npz")
    logfile = tmp_path / "crawl.log"
    db = tmp_path / "file.sqlite"
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", "topic=sport", "-a", f"seeds={web.url}/",
         "-a", f"model={model}", "-a", "strategy=bfs", "-a", f"db={db}", "-s", f"FOCUSED_ALLOW_INTERNAL={web.allow}",
         "-s", "FOCUSED_PROFILE=replay", "-s", f"LOG_FILE={logfile}"],
        cwd=PROJECT_ROOT, env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + logfile.read_text()[-3000:]
    assert proc.stderr.count("Crawl summary: finished (the frontier is empty)") == 1, proc.stderr
    n = db_figures(db)[0]
    assert summary_of(proc.stderr)["pages stored"].startswith(f"{n} in ")
    assert summary_of(logfile.read_text())["pages stored"].startswith(f"{n} in ")


def test_apprentice_crawl_with_a_job_directory_logs_no_deprecation_warning(web, tmp_path):
    """The apprentice's closing handler trains the last batch and checkpoints (a coroutine Scrapy awaits)."""
    spec, _, log = crawl(
        web, tmp_path, "apprentice", strategy="apprentice", JOBDIR=tmp_path / "job",
        FOCUSED_APPRENTICE_BATCH=4, FOCUSED_APPRENTICE_MIN_INSTANCES=4,
    )  # fmt: skip
    assert "Saved the apprentice" in log
    assert "Warning" not in log, [line for line in log.splitlines() if "Warning" in line]
    assert summary_of(log)["pages stored"].startswith(f"{db_figures(spec.db)[0]} in ")


def test_relevant_rule_by_critic_and_settings():
    topic = ("Science.Astronomy",)
    assert RelevantRule.of(105, topic, 0.5).kind == "top-class"
    assert RelevantRule.of(7, topic, 0.5).kind == "threshold"
    assert RelevantRule.of(105, topic, 0.3, threshold_given=True).kind == "threshold"
    assert RelevantRule.of(105, topic, 0.5, predicate=True).kind == "predicate"
    rule = RelevantRule.of(105, topic, 0.5)
    assert rule.relevant(0.3, "Science.Astronomy") and not rule.relevant(0.6, "Science.Physics")
    assert RelevantRule.of(7, ("course",), 0.5).relevant(0.6, "student")


@pytest.mark.parametrize(
    ("sources", "pages", "relevant", "hint"),
    [
        (["webkb", "wiki"], FORM_HINT_PAGES, FORM_HINT_PAGES, True),  # every page: the kind of page, likely
        (["webkb", "wiki"], FORM_HINT_PAGES, FORM_HINT_PAGES * 7 // 10, False),  # most, not nearly all
        (["webkb", "wiki"], FORM_HINT_PAGES - 1, FORM_HINT_PAGES - 1, False),  # too few pages to tell
        (["webkb", "wiki", "crawls/site.sqlite"], 100, 100, False),  # the site's pages are in its background
        (None, 100, 100, False),  # a taxonomy critic
    ],
)
def test_the_summary_hints_at_examples_unlike_the_background(sources, pages, relevant, hint):
    """A critic from examples against the shipped corpora alone that judges three quarters of the pages or more
    relevant gets one more line: its examples may be of a kind the corpora lack (forum posts), docs/topic.md."""
    from scrapy import Spider
    from scrapy.utils.test import get_crawler

    class ExamplesCritic:  # what the summary reads of a critic: its model file's metadata
        metadata = {} if sources is None else {"topic_from_examples": {"background_sources": sources}}

    crawler = get_crawler(Spider, {"FOCUSED_DB": ""})
    summary = CrawlSummary(
        crawler, RelevantRule.of(2, ("t",), 0.5), None, corpora_only=from_examples_on_corpora(ExamplesCritic())
    )
    lines = summary.compose("finished", Figures(Tally(pages=pages, relevance_sum=0.9 * pages, relevant=relevant)))
    assert any("Examples unlike the background" in line for line in lines) == hint, lines


def test_resume_command_and_times():
    argv = ["/x/scrapy/__main__.py", "focused", "-a", "topic=a b", "-s", "JOBDIR=jobs/1"]  # as Scrapy leaves it
    assert resume_command("jobs/1", argv) == "scrapy crawl focused -a 'topic=a b' -s JOBDIR=jobs/1"
    assert resume_command("jobs/1", ["/bin/scrapy", "crawl", *argv[1:]]).startswith("scrapy crawl focused -a")
    assert resume_command("jobs/1", argv[:4]).endswith("-s JOBDIR=jobs/1")  # JOBDIR from a settings file
    assert resume_command("j", ["scrapy", "focused", "-a", "jobdir=j"]) == "scrapy crawl focused -a jobdir=j"
    assert resume_command("jobs/1", ["/x/scrapyd/runner.py", "crawl"]) == "the same command with -s JOBDIR=jobs/1"
    assert [seconds_text(s) for s in (3.21, 125, 7300)] == ["3.2 s", "2 min 05 s", "2 h 01 min"]


def test_crawl_help_explains_the_progress_line_and_the_summary():
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "-h"],
        cwd=PROJECT_ROOT, env=dict(os.environ, PYTHONPATH=str(PROJECT_ROOT)),
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    text = " ".join(proc.stdout.split())
    for field in ("pages=", "harvest=", "loss=", "recent_harvest=", "relevant=", "frontier="):
        assert f"{field} " in text, field
    assert "ends with a summary" in text


def test_a_crawl_from_another_folder_with_the_settings_module(web, tmp_path):
    """docs/troubleshooting.md: out of the checkout, ``scrapy crawl`` finds the project by
    ``SCRAPY_SETTINGS_MODULE=focused.settings``; the crawl database goes to ``crawls/`` of that folder."""
    model = train_critic(tmp_path / "critic.npz")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    args = ["-a", "topic=sport", "-a", f"seeds={web.url}/", "-a", f"model={model}", "-a", "max_pages=3"]
    command = [sys.executable, "-m", "scrapy", "crawl", "focused", *args, "-s", f"FOCUSED_ALLOW_INTERNAL={web.allow}"]
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), SCRAPY_SETTINGS_MODULE="focused.settings")
    proc = subprocess.run(command, cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (db,) = (elsewhere / "crawls").glob("sport-*.sqlite")
    assert db_figures(db)[0] == 3
