"""A crawl's critic only scores: its training counts are released once the crawl has resolved its topic, which
changes no score, and a critic without them refuses to be saved instead of writing a broken file."""

from __future__ import annotations

import numpy as np
import pytest
from scrapy.settings import Settings

from focused.learning.critic.crossfit import CrossFitCritic
from focused.learning.critic.naive_bayes import Critic
from focused.settings.suggest import classes_using_words

TEXTS = [
    "lecture notes homework syllabus exam course",
    "course schedule homework grading lecture",
    "professor research publications students advisor",
    "faculty member research interests publications",
    "student home page hobbies resume classes",
    "graduate student resume advisor projects",
] * 12
LABELS = ["course", "course", "faculty", "faculty", "student", "student"] * 12
URLS = [f"http://u.test/{i}.html" for i in range(len(TEXTS))]
PAGES = ["homework for the course lecture", "my resume and my advisor", "research publications of the faculty"]


def _views(critic, topic) -> list[np.ndarray]:
    return [
        critic.posteriors(PAGES, URLS[:3]),
        critic.verdict_posteriors(PAGES, URLS[:3]),
        critic.snippet_relevance(["course homework", "advisor"], topic, URLS[:2]),
    ]


@pytest.mark.parametrize("kind", ["plain", "crossfit"])
def test_released_counts_score_the_same_and_cannot_be_saved(kind, tmp_path):
    if kind == "plain":
        critic = Critic.train(TEXTS, LABELS, urls=URLS, calibrate=False, verdict_head=True)
    else:
        critic = CrossFitCritic.train(TEXTS, LABELS, URLS, k=2, calibrate=False)
    topic = critic.resolve_topic("course")
    want = _views(critic, topic)
    assert classes_using_words(critic, "homework lecture") == ["course"]  # the counts name a bad topic's class...
    critic.release_counts()
    for fold in getattr(critic, "folds", [critic]):
        assert fold.feature_count_ is None
    for got, expected in zip(_views(critic, topic), want, strict=True):
        assert np.array_equal(got, expected)
    assert classes_using_words(critic, "homework lecture") == []  # ...without them, none (and no error)
    with pytest.raises(ValueError, match="released"):
        critic.save(tmp_path / "critic.npz")
    assert not (tmp_path / "critic.npz").exists()


def test_a_crawls_runtime_keeps_no_counts_and_judges():
    from focused.core.runtime import CrawlRuntime

    settings = Settings({"FOCUSED_TOPIC": "course", "FOCUSED_STRATEGY": "apprentice"})
    settings.setmodule("focused.settings", priority="default")
    runtime = CrawlRuntime(settings)
    assert runtime.critic.feature_count_ is None
    verdict = runtime.judge("http://u.test/cs101/", "CS 101 lecture notes, homework 3 and the final exam syllabus")
    assert 0.0 <= verdict.relevance <= 1.0
