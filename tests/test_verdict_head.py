"""The critic's discriminative verdict head: what it computes, its model file, and who reads which view."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import SGDClassifier

from focused.learning.critic.bundle import ModelError
from focused.learning.critic.crossfit import CrossFitCritic
from focused.learning.critic.load import load_critic, save_bundle
from focused.learning.critic.naive_bayes import Critic
from focused.learning.critic.topics import Verdict
from focused.learning.critic.verdict_head import EPOCHS, train_head
from focused.strategies.base import Baseline, FetchedPage
from tests.test_critic import make_corpus

MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.fixture(scope="module")
def corpus() -> tuple[list[str], list[str], list[str], list[str]]:
    train, train_labels = make_corpus(0, 30)
    test, test_labels = make_corpus(1, 10)
    return train, train_labels, test, test_labels


@pytest.fixture(scope="module")
def critic(corpus: tuple[list[str], list[str], list[str], list[str]]) -> Critic:
    return Critic.train(corpus[0], corpus[1], verdict_head=True)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_head_computes_what_scikit_learn_predicts(n_classes: int) -> None:
    texts, labels = make_corpus(0, 20)
    classes = sorted(set(labels))[:n_classes]
    keep = [i for i, label in enumerate(labels) if label in classes]
    plain = Critic.train([texts[i] for i in keep], [labels[i] for i in keep], calibrate=False)
    X = plain.transform([texts[i] for i in keep])
    y = np.array([classes.index(labels[i]) for i in keep])
    head = train_head(X, y, n_classes, seed=3, max_weights=None)
    reference = SGDClassifier(loss="log_loss", alpha=head.alpha, max_iter=EPOCHS, tol=None, random_state=3)
    reference.fit(head.tfidf(X), y)
    unseen = plain.transform(["orbit patient zzz-unseen-word qqq-another", "engine"])
    for rows in (X[:7], unseen):
        np.testing.assert_allclose(head.posteriors(rows), reference.predict_proba(head.tfidf(rows)), atol=1e-6)


def test_head_keeps_the_largest_weights_of_each_class() -> None:
    texts, labels = make_corpus(0, 20)
    plain = Critic.train(texts, labels, calibrate=False)
    X = plain.transform(texts)
    y = np.array([sorted(set(labels)).index(label) for label in labels])
    full = train_head(X, y, 3, max_weights=None).coef.toarray()
    pruned = train_head(X, y, 3, max_weights=5).coef.toarray()
    for row_full, row_pruned in zip(full, pruned, strict=True):
        kept = np.flatnonzero(row_pruned)
        assert len(kept) == 5 and np.array_equal(row_pruned[kept], row_full[kept])
        assert np.abs(row_full[kept]).min() >= np.sort(np.abs(row_full))[-5]


def test_head_judges_held_out_pages(critic: Critic, corpus: tuple[list[str], list[str], list[str], list[str]]) -> None:
    _, _, test, test_labels = corpus
    post = critic.verdict_posteriors(test)
    np.testing.assert_allclose(post.sum(axis=1), 1.0)
    predicted = [critic.classes[i] for i in post.argmax(axis=1)]
    assert np.mean([p == t for p, t in zip(predicted, test_labels, strict=True)]) >= 0.9


def test_judge_reads_the_head_and_keeps_naive_bayes_for_links(
    critic: Critic, corpus: tuple[list[str], list[str], list[str], list[str]]
) -> None:
    text = corpus[2][0]
    topic = critic.resolve_topic("sci")
    verdict = critic.judge(text, topic)
    head_post = critic.verdict_posteriors([text])[0]
    assert verdict.relevance == pytest.approx(head_post[topic.indices].sum())
    assert verdict.link_relevance == pytest.approx(critic.relevance([text], topic)[0])
    assert verdict.parent_view == verdict.link_relevance != verdict.relevance
    assert verdict.predicted_class == critic.classes[int(head_post.argmax())]
    plain = Critic.train(corpus[0], corpus[1])
    without = plain.judge(text, topic)
    assert without.link_relevance is None and without.parent_view == without.relevance
    assert without.relevance == pytest.approx(verdict.link_relevance)  # the same naive Bayes


def test_baseline_scores_links_by_the_parent_view() -> None:
    verdict = Verdict(relevance=0.9, predicted_class="a", top_classes=("a",), link_relevance=0.2)
    page = FetchedPage("http://a.test/", 0, verdict, "", None, "")
    assert Baseline().score(page, ["http://a.test/x", "http://a.test/y"]).scores == [0.2, 0.2]


def test_head_round_trips_through_a_model_file(
    critic: Critic, corpus: tuple[list[str], list[str], list[str], list[str]], tmp_path: Path
) -> None:
    path = critic.save(tmp_path / "head.npz")
    loaded = load_critic(path)
    assert isinstance(loaded, Critic) and loaded.head is not None
    np.testing.assert_array_equal(loaded.verdict_posteriors(corpus[2]), critic.verdict_posteriors(corpus[2]))
    with np.load(path, allow_pickle=False) as archive:  # plain arrays: reading it runs no code
        assert all(archive[name].dtype != object for name in archive.files)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": 9}, "verdict head format 9 is not supported"),
        ({"idf_indices": np.array([2**30], dtype=np.int64), "idf_values": np.array([1.0])}, "out of range"),
        ({"intercept": np.zeros(7)}, "disagree in length"),
        ({"intercept": np.array([np.nan, 0.0, 0.0])}, "non-finite"),
    ],
)
def test_a_bad_head_is_refused_in_one_line(critic: Critic, tmp_path: Path, change: dict, message: str) -> None:
    bundle = critic.to_bundle()
    path = save_bundle({**bundle, "verdict_head": {**bundle["verdict_head"], **change}}, tmp_path / "bad.npz")
    with pytest.raises(ModelError, match=message) as info:
        load_critic(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_models_of_the_first_format_still_load_without_a_head(
    corpus: tuple[list[str], list[str], list[str], list[str]], tmp_path: Path
) -> None:
    plain = Critic.train(corpus[0], corpus[1])
    bundle = {k: v for k, v in plain.to_bundle().items() if k != "verdict_head"}
    path = save_bundle({**bundle, "format_version": 1}, tmp_path / "v1.npz")  # as files were before heads
    old = load_critic(path)
    assert isinstance(old, Critic) and old.head is None
    assert old.judge(corpus[2][0], old.resolve_topic("sci")).link_relevance is None
    np.testing.assert_array_equal(old.posteriors(corpus[2]), plain.posteriors(corpus[2]))


def test_the_default_model_has_a_head() -> None:
    critic = load_critic(MODELS / "webkb-pagetype.npz")
    assert isinstance(critic, Critic) and critic.head is not None
    assert critic.head.coef.shape == (len(critic.classes), critic.n_features)
    assert max(critic.head.coef.getnnz(axis=1)) <= 2000  # pruned
    verdict = critic.judge("professor of computer science, publications", critic.resolve_topic("faculty"))
    assert verdict.link_relevance is not None


def test_cross_fitted_critics_judge_with_their_folds_heads(
    corpus: tuple[list[str], list[str], list[str], list[str]],
) -> None:
    train, labels, test, _ = corpus
    urls = [f"http://site.test/{i}" for i in range(len(train))]
    crossfit = CrossFitCritic.train(train, labels, urls, k=2, verdict_head=True)
    topic = crossfit.resolve_topic("rec")
    verdict = crossfit.judge(train[0], topic, url=urls[0])
    fold = crossfit.folds[crossfit.fold_of(urls[0])]  # the fold blind to the page judges it
    assert fold.head is not None
    expected = fold.judge(train[0], fold.resolve_topic("rec"), url=urls[0])
    assert verdict.relevance == pytest.approx(expected.relevance)
    assert verdict.link_relevance == pytest.approx(expected.link_relevance)
    rows = crossfit.verdict_posteriors(train[:6], urls[:6])
    for text, url, row in zip(train[:6], urls[:6], rows, strict=True):
        own = crossfit.folds[crossfit.fold_of(url)]
        assert row[[crossfit.classes.index(c) for c in own.classes]] == pytest.approx(own.verdict_posteriors([text])[0])
    assert CrossFitCritic.train(train, labels, urls, k=2).judge(test[0], topic).link_relevance is None
