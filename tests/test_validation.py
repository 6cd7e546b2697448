"""Start-up validation: every bad argument or setting is one line on stderr and exit status 1, never a traceback.

Each case runs the real ``scrapy crawl focused`` command (all cases at once, a few processes in parallel,
in a module fixture); validation happens before Scrapy starts, so a case takes about a second.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from scrapy.settings import Settings

from focused.bench.runner import PROJECT_ROOT
from focused.errors import ConfigError
from focused.settings import defaults
from focused.settings.validation import SPECS, default_names, validate

WIKI = "models/wiki-topics.npz"
OK = ["-a", "topic=course", "-a", "seeds=http://127.0.0.1:9/"]

#: (id, extra arguments, what the one line must contain); ``{tmp}`` is a scratch folder with the files below.
CASES = [
    ("topic-unknown", ["-a", "topic=Birds"], ["-a topic=Birds", "unknown topic", "course"]),
    ("topic-nearest-by-words", ["-a", "topic=Birds", "-a", f"model={WIKI}"], ["nearest: Science.Biology"]),
    ("topic-nearest-by-name", ["-a", "topic=physic", "-a", f"model={WIKI}"], ["nearest:", "Science.Physics"]),
    ("topic-empty", ["-a", "topic="], ["-a topic=", "expected a topic", "student"]),
    ("topic-union-part", ["-a", "topic=course,nope"], ["unknown topic", "course"]),
    ("seeds-scheme", ["-a", "seeds=ftp://x.example/"], ["-a seeds=ftp://x.example/", "http(s)"]),
    ("seeds-not-url", ["-a", "seeds=not-a-url"], ["-a seeds=not-a-url", "http(s)"]),
    ("seeds-no-host", ["-a", "seeds=http://"], ["-a seeds=http://", "http(s)"]),
    ("seeds-file-missing", ["-a", "seeds_file={tmp}/none.txt"], ["-a seeds_file=", "does not exist"]),
    ("seeds-file-bad-url", ["-a", "seeds_file={tmp}/seeds.txt"], ["-a seeds_file=", "mailto:"]),
    ("model-missing", ["-a", "model={tmp}/none.npz"], ["-a model=", "not found", "focused train-topic"]),
    ("topic-of-the-other-model", ["-a", "topic=Science.Physics"], [f"{WIKI} has it", f"-a model={WIKI}"]),
    ("model-not-a-model", ["-a", "model={tmp}/text.txt"], ["-a model=", "critic model"]),
    ("model-wrong-kind", ["-a", "model={tmp}/crawl.sqlite"], ["-a model=", "critic model"]),
    ("apprentice-is-a-critic", ["-a", "apprentice=models/webkb-pagetype.npz"], ["-a apprentice=", "critic"]),
    ("apprentice-missing", ["-a", "apprentice={tmp}/none.npz"], ["-a apprentice=", "does not exist"]),
    ("strategy-unknown", ["-a", "strategy=bestfirst"], ["-a strategy=bestfirst", "baseline", "bfs"]),
    ("strategy-oracle-no-labels", ["-a", "strategy=oracle"], ["-a strategy=oracle", "labels"]),
    ("strategy-offline-no-model", ["-a", "strategy=apprentice-offline"], ["apprentice=FILE"]),
    ("labels-missing", ["-a", "labels={tmp}/none.tsv"], ["-a labels=", "does not exist"]),
    ("max-pages-negative", ["-a", "max_pages=-3"], ["-a max_pages=-3", ">= 0"]),
    ("max-pages-text", ["-a", "max_pages=ten"], ["-a max_pages=ten", "whole number"]),
    ("max-pages-fraction", ["-a", "max_pages=1.5"], ["-a max_pages=1.5", "whole number"]),
    ("dmax-negative", ["-s", "FOCUSED_APPRENTICE_DMAX=-1"], ["FOCUSED_APPRENTICE_DMAX=-1", ">= 0"]),
    ("batch-zero", ["-s", "FOCUSED_APPRENTICE_BATCH=0"], ["FOCUSED_APPRENTICE_BATCH=0", ">= 1"]),
    ("batch-negative", ["-s", "FOCUSED_APPRENTICE_BATCH=-5"], ["FOCUSED_APPRENTICE_BATCH=-5", ">= 1"]),
    ("aggregation-median", ["-s", "FOCUSED_PARENT_AGGREGATION=median"], ["=median", "first, max, mean"]),
    ("tiebreak", ["-s", "FOCUSED_TIEBREAK=lifo"], ["FOCUSED_TIEBREAK=lifo", "fifo, random"]),
    ("threshold-range", ["-s", "FOCUSED_RELEVANCE_THRESHOLD=1.5"], ["=1.5", "<= 1"]),
    ("threshold-text", ["-s", "FOCUSED_RELEVANCE_THRESHOLD=high"], ["=high", "a number"]),
    ("anchor-weight", ["-s", "FOCUSED_APPRENTICE_ANCHOR_WEIGHT=2"], ["ANCHOR_WEIGHT=2", "<= 1"]),
    (
        "max-instances",
        ["-s", "FOCUSED_APPRENTICE_MAX_INSTANCES=-1"],
        ["FOCUSED_APPRENTICE_MAX_INSTANCES=-1", ">= 0"],
    ),
    ("alpha-zero", ["-s", "FOCUSED_APPRENTICE_ALPHA=0"], ["FOCUSED_APPRENTICE_ALPHA=0", "> 0"]),
    ("bool", ["-s", "FOCUSED_DB_STORE_HTML=maybe"], ["FOCUSED_DB_STORE_HTML=maybe", "True or False"]),
    ("log-every", ["-s", "FOCUSED_LOG_EVERY=-1"], ["FOCUSED_LOG_EVERY=-1", ">= 0"]),
    ("commit-seconds", ["-s", "FOCUSED_DB_COMMIT_SECONDS=0"], ["FOCUSED_DB_COMMIT_SECONDS=0", "> 0"]),
    ("concurrency", ["-s", "FOCUSED_REPLAY_CONCURRENCY=0"], ["FOCUSED_REPLAY_CONCURRENCY=0", ">= 1"]),
    ("frontier-store", ["-s", "FOCUSED_FRONTIER_STORE=disk"], ["=disk", "memory", "sqlite", "redis"]),
    ("profile", ["-s", "FOCUSED_PROFILE=fast"], ["FOCUSED_PROFILE=fast", "replay"]),
    ("proxy-no-scheme", ["-s", "FOCUSED_REPLAY_PROXY=127.0.0.1:8899"], ["FOCUSED_REPLAY_PROXY=", "http://"]),
    ("redis-url", ["-s", "REDIS_URL=localhost:6379"], ["REDIS_URL=localhost:6379", "redis://"]),
    ("db-unwritable", ["-a", "db=/proc/focused/x.sqlite"], ["-a db=/proc/focused/x.sqlite", "cannot"]),
    ("db-under-a-file", ["-a", "db={tmp}/text.txt/x.sqlite"], ["-a db=", "not a directory"]),
    ("db-template-field", ["-a", "db={tmp}/{{topik}}.sqlite"], ["{topik}", "{topic}"]),
    ("stats-file-is-dir", ["-s", "FOCUSED_STATS_FILE={tmp}"], ["FOCUSED_STATS_FILE=", "not a file"]),
    ("restrict-to-missing", ["-a", "restrict_to={tmp}/none.sqlite"], ["-a restrict_to=", "does not exist"]),
    ("restrict-to-not-db", ["-a", "restrict_to={tmp}/text.txt"], ["-a restrict_to=", "crawl database"]),
    ("setting-typo", ["-s", "FOCUSED_APRENTICE_BATCH=5"], ["FOCUSED_APRENTICE_BATCH=5", "FOCUSED_APPRENTICE_BATCH"]),
    ("argument-typo", ["-a", "topc=course"], ["-a topc=course", "did you mean topic"]),
    ("scrapy-number", ["-s", "CONCURRENT_REQUESTS=abc"], ["CONCURRENT_REQUESTS=abc", "a number", "Scrapy"]),
    ("scrapy-url-length", ["-s", "URLLENGTH_LIMIT=long"], ["URLLENGTH_LIMIT=long", "a number"]),
    ("scrapy-bool", ["-s", "ROBOTSTXT_OBEY=sure"], ["ROBOTSTXT_OBEY=sure", "True or False"]),
]


def _files(tmp: Path) -> None:
    (tmp / "text.txt").write_text("not a model\n")
    (tmp / "seeds.txt").write_text("http://ok.example/\nmailto:someone@example.com\n")
    (tmp / "crawl.sqlite").write_bytes(b"SQLite format 3\x00" + bytes(100))


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT), SCRAPY_SETTINGS_MODULE="focused.settings")
    cmd = [sys.executable, "-m", "scrapy", "crawl", "focused", *args]
    return subprocess.run(cmd, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def results(request, tmp_path_factory):
    """Run the selected cases (``-k`` selects fewer), three processes at a time."""
    selected = {
        item.callspec.params["case_id"]
        for item in request.session.items
        if hasattr(item, "callspec") and "case_id" in item.callspec.params
    }
    tmp = tmp_path_factory.mktemp("bad-input")
    _files(tmp)
    runs = {}
    with ThreadPoolExecutor(max_workers=3) as pool:
        for case_id, extra, _ in CASES:
            if case_id not in selected:
                continue
            # later arguments win: the bad one after the good defaults
            args = [a.format(tmp=tmp) for a in OK + extra]
            runs[case_id] = pool.submit(_run, args)
        return {case_id: future.result() for case_id, future in runs.items()}


@pytest.mark.parametrize(("case_id", "expected"), [(c[0], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_1(results, case_id, expected):
    run = results[case_id]
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode == 1, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    assert len(lines) == 1, run.stderr[-2000:]
    for part in expected:
        assert part in lines[0], lines[0]


def test_every_default_has_a_spec():
    missing = [name for name in default_names() if name not in SPECS]
    assert not missing, f"add a check to focused.settings.validation.SPECS for: {missing}"
    assert "FOCUSED_APPRENTICE_BATCH" in default_names() and "REDIS_URL" in default_names()


def test_every_spec_is_a_default():
    assert set(SPECS) <= set(vars(defaults))


def test_the_project_defaults_pass():
    settings = Settings()
    settings.setmodule("focused.settings")
    validate(settings, {"topic": "course", "seeds": "http://127.0.0.1:9/", "_job": "abc"}, ignore_args=("_job",))


def test_a_later_check_sees_the_argument_not_the_setting():
    settings = Settings()
    settings.setmodule("focused.settings")
    settings.set("FOCUSED_MAX_PAGES", "-1", priority="cmdline")
    validate(settings, {"topic": "course", "max_pages": "5"})  # -a max_pages overrides the setting
    with pytest.raises(ConfigError, match=r"^FOCUSED_MAX_PAGES=-1: expected a whole number >= 0"):
        validate(settings, {"topic": "course"})


COMMAND_CASES = [
    (["replay", "--port", "abc"], "--port"),
    (["demo", "--pages", "-3"], "--pages"),
    (["demo", "--strategy", "nope"], "baseline"),
    (["demo", "--set", "FOCUSED_APPRENTICE_ANCHOR_CRITIC=maybe"], "expected True or False"),
    (["demo", "--set", "FOCUSED_APPRENTICE_ANCHOR_CRITICS=0"], "did you mean FOCUSED_APPRENTICE_ANCHOR_CRITIC"),
    (["demo", "--set", "FOCUSED_MAX_PAGES"], "NAME=VALUE"),
    (["nosuchcmd"], "nosuchcmd"),
    (["report", "{tmp}/none.sqlite"], "not found"),
    (["report", "{tmp}/text.txt"], "not an SQLite crawl database"),
    (["report", "{tmp}/none.sqlite", "--threshold", "2"], "--threshold"),
    (["topics", "--model", "{tmp}/none.npz"], "not found"),
    (["topics", "no-such-topic"], "no topic of models/webkb-pagetype.npz contains 'no-such-topic'"),
    (["train-apprentice", "--from", "{tmp}/none.sqlite", "-o", "{tmp}/a.npz"], "not found"),
]


@pytest.mark.parametrize(("argv", "expected"), COMMAND_CASES, ids=[" ".join(c[0][:2]) for c in COMMAND_CASES])
def test_focused_commands_give_one_line_and_exit_1(argv, expected, tmp_path, capsys):
    from focused.cli import main

    _files(tmp_path)
    try:
        code = main([a.format(tmp=tmp_path) for a in argv])
    except SystemExit as exc:  # argparse
        code = exc.code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1, err
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in err, err


def test_a_topic_left_out_is_named_as_the_argument_to_give():
    result = _run(["-a", "seeds=http://127.0.0.1:9/"])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 1 and len(lines) == 1, result.stderr
    assert "-a topic=... is missing" in lines[0] and "student" in lines[0]


def test_a_missing_model_of_ones_own_is_not_told_to_rebuild_the_defaults(tmp_path):
    result = _run([*OK, "-a", f"model={tmp_path}/mine.npz"])
    assert result.returncode == 1 and "make models" not in result.stderr, result.stderr
    default = _run([*OK, "-a", f"model={tmp_path}/models/webkb-pagetype.npz"])
    assert default.returncode == 1 and "make models" in default.stderr  # a default model: rebuild it


def test_topics_lists_those_that_contain_the_pattern(capsys):
    from focused.cli import main

    assert main(["topics", "STUD"]) == 0
    assert capsys.readouterr().out.split() == ["student"]
