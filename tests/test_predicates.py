"""Predicates: the grammar parses valid input, rejects bad input naming the position, and evaluates pages."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from focused.bench.runner import PROJECT_ROOT
from focused.errors import ConfigError
from focused.learning.critic.load import load_critic
from focused.learning.critic.topics import Verdict
from focused.relevance import RelevanceDefinition, load_predicate
from focused.relevance.predicates import Page, PredicateError, parse_predicate
from tests.sites import train_critic

EXAMPLE = 'text:"machine learning" and (url:course or class:course>0.6)'


def page(url="http://a.test/x", text="", **scores):
    return Page(url, text, lambda name: scores.get(name, 0.0))


def test_the_example_parses_with_and_above_or():
    p = parse_predicate(EXAMPLE)
    assert str(p) == '(text:"machine learning" and (url:"course" or class:course>0.6))'
    assert str(parse_predicate("url:a or url:b and not url:c")) == '(url:"a" or (url:"b" and not url:"c"))'
    assert str(parse_predicate("NOT ( text:x OR text:y )")) == 'not (text:"x" or text:"y")'
    assert [a.name for a in parse_predicate("class:a or class:Science.Physics<=0.2").class_atoms()] == [
        "a", "Science.Physics",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "url", "scores", "expected"),
    [
        ("We study Machine  Learning!", "http://u.edu/course/1", {}, True),
        ("We study Machine  Learning!", "http://u.edu/x", {"course": 0.7}, True),
        ("We study Machine  Learning!", "http://u.edu/x", {"course": 0.6}, False),  # > is strict
        ("machine-learning", "http://u.edu/course/", {}, True),  # words, not characters
        ("machine learnings", "http://u.edu/course/", {}, False),  # whole words only
        ("learning machine", "http://u.edu/course/", {}, False),  # a phrase keeps its order
    ],
)
def test_evaluation(text, url, scores, expected):
    assert parse_predicate(EXAMPLE)(page(url, text, **scores)) is expected


def test_url_keywords_are_substrings_and_class_defaults_to_half():
    assert parse_predicate("url:.UK")(page("http://shop.co.uk/books"))
    assert parse_predicate("class:course")(page(course=0.5))
    assert not parse_predicate("class:course")(page(course=0.49))
    assert parse_predicate("class:course<0.2")(page(course=0.1))


@pytest.mark.parametrize(
    ("source", "position", "what"),
    [
        ("", 1, "empty"),
        ("text:", 6, "a word or a quoted phrase"),
        ("text:x and", 11, "text:, url:, class:"),
        ("text:x url:y", 8, "'and', 'or' or the end"),
        ("(text:x or url:y", 17, "')' to close the '(' at position 1"),
        ("colour:red", 1, "got 'colour'"),
        ("class:course>", 14, "a number"),
        ("class:course>high", 14, "a number"),
        ("class:course>1.5", 14, "not in [0, 1]"),
        ('text:"abc', 6, "unterminated"),
        ("url:x = 1", 7, "'='"),
        ("text:x and ) ", 12, "got ')'"),
        ('text:"  "', 6, "at least one word"),
    ],
)
def test_bad_input_is_rejected_naming_the_position(source, position, what):
    with pytest.raises(PredicateError) as err:
        parse_predicate(source)
    message = str(err.value)
    assert f"at position {position} " in message and what in message, message
    assert err.value.position == position - 1
    assert "\n" not in message


@pytest.fixture(scope="module")
def critic(tmp_path_factory):
    return load_critic(train_critic(tmp_path_factory.mktemp("pred") / "critic.npz"))


def test_class_atoms_read_the_critic(critic):
    predicate, topics = load_predicate("class:sport>0.5 and not url:shop", critic)
    relevance = RelevanceDefinition(critic, 0.5, predicate, topics)
    verdict = Verdict(0.0, "misc", ())
    sport = "football goal match team league score player coach stadium season " * 5
    cooking = "recipe oven flour sugar bake butter dough kitchen simmer sauce " * 5
    assert relevance.relevance("http://a.test/x", sport, verdict) == 1.0
    assert relevance.relevance("http://a.test/shop/x", sport, verdict) == 0.0
    assert relevance.relevance("http://a.test/x", cooking, verdict) == 0.0
    # without a predicate the critic's verdict is the relevance
    assert RelevanceDefinition(critic, 0.5).relevance("http://a.test/x", cooking, Verdict(0.3, "x", ())) == 0.3


def test_a_class_the_critic_does_not_have_names_its_position(critic):
    with pytest.raises(ConfigError, match=r"position 18 .*no class 'chess'.*Valid classes: cooking"):
        load_predicate("url:x and (class:chess>0.2)", critic)


def test_scrapy_crawl_with_a_bad_predicate_exits_1_with_one_line(critic, tmp_path):
    model = train_critic(tmp_path / "critic.npz")
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", "seeds=http://a.test/", "-a", f"model={model}",
         "-a", "predicate=text:x and (url:y", "-s", "FOCUSED_DB="],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.strip()]  # start-up validation: one line
    assert len(errors) == 1 and "bad predicate at position 18" in errors[0], proc.stderr
    assert "expected ')' to close the '(' at position 12" in errors[0]
    assert "Traceback" not in proc.stderr
