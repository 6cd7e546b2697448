"""A page's URL words as critic features (focused.learning.critic.urlwords, Critic(url_features=True))."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from focused.learning.critic.bundle import ModelError
from focused.learning.critic.crossfit import CrossFitCritic
from focused.learning.critic.load import load_critic
from focused.learning.critic.naive_bayes import Critic
from focused.learning.critic.snippet import make_snippet_critic
from focused.learning.critic.urlwords import MAX_URL_WORDS, path_words, url_text, url_vocabulary
from focused.learning.modelfile import read_model, save_model


def test_path_words_take_the_path_without_host_query_or_extension() -> None:
    assert path_words("http://www.cs.washington.edu/education/course-webs.html") == ["education", "course", "webs"]
    assert path_words("https://example.org/wiki/Isaac_Newton?action=edit#Life") == ["wiki", "isaac", "newton"]
    assert path_words("http://example.org/a%20b/Courses/cs415/") == ["courses", "cs415"]  # 'a', 'b' too short
    assert path_words("http://example.org/") == []
    assert path_words("http://[bad/x") == []  # malformed: no words, no exception


def test_url_text_prefixes_words_and_shape() -> None:
    assert url_text("http://www.cs.washington.edu/homes/kayee/myself.html").split() == [
        "urlwhomes",
        "urlwkayee",
        "urlwmyself",
        "urlsdepth3",
        "urlsfile",
    ]
    assert url_text("http://example.edu/~kim/index.html?x=1").split() == [
        "urlwkim",
        "urlwindex",
        "urlsdepth2",
        "urlsfile",
        "urlstilde",
        "urlsindex",
        "urlsquery",
    ]
    assert url_text("http://example.edu").split() == ["urlsdepth0", "urlsdir"]
    assert url_text("http://[bad/x") == ""


def test_a_long_url_gives_a_bounded_number_of_words() -> None:
    url = "http://example.org/" + "/".join(f"word{i}x" for i in range(500))
    assert len(path_words(url)) == MAX_URL_WORDS
    assert url_text(url).split()[-2:] == ["urlsdepth6", "urlsfile"]


# The same text on every page: only the URL tells a course from a student.
TEXT = "home page of the department web"
COURSE_URLS = [f"http://u{i}.edu/courses/cs{i}{j}/" for i in range(3) for j in range(3)]
STUDENT_URLS = [f"http://u{i}.edu/homes/student{i}{j}x/" for i in range(3) for j in range(3)]


def _critic() -> Critic:
    urls = COURSE_URLS + STUDENT_URLS
    labels = ["course"] * len(COURSE_URLS) + ["student"] * len(STUDENT_URLS)
    return Critic.train([TEXT] * len(urls), labels, urls=urls, url_min_pages=3, n_features=2**12)


def test_url_vocabulary_keeps_the_words_of_enough_pages() -> None:
    # not cs01 nor student01x (one URL each), nor urlsdepth2 and urlsdir (every URL: they tell no page apart)
    assert url_vocabulary(COURSE_URLS + STUDENT_URLS, 3) == {"urlwcourses", "urlwhomes"}
    assert url_vocabulary(COURSE_URLS, 10) == frozenset()
    assert url_text("http://a.edu/courses/cs01/", {"urlwcourses", "urlsdir"}) == "urlwcourses urlsdir"


def test_a_critic_with_url_features_reads_the_url_where_one_is_given() -> None:
    critic = _critic()
    assert critic.url_words == {"urlwcourses", "urlwhomes"}
    assert critic.url_features and "URL features" in repr(critic)
    topic = critic.resolve_topic("course")
    by_url = critic.relevance([TEXT, TEXT], topic, ["http://new.edu/courses/cse999/", "http://new.edu/homes/kim/"])
    assert by_url[0] > 0.7 > 0.3 > by_url[1]
    assert critic.judge(TEXT, topic, url="http://new.edu/courses/x1/").relevance == pytest.approx(by_url[0], abs=0.1)
    # no URL: the text alone, which cannot tell them apart
    alone = critic.relevance([TEXT], topic)[0]
    assert by_url[1] < alone < by_url[0]
    plain = Critic.train([TEXT] * 4, ["course", "course", "student", "student"], n_features=2**12)
    assert not plain.url_features
    assert plain.relevance([TEXT], topic, ["http://new.edu/courses/"])[0] == plain.relevance([TEXT], topic)[0]


def test_the_anchor_view_reads_the_target_url() -> None:
    critic = _critic()
    topic = critic.resolve_topic("course")
    read = make_snippet_critic(critic, topic)
    anchors = ["webs", "webs", "webs"]
    targets = ["http://d.edu/education/courses/", "http://d.edu/homes/kim/", "http://d.edu/education/courses/"]
    scores = read(anchors, targets)
    assert scores[0] > 0.5 > scores[1]
    assert scores[2] == scores[0]  # remembered per (anchor, target)
    assert read(["webs"], ["http://d.edu/homes/kim/"])[0] == scores[1]


def test_url_features_survive_a_model_file_and_another_scheme_is_refused(tmp_path: Path) -> None:
    critic = _critic()
    path = critic.save(tmp_path / "critic.npz")
    loaded = load_critic(path)
    assert isinstance(loaded, Critic) and loaded.url_words == {"urlwcourses", "urlwhomes"}
    urls = ["http://x.edu/courses/a1/", "http://x.edu/homes/b/"]
    topic = critic.resolve_topic("course")
    assert np.allclose(loaded.relevance([TEXT] * 2, topic, urls), critic.relevance([TEXT] * 2, topic, urls))
    bundle = read_model(path, {"nb": (2,)}, what="critic model", hint="", error=ModelError)
    bundle["features"]["url_words"] = "someone.else/v9"
    save_model(bundle, tmp_path / "other.npz")
    with pytest.raises(ModelError, match=r"reads URLs as 'someone\.else/v9'"):
        load_critic(tmp_path / "other.npz")
    bundle["features"]["url_words"] = critic.to_bundle()["features"]["url_words"]
    bundle["url_vocabulary"] = {"courses": 1}
    save_model(bundle, tmp_path / "bad.npz")
    with pytest.raises(ModelError, match="URL vocabulary is dict"):
        load_critic(tmp_path / "bad.npz")
    del bundle["features"]["url_words"]  # a model file from before URL features: reads text only
    save_model(bundle, tmp_path / "old.npz")
    old = load_critic(tmp_path / "old.npz")
    assert isinstance(old, Critic) and not old.url_features


def test_a_cross_fitted_critic_passes_the_urls_to_its_folds() -> None:
    urls = COURSE_URLS + STUDENT_URLS
    labels = ["course"] * len(COURSE_URLS) + ["student"] * len(STUDENT_URLS)
    critic = CrossFitCritic.train(
        [TEXT] * len(urls), labels, urls, k=2, url_features=True, url_min_pages=3, n_features=2**12
    )
    assert all(fold.url_features for fold in critic.folds)
    topic = critic.resolve_topic("course")
    scores = critic.relevance([TEXT, TEXT], topic, ["http://n.edu/courses/cs1x/", "http://n.edu/homes/zed/"])
    assert scores[0] > 0.5 > scores[1]


def test_an_anchor_does_not_count_a_word_twice() -> None:
    critic = _critic()
    # the anchor is the target's name: its URL adds nothing an encyclopedia's title did not say
    same = critic.snippet_posteriors(["courses"], ["http://x.edu/courses/"])
    assert np.allclose(same, critic.snippet_posteriors(["courses"], ["http://x.edu/"]))
    assert not np.allclose(
        critic.snippet_posteriors(["webs"], ["http://x.edu/courses/"]), critic.snippet_posteriors(["webs"], [None])
    )
    # a page reads its whole URL: its text is long, and the URL's words are evidence of their own
    assert not np.allclose(
        critic.posteriors(["courses"], ["http://x.edu/courses/"]), critic.posteriors(["courses"], ["http://x.edu/"])
    )


def test_the_anchor_view_does_not_remember_long_urls() -> None:
    from focused.learning.critic.snippet import MEMO_TEXT, MEMO_URL

    critic = _critic()
    read = make_snippet_critic(critic, critic.resolve_topic("course"))
    long_url = "http://d.edu/courses/" + "x" * MEMO_URL
    first = read(["webs", "webs"], [long_url, "http://d.edu/courses/"])
    again = read(["webs", "webs"], [long_url, "http://d.edu/courses/"])  # computed again, the same value
    assert np.array_equal(first, again) and first[0] == pytest.approx(first[1])
    memo = next(c.cell_contents for c in read.__closure__ or () if isinstance(c.cell_contents, dict))
    assert list(memo) == [("webs", "http://d.edu/courses/")]
    long_text = "webs " * (MEMO_TEXT // 5 + 1)  # nor long anchor texts: a hostile page's thousands of words
    assert np.array_equal(read([long_text], ["http://d.edu/"]), read([long_text], ["http://d.edu/"]))
    assert list(memo) == [("webs", "http://d.edu/courses/")]
