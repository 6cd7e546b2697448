import numpy as np
import pytest

from focused.learning.apprentice import Apprentice
from focused.learning.online import OnlineApprentice, page_key
from focused.priority import score_to_priority

GOOD = '<div><h2>results</h2><ul><li><a href="{g}">item</a></li></ul></div>'
BAD = '<div><h2>shop offers</h2><ul><li><a href="{b}">item</a></li></ul></div>'


def html(good, bad):
    return "<html><body>" + BAD.format(b=bad) + GOOD.format(g=good) + "</body></html>"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("http://X.test/dir/", "http://x.test/dir"),
        ("http://x.test/dir/index.html", "http://x.test/dir/"),
        ("http://x.test:80/a#frag", "http://x.test/a"),
        ("http://x.test/é b", "http://x.test/%C3%A9%20b"),
    ],
)
def test_page_key_treats_variants_alike(a, b):
    assert page_key(a) == page_key(b)


def test_page_key_keeps_distinct_pages_apart():
    assert page_key("http://x.test/a") != page_key("http://x.test/b")
    assert page_key("http://x.test/a?q=1") != page_key("http://x.test/a?q=2")


def online(**kw):
    return OnlineApprentice(Apprentice(min_instances=4, binning="fixed", n_features=2**16), d_max=3, **kw)


def test_links_become_instances_when_their_targets_are_judged():
    app = online(batch_size=3)
    u = "http://x.test/hub"
    links = ["http://x.test/good", "http://x.test/bad"]
    payloads = app.link_features(u, html(*links), ["sport"], links)
    assert len(payloads) == 2 and all(p.dtype == np.int32 and len(p) > 0 for p in payloads)
    app.observe_links(links, payloads)
    assert app.pending_links == 2
    assert app.observe_page(["http://x.test/good/"], 0.9) is False  # matched through its key
    assert app.pending_links == 1
    # a link to an already judged page is an instance at once
    app.observe_links(["http://x.test/good"], payloads[:1])
    assert app.observe_page(["http://x.test/bad"], 0.1) is False
    assert app.observe_page(["http://x.test/other"], 0.5) is True  # third page: the batch is complete
    feats, rels = app.take_batch()
    assert len(feats) == 3
    assert sorted(rels.tolist()) == [0.1, 0.9, 0.9]
    assert app.take_batch()[0] == []


def test_trains_scores_and_rescores_with_parent_aggregation():
    app = online(batch_size=1, aggregation="max")
    assert app.score([np.array([1, 2], dtype=np.int32)]) is None  # no model yet: callers use Pr(c*|u)
    for i in range(6):
        good, bad = f"http://x.test/g{i}", f"http://x.test/b{i}"
        payloads = app.link_features(f"http://x.test/h{i}", html(good, bad), [], [good, bad])
        app.observe_links([good, bad], payloads)
        app.observe_page([good], 0.95)
        app.observe_page([bad], 0.05)
    model = app.train(*app.take_batch())
    assert model is not None
    app.install(model)
    good, bad = "http://x.test/new-good", "http://x.test/new-bad"
    pg, pb = app.link_features("http://x.test/new", html(good, bad), [], [good, bad])
    scores = app.score([pg, pb])
    assert scores[0] > scores[1]
    # rescoring: the max over parents, and None (keep) for entries without features
    priorities = app.rescore([[pb, pg], [pb], [None], []])
    assert priorities[0] == score_to_priority(scores[0])
    assert priorities[1] == score_to_priority(scores[1])
    assert priorities[2] is None and priorities[3] is None


def test_frozen_apprentice_does_not_ask_for_training():
    app = online(batch_size=1, learn=False)
    assert app.observe_page(["http://x.test/a"], 0.9) is False
