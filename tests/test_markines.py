"""The Markines classifiers: feature selection, the three classifiers, model files and strategies."""

from __future__ import annotations

import math
import random
import time

import numpy as np
import pytest

from focused.learning.critic.topics import Verdict
from focused.learning.markines.classifiers import (
    CLASSIFIERS,
    MarkinesModel,
    MarkinesModelError,
    feature_scores,
    fit_part,
    platt_sigmoid,
    select_features,
)
from focused.strategies.base import FetchedPage
from focused.strategies.markines import MarkinesStrategy, OnlineMarkines, parse_name
from tests.sites import COOKING, NEUTRAL, SPORT, words

GAP = "<span></span>" * 12  # empty DOM leaves: keeps each link's words out of its neighbours' window


def spread_hub(h: int, per: int, rng: random.Random) -> str:
    """A hub page whose cooking links come first, then its sport links; each link is preceded by
    three words of its target's topic and separated from the next one by 12 empty leaves."""
    parts = [f"<html><head><title>Hub {h}</title></head><body><p>{words(NEUTRAL, 20, rng)}</p>"]
    for kind, vocab in (("c", COOKING), ("s", SPORT)):
        for i in range(per):
            parts.append(f'{GAP}<p>{words(vocab, 3, rng)} <a href="/{kind}/{h}-{i}.html">item</a></p>')
    parts.append(f'{GAP}<p><a href="/hub/{h + 1}.html">next</a></p></body></html>')
    return "".join(parts)


def hub_links(h: int, per: int) -> list[str]:
    return [f"http://site.test/{k}/{h}-{i}.html" for k in ("c", "s") for i in range(per)]


# ---------------------------------------------------------------------- feature selection


def test_df_and_mi_on_a_hand_example():
    # 2 positive, 2 negative documents
    docs = [["ball", "goal"], ["ball", "team"], ["ball", "oven"], ["oven"]]
    labels = [True, True, False, False]
    df = feature_scores(docs, labels, "df")
    # DF: max over classes of the class-normalised document frequency
    assert df == {"ball": 1.0, "goal": 0.5, "team": 0.5, "oven": 1.0}
    mi = feature_scores(docs, labels, "mi")
    # MI(ball): present 3 (2 pos, 1 neg), absent 1 (0 pos, 1 neg); N = 4
    ball = 2 / 4 * math.log(2 * 4 / (3 * 2)) + 1 / 4 * math.log(1 * 4 / (3 * 2)) + 1 / 4 * math.log(1 * 4 / (1 * 2))
    # MI(oven): present in both negatives only: perfectly informative, log 2
    assert mi["ball"] == pytest.approx(ball)
    assert mi["oven"] == pytest.approx(math.log(2))
    goal = 1 / 4 * math.log(4 / 2) + 1 / 4 * math.log(1 * 4 / (3 * 2)) + 2 / 4 * math.log(2 * 4 / (3 * 2))
    assert mi["goal"] == pytest.approx(goal)
    # DF keeps the common word "ball" tied with "oven"; MI ranks "oven" first and "ball" below it
    assert select_features(docs, labels, "df", k=2) == ["ball", "oven"]
    assert select_features(docs, labels, "mi", k=1) == ["oven"]
    assert select_features(docs, labels, "mi", k=4)[-1] in ("goal", "team")
    with pytest.raises(ValueError, match="valid: df, mi"):
        feature_scores(docs, labels, "chi2")


def test_platt_sigmoid_is_decreasing_in_a_and_orders_like_the_decision():
    rng = np.random.default_rng(0)
    f = np.concatenate([rng.normal(1, 1, 200), rng.normal(-1, 1, 200)])
    y = np.array([True] * 200 + [False] * 200)
    a, b = platt_sigmoid(f, y)
    assert a < 0  # Pr(y=1|f) = 1 / (1 + exp(a f + b)) grows with f
    p = 1 / (1 + np.exp(a * f + b))
    assert 0.6 < p[:200].mean() < 0.95 and 0.05 < p[200:].mean() < 0.4


# ---------------------------------------------------------------------- classifiers


def toy_docs(n: int, seed: int = 0) -> tuple[list[list[str]], list[bool]]:
    rng = random.Random(seed)
    docs, labels = [], []
    for i in range(n):
        on = i % 2 == 0
        docs.append((words(SPORT if on else COOKING, 8, rng) + " " + words(NEUTRAL, 4, rng)).split())
        labels.append(on)
    return docs, labels


@pytest.mark.parametrize("selection", ["df", "mi"])
@pytest.mark.parametrize("classifier", CLASSIFIERS)
def test_each_classifier_separates_held_out_documents(classifier, selection):
    docs, labels = toy_docs(80)
    part = fit_part(docs, labels, selection=selection, k=20)
    test_docs, test_labels = toy_docs(40, seed=1)
    scores = part.score(test_docs, classifier)
    y = np.array(test_labels)
    assert np.all((scores >= 0) & (scores <= 1))
    assert scores[y].min() > scores[~y].max()


