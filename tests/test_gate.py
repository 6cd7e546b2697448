import numpy as np
import pytest

from focused.learning.apprentice.gate import SwitchGate, fit_logistic_1d, log_loss
from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.online import OnlineApprentice

CONTEXT = '<div><h2>{h}</h2><ul><li><a href="{u}">item</a></li></ul></div>'


def test_logistic_fit_recovers_slope_and_intercept():
    rng = np.random.default_rng(0)
    z = rng.normal(size=5000)
    y = rng.random(5000) < 1 / (1 + np.exp(-(2 * z - 1)))
    a, b = fit_logistic_1d(z, y)
    assert a == pytest.approx(2, abs=0.2) and b == pytest.approx(-1, abs=0.2)
    a, b = fit_logistic_1d(np.array([-1.0, 1.0]), np.array([False, True]))  # separable: finite
    assert np.isfinite(a) and a > 0


def test_gate_opens_only_while_the_model_beats_the_prior_on_unseen_instances():
    rng = np.random.default_rng(1)
    z = rng.normal(size=400)
    rel = (rng.random(400) < 1 / (1 + np.exp(-3 * z))).astype(float)
    knows = np.where(rel > 0.5, 0.9, 0.1)  # a model that knows the labels
    gate = SwitchGate()
    # the first held-out batch only calibrates both scores
    assert not gate.validate(knows[:100], z[:100], rel[:100]) and gate.batches == 0
    # a model no better than a coin stays out
    assert not gate.validate(np.full(100, 0.5), z[100:200], rel[100:200]) and not gate.open
    # one that knows the labels comes in; then it turns useless, and the gate closes again
    assert gate.validate(knows[200:300], z[200:300], rel[200:300]) and gate.open
    assert gate.opened_at_batch == 2
    for _ in range(4):
        gate.validate(rng.random(100), z[300:], rel[300:])
    assert not gate.open and gate.loss_model > gate.loss_prior
    copy = SwitchGate()
    copy.restore(gate.state())
    assert copy.state() == gate.state()
    assert log_loss(np.array([0.5]), np.array([True])) == pytest.approx(np.log(2))


def flat_anchor_critic(texts, urls):
    return np.full(len(texts), 0.3)  # every anchor reads the same: the prior cannot tell links apart


def feed(app, start, n):
    for i in range(start, start + n):
        good, bad = f"http://x.test/g{i}", f"http://x.test/b{i}"
        html = "<html><body>" + CONTEXT.format(h="shop offers", u=bad) + CONTEXT.format(h="results", u=good)
        payloads = app.link_features(f"http://x.test/h{i}", html + "</body></html>", 0.5, [], [good, bad])
        app.observe_links([good, bad], payloads)
        app.observe_page([good], 0.95)
        app.observe_page([bad], 0.05)
    return app.train(*app.take_batch())


def test_gated_apprentice_serves_the_prior_until_its_held_out_loss_is_lower():
    learner = Apprentice(min_instances=4, binning="fixed", n_features=2**16, n_side=2)
    app = OnlineApprentice(learner, d_max=3, snippet_critic=flat_anchor_critic, gate=True)
    assert app.gate is not None
    model = feed(app, 0, 20)
    assert model is not None
    app.install(model)
    assert app.serving is None and not app.gate.open  # not validated yet: links keep the prior
    html = "<html><body>" + CONTEXT.format(h="results", u="http://x.test/n")
    payloads = app.link_features("http://x.test/new", html + "</body></html>", 0.5, [], ["http://x.test/n"])
    assert app.score(payloads) == pytest.approx(list(app.prior(np.stack([p.side for p in payloads]))))
    app.install(feed(app, 20, 20))  # the next batch is scored before it is learned; it calibrates both
    assert not app.gate.open
    app.install(feed(app, 40, 20))  # the one after decides: the context wins
    assert app.gate.open and app.gate_flipped and app.serving is not None
    assert app.score(payloads)[0] > 0.8
    # the gate survives a checkpoint of the crawl state
    again = OnlineApprentice(
        Apprentice(min_instances=4, binning="fixed", n_features=2**16, n_side=2),
        d_max=3, snippet_critic=flat_anchor_critic, gate=True,
    )  # fmt: skip
    again.restore_arrays(app.state_arrays())
    assert again.gate is not None and again.gate.state() == app.gate.state()


def test_without_a_gate_the_model_serves_as_soon_as_it_exists():
    learner = Apprentice(min_instances=4, binning="fixed", n_features=2**16, n_side=2)
    app = OnlineApprentice(learner, d_max=3, snippet_critic=flat_anchor_critic)
    assert app.gate is None
    app.install(feed(app, 0, 20))
    assert app.serving is app.model
