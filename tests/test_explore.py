import numpy as np
import pytest

from focused.bench.suite import split_strategy
from focused.learning.apprentice.explore import NoveltyBonus
from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.linkbatch import LinkBatch
from focused.learning.apprentice.online import OnlineApprentice
from focused.learning.apprentice.payload import LinkPayload


def anchor_critic(texts, urls):
    return np.full(len(texts), 0.3)


def side_online(explore=0.0, **kw):
    learner = Apprentice(min_instances=4, binning="fixed", n_features=2**16, n_side=2)
    bonus = NoveltyBonus(learner.n_features, explore) if explore else None
    return OnlineApprentice(learner, d_max=3, snippet_critic=anchor_critic, explore=bonus, **kw)


def page(words_per_link):
    body = "".join(f'<p>{words} <a href="{u}">item</a> {words}</p>' for u, words in words_per_link)
    return f"<html><body>{body}</body></html>"


SEEN, NEW = "http://x.test/seen", "http://x.test/new"
HTML = page([(SEEN, "seminar schedule talks"), (NEW, "cse142 cse143 cse341")])


def learn_the_seen_context(app, times=5):
    """Links with the context of SEEN whose targets were fetched: evidence on its features."""
    for i in range(times):
        target = f"http://x.test/t{i}"
        payloads = app.link_features(
            f"http://x.test/h{i}", page([(target, "seminar schedule talks")]), 0.5, [], [target]
        )
        app.observe_links([target], payloads)
        app.observe_page([target], 0.5)


def test_the_bonus_raises_a_link_of_unseen_features_over_an_equal_seen_one():
    app = side_online(explore=2.0)
    learn_the_seen_context(app)
    payloads = app.link_features("http://x.test/dept", HTML, 0.5, [], [SEEN, NEW])
    seen, new = app.score(payloads)
    # the critic's views are the same for both links; only the exploration term tells them apart
    np.testing.assert_allclose(payloads[0].side, payloads[1].side)
    assert new > seen > app.prior(np.stack([payloads[0].side]))[0]
    # off (the default): both links score as the prior, equally
    plain = side_online()
    learn_the_seen_context(plain)
    off = plain.score(plain.link_features("http://x.test/dept", HTML, 0.5, [], [SEEN, NEW]))
    assert off is not None and off[0] == off[1] == pytest.approx(plain.prior(np.stack([payloads[0].side]))[0])
    assert plain.explore is None


def test_the_bonus_is_the_same_when_a_frontier_is_rescored_from_a_link_batch():
    app = side_online(explore=1.5)
    learn_the_seen_context(app)
    for i in range(3):  # a model, so that the waiting URLs can be re-scored
        good, bad = f"http://x.test/g{i}", f"http://x.test/b{i}"
        payloads = app.link_features(
            f"http://x.test/k{i}", page([(good, "match"), (bad, "shop")]), 0.5, [], [good, bad]
        )
        app.observe_links([good, bad], payloads)
        app.observe_page([good], 0.9)
        app.observe_page([bad], 0.1)
    model = app.train(*app.take_batch())
    assert model is not None
    app.install(model)
    payloads = app.link_features("http://x.test/dept", HTML, 0.5, [], [SEEN, NEW])
    direct = app.rescore([[payloads[0]], [payloads[1]]])
    batch = LinkBatch(
        entry_sizes=np.array([1, 1]),
        lengths=np.array([len(p.ids) for p in payloads]),
        ids=np.concatenate([p.ids for p in payloads]),
        side=np.stack([p.side for p in payloads]).astype(np.float32),
    )
    assert app.rescore(batch) == direct
    bonus, app.explore = app.explore, None
    plain = app.rescore(batch)
    assert direct[0] > plain[0] and direct[1] > plain[1]  # the bonus is on the model's scores too
    assert bonus is not None and direct[1] - plain[1] > direct[0] - plain[0]  # more for the new context


def test_novelty_falls_with_evidence_and_the_bonus_with_the_half_life():
    bonus = NoveltyBonus(16, weight=2.0, half_life=10)
    ids = [np.array([1, 2, 2], np.int32), np.array([3], np.int32), np.zeros(0, np.int32)]
    np.testing.assert_allclose(bonus.bonus_rows(ids), [2.0, 2.0, 2.0])  # nothing seen: β for all
    bonus.observe([np.array([1, 1, 2])] * 3)  # three instances hold features 1 and 2 (repeats count once)
    np.testing.assert_allclose(bonus.counts[[1, 2, 3]], [3, 3, 0])
    np.testing.assert_allclose(bonus.novelty(np.array([3, 1]), np.array([1, 2, 2, 3])), [0.5, 1.0])
    for _ in range(10):
        bonus.page_fetched()
    assert bonus.scale == pytest.approx(1.0)  # one half-life: β/2
    again = NoveltyBonus(16, weight=2.0, half_life=10)
    again.restore_arrays(bonus.state_arrays())
    np.testing.assert_array_equal(again.counts, bonus.counts)
    assert again.pages == 10
    with pytest.raises(ValueError, match="weight"):
        NoveltyBonus(16, weight=0.0)


def test_the_explore_variants_set_the_settings():
    assert split_strategy("apprentice:explore2") == ("apprentice", {"FOCUSED_APPRENTICE_EXPLORE": 2.0})
    name, settings = split_strategy("apprentice:explore0.5+halflife250")
    assert name == "apprentice"
    assert settings["FOCUSED_APPRENTICE_EXPLORE"] == 0.5
    assert settings["FOCUSED_APPRENTICE_EXPLORE_HALF_LIFE"] == 250.0


def test_checkpointed_state_keeps_the_evidence_counts():
    app = side_online(explore=1.0)
    learn_the_seen_context(app)
    again = side_online(explore=1.0)
    again.restore_arrays(app.state_arrays())
    assert again.explore is not None and app.explore is not None
    np.testing.assert_array_equal(again.explore.counts, app.explore.counts)
    payload = LinkPayload(np.array([1, 2], np.int32), np.zeros(2, np.float32))
    assert again.score([payload]) == app.score([payload])


def test_before_a_model_only_exploration_rescores_the_frontier():
    plain, app = side_online(), side_online(explore=1.0)
    for a in (plain, app):
        learn_the_seen_context(a)
    payloads = app.link_features("http://x.test/dept", HTML, 0.5, [], [SEEN, NEW])
    assert plain.rescore([[payloads[0]], [payloads[1]]]) == [None, None]  # the prior's priorities stand
    seen, new = app.rescore([[payloads[0]], [payloads[1]]])
    assert seen is not None and new is not None and new > seen