def test_fit_needs_both_classes():
    with pytest.raises(ValueError, match="both classes"):
        fit_part([["a"], ["b"]], [True, True])


def test_model_file_round_trip_and_bad_files(tmp_path):
    docs, labels = toy_docs(60)
    model = MarkinesModel({"link": fit_part(docs, labels, k=10)}, metadata={"topics": ["sport"]})
    path = model.save(tmp_path / "m.npz")
    again = MarkinesModel.load(path)
    test_docs, _ = toy_docs(10, seed=2)
    for c in CLASSIFIERS:
        assert np.allclose(again.parts["link"].score(test_docs, c), model.parts["link"].score(test_docs, c))
    assert again.parts["link"].vocabulary == model.parts["link"].vocabulary
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a model")
    for wrong in (bad, tmp_path / "missing.npz"):
        with pytest.raises(MarkinesModelError) as err:
            MarkinesModel.load(wrong)
        assert "\n" not in str(err.value) and "train-markines" in str(err.value)


# ---------------------------------------------------------------------- strategies


def page_of(url: str, html: str, relevance: float = 0.5) -> FetchedPage:
    return FetchedPage(url, 1, Verdict(relevance, "sport", ("sport",)), html)


def spread_training(hubs: int, per: int, seed: int) -> tuple[list[list[str]], list[bool]]:
    from focused.learning.markines.data import link_contexts

    rng = random.Random(seed)
    docs, labels = [], []
    for h in range(hubs):
        for url, near in link_contexts(spread_hub(h, per, rng), f"http://site.test/hub/{h}.html").items():
            if "/hub/" not in url:
                docs.append(near)
                labels.append("/s/" in url)
    return docs, labels


@pytest.mark.parametrize("name", [f"markines:{c}-link" for c in CLASSIFIERS])
def test_link_strategies_rank_on_topic_links_above_the_others(name):
    docs, labels = spread_training(10, 4, seed=0)
    strategy = MarkinesStrategy(name, part=fit_part(docs, labels, k=50))
    html = spread_hub(99, 4, random.Random(5))
    links = hub_links(99, 4)
    scores = np.array(strategy.score(page_of("http://site.test/hub/99.html", html), links).scores)
    on = np.array(["/s/" in u for u in links])
    assert scores[on].min() > scores[~on].max()


@pytest.mark.parametrize("name", [f"markines:{c}-page" for c in CLASSIFIERS])
def test_page_strategies_rank_the_links_of_on_topic_pages_first(name):
    rng = random.Random(3)
    texts = [f"<html><body><p>{words(SPORT if i % 2 == 0 else COOKING, 40, rng)}</p></body></html>" for i in range(40)]
    from focused.learning.markines.data import page_words

    part = fit_part([page_words(t) for t in texts], [i % 2 == 0 for i in range(40)], k=30)
    strategy = MarkinesStrategy(name, part=part)
    sport = page_of("http://site.test/a", f"<p>{words(SPORT, 40, rng)}</p><a href='/x'>x</a>")
    cook = page_of("http://site.test/b", f"<p>{words(COOKING, 40, rng)}</p><a href='/y'>y</a>")
    s_sport = strategy.score(sport, ["http://site.test/x"]).scores[0]
    s_cook = strategy.score(cook, ["http://site.test/y"]).scores[0]
    assert s_sport > s_cook


def test_online_strategy_learns_from_judged_targets():
    online = OnlineMarkines("link", k=50, batch=20, min_instances=20)
    strategy = MarkinesStrategy("markines:nb-link", online=online)
    rng = random.Random(7)
    per = 4
    for h in range(12):
        hub = f"http://site.test/hub/{h}.html"
        first = strategy.score(page_of(hub, spread_hub(h, per, rng), 0.9), hub_links(h, per))
        assert len(first.scores) == 2 * per
        for url in hub_links(h, per):  # the targets get fetched and judged by the critic
            on = "/s/" in url
            strategy.score(page_of(url, "<p>leaf</p>", 0.9 if on else 0.1), [])
    deadline = time.monotonic() + 120  # only catches a hang
    while online.part is None and time.monotonic() < deadline:
        time.sleep(0.05)
    # every leaf link, and each hub's link to the next hub (fetched next)
    assert online.version >= 1 and len(online.labels) == 12 * 2 * per + 11
    links = hub_links(50, per)
    scores = np.array(strategy.score(page_of("http://site.test/hub/50.html", spread_hub(50, per, rng)), links).scores)
    on = np.array(["/s/" in u for u in links])
    assert scores[on].min() > scores[~on].max()
    online.close()


def test_strategy_names():
    assert parse_name("markines:svm-page") == ("svm", "page")
    with pytest.raises(ValueError, match="markines:nb-link"):
        parse_name("markines:tree-link")
