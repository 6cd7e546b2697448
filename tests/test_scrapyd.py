"""Scrapyd: deploy the egg with ``scrapyd-deploy``, schedule focused crawls of a replay, read what they leave.

One real Scrapyd on a free loopback port (:mod:`tests.scrapyd_server`, with a ``jobs_dir``); its jobs
import focused from the deployed egg. One crawl uses a critic given with
``-d model=PATH``, one the default model, which only the egg can provide (no
``models/`` folder where Scrapyd runs).
"""

from __future__ import annotations

import json
import sys
import time
import zipfile
from pathlib import Path

import pytest

from focused.bench.runner import PROJECT_ROOT
from focused.crawldb import iter_pages, read_meta
from focused.learning.critic.load import load_critic
from focused.paths import MODELS_PACKAGE, load_model, locate_model
from focused.replay.server import ReplayServer
from tests.scrapyd_server import ScrapydServer, copy_project, deploy
from tests.sites import HOST, hub_site, train_critic

PROJECT = "focused"
VERSION = "test1"
DEFAULT_MODEL = "models/webkb-pagetype.npz"


@pytest.fixture(scope="module")
def scrapyd(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("scrapyd")
    with ScrapydServer(tmp / "server") as server, ReplayServer(hub_site()) as replay:
        answer = deploy(copy_project(PROJECT_ROOT, tmp / "project"), server.url, VERSION)
        yield {"server": server, "proxy": replay.proxy_url, "tmp": tmp, "deployed": answer}


def schedule(scrapyd, *fields: tuple[str, str]) -> str:
    replay = [("setting", "FOCUSED_PROFILE=replay"), ("setting", f"FOCUSED_REPLAY_PROXY={scrapyd['proxy']}")]
    base = [("project", PROJECT), ("spider", "focused"), ("seeds", HOST + "/"), *replay]
    return scrapyd["server"].post("schedule.json", [*base, *fields])["jobid"]


def job_files(scrapyd, job: str) -> dict[str, Path]:
    root = scrapyd["server"].root
    return {
        "log": root / "logs" / PROJECT / "focused" / f"{job}.log",
        "items": root / "items" / PROJECT / "focused" / f"{job}.jl",
        "db": root / "crawls" / PROJECT / "focused" / f"{job}.sqlite",
    }


def test_deploy_and_crawl_with_the_packaged_and_a_given_model(scrapyd):
    server = scrapyd["server"]
    assert scrapyd["deployed"]["project"] == PROJECT and scrapyd["deployed"]["spiders"] == 2
    with zipfile.ZipFile(server.root / "eggs" / PROJECT / f"{VERSION}.egg") as egg:
        names = set(egg.namelist())
    assert {
        "focused/settings/__init__.py",
        f"{MODELS_PACKAGE}/webkb-pagetype.npz",
        f"{MODELS_PACKAGE}/wiki-topics.npz",
    } <= names

    model = train_critic(scrapyd["tmp"] / "critic.npz")
    given = schedule(scrapyd, ("topic", "sport"), ("model", str(model)))
    custom_db = scrapyd["tmp"] / "dbs" / "{job}-course.sqlite"
    default = schedule(
        scrapyd,
        ("topic", "course"),
        ("max_pages", "5"),
        ("_version", VERSION),
        ("setting", f"FOCUSED_DB={custom_db}"),
    )
    server.wait_finished(PROJECT, {given, default})

    # the given critic: the whole site (home, two hubs, 12 leaves) in the items feed and the crawl database
    files = job_files(scrapyd, given)
    assert files["db"].exists(), files["log"].read_text()[-3000:]
    pages = list(iter_pages(files["db"]))
    items = [json.loads(line) for line in files["items"].read_text().splitlines()]
    assert len(pages) == len(items) == 15
    assert {p.url for p in pages} == {item["url"] for item in items}
    assert {p.predicted_class for p in pages if "/sport/" in p.url} == {"sport"}
    meta = read_meta(files["db"])
    assert meta["topic"] == "sport" and meta["critic_model"] == str(model)
    assert "Crawl summary: finished" in files["log"].read_text()

    # the default model, read from the egg; FOCUSED_DB given with {job}
    files = job_files(scrapyd, default)
    log = files["log"].read_text()
    db = Path(str(custom_db).format(job=default))
    assert db.exists() and not files["db"].exists(), log[-3000:]
    meta = read_meta(db)
    assert meta["topic"] == "course" and meta["critic_model"] == DEFAULT_MODEL
    assert f".egg/{MODELS_PACKAGE}/webkb-pagetype.npz" in log
    pages = list(iter_pages(db))
    assert 5 <= len(pages) <= 7 and len(files["items"].read_text().splitlines()) == len(pages)
    assert {p.predicted_class for p in pages} <= set(load_critic(PROJECT_ROOT / DEFAULT_MODEL).classes)
    assert "Crawl summary: focused_max_pages" in log
    # Scrapyd's jobs_dir gives the job a JOBDIR of its own, which no later job can reuse: the log says so
    assert "Scrapyd gives every job a new JOBDIR: schedule with -d jobdir=DIR to make a job resumable" in log


def test_a_bad_argument_fails_the_job_in_one_line(scrapyd):
    job = schedule(scrapyd, ("topic", "course"), ("pages", "5"))
    scrapyd["server"].wait_finished(PROJECT, {job})
    log = job_files(scrapyd, job)["log"].read_text()
    # in the words the user scheduled it with (-d, not scrapy's -a), once, without a traceback
    assert "-d pages=5: unknown spider argument" in log and "-a pages" not in log and "Traceback" not in log
    # Scrapyd lists the job as finished, like a success: its exit status is in Scrapyd's own log
    assert f"Process died: exitstatus=1 project='{PROJECT}' spider='focused' job='{job}'" in scrapyd["server"].tail(
        100_000
    )


def test_a_job_trains_its_critic_from_examples_once(scrapyd):
    """``-d examples=FOLDER`` in a Scrapyd job: the critic is trained in the first job, kept under the jobs' working
    directory, and the next job with the same examples reads it; the background is a folder here (the default one
    needs the corpora where Scrapyd runs: ``FOCUSED_CORPORA``)."""
    server = scrapyd["server"]
    background = scrapyd["tmp"] / "examples-background"
    background.mkdir()
    for i, text in enumerate(["markets and prices", "courts and judges", "parties and votes", "rivers and hills"]):
        (background / f"{i}.html").write_text(f"<html><body><p>{text} {text} page {i}</p></body></html>")
    fields = [
        ("examples", str(Path(__file__).parent / "data" / "topic" / "astronomy")),
        ("topic", "sky"),
        ("max_pages", "3"),
        ("setting", f"FOCUSED_EXAMPLES_BACKGROUND={background}"),
    ]
    first = schedule(scrapyd, *fields)
    server.wait_finished(PROJECT, {first})
    log = job_files(scrapyd, first)["log"].read_text()
    # the training report, logged before Scrapy logs anything, is in the job's log too (all a Scrapyd user sees)
    assert "trained a critic from 14 examples" in log and "held out (5-fold)" in log, log[:3000]
    assert "Crawl summary: focused_max_pages" in log
    assert len(list((server.root / "crawls" / "examples").glob("sky-*.npz"))) == 1
    second = schedule(scrapyd, *fields)
    server.wait_finished(PROJECT, {second})
    log = job_files(scrapyd, second)["log"].read_text()
    assert "the critic trained from these examples before" in log and "trained a critic from" not in log, log[-3000:]


def wait_for_log(path: Path, text: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log = path.read_text() if path.exists() else ""
        if text in log:
            return log
        time.sleep(0.1)
    pytest.fail(f"{text!r} not in {path} after {timeout:.0f} s")


def test_a_cancelled_job_scheduled_again_with_the_same_jobdir_continues(scrapyd):
    server = scrapyd["server"]
    jobdir = scrapyd["tmp"] / "jobs" / "course1"
    slow = [("setting", "DOWNLOAD_DELAY=0.5"), ("setting", "FOCUSED_LOG_EVERY=1")]
    first = schedule(scrapyd, ("topic", "course"), ("jobdir", str(jobdir)), *slow)
    files = job_files(scrapyd, first)
    wait_for_log(files["log"], "pages=3 harvest=")
    server.post("cancel.json", [("project", PROJECT), ("job", first)])
    server.wait_finished(PROJECT, {first})
    log = files["log"].read_text()
    assert f"schedule the job again with -d jobdir={jobdir} to resume it" in log, log[-3000:]
    before = list(iter_pages(files["db"]))
    assert 3 <= len(before) < 15  # cancelled mid-crawl: the hub site has 15 pages

    second = schedule(scrapyd, ("topic", "course"), ("jobdir", str(jobdir)))
    server.wait_finished(PROJECT, {second})
    log = job_files(scrapyd, second)["log"].read_text()
    assert not job_files(scrapyd, second)["db"].exists(), log[-3000:]  # the first job's database goes on
    assert f"{files['db'].name} (continued)" in log, log[-3000:]
    after = list(iter_pages(files["db"]))
    assert len(after) == 15 and len({p.url for p in after}) == 15  # the rest of the site, nothing twice
    assert [p.fetch_order for p in after] == list(range(1, 16))
    assert [(p.url, p.fetch_order) for p in after[: len(before)]] == [(p.url, p.fetch_order) for p in before]
    assert (jobdir / "focused-crawl.json").exists()


def test_packaged_model_from_a_zip(tmp_path, monkeypatch):
    """A relative ``models/NAME`` missing under the project root is read from the package, even zipped."""
    egg = tmp_path / "models.egg"
    with zipfile.ZipFile(egg, "w") as archive:
        archive.writestr(f"{MODELS_PACKAGE}/__init__.py", "")
        archive.write(PROJECT_ROOT / DEFAULT_MODEL, f"{MODELS_PACKAGE}/webkb-pagetype.npz")
    monkeypatch.chdir(tmp_path)  # no scrapy.cfg above: the project root is here, without models/
    monkeypatch.syspath_prepend(str(egg))
    installed = sys.modules.pop(MODELS_PACKAGE, None)  # an installed focused_models must not answer
    try:
        critic, source = load_model(DEFAULT_MODEL, load_critic)
        assert source.packaged and source.name == DEFAULT_MODEL and "course" in critic.classes
        assert str(source.resource).startswith(str(egg))
        assert not locate_model("models/none.npz").packaged  # a missing model stays a missing file
        assert not locate_model(tmp_path / DEFAULT_MODEL).packaged  # an absolute path is never redirected
        (tmp_path / "models").mkdir()
        (tmp_path / DEFAULT_MODEL).write_bytes(b"")  # a file under the project root wins
        assert locate_model(DEFAULT_MODEL).resource == tmp_path / DEFAULT_MODEL
    finally:
        sys.modules.pop(MODELS_PACKAGE, None)
        if installed is not None:
            sys.modules[MODELS_PACKAGE] = installed
