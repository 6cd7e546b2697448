import numpy as np
import pytest

from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.online import OnlineApprentice
from focused.learning.apprentice.payload import LinkPayload, page_key
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
    payloads = app.link_features(u, html(*links), 0.5, ["sport"], links)
    assert len(payloads) == 2 and all(p.ids.dtype == np.int32 and len(p.ids) > 0 for p in payloads)
    assert all(p.side is None for p in payloads)  # no snippet critic: no side features
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


def test_links_waiting_for_their_targets_are_bounded_and_the_oldest_targets_go_first():
    app = online(batch_size=100, max_pending=10)
    for i in range(8):  # 8 pages of 2 links to targets never judged: 16 links, over the bound of 10
        links = [f"http://x.test/t{i}a", f"http://x.test/t{i}b"]
        app.observe_links(links, app.link_features(f"http://x.test/p{i}", html(*links), 0.5, [], links))
        assert app.pending_links <= 10
    # at 12 links (page 6) the three oldest went (t0a, t0b, t1a: down to 9), at 11 (pages 7 and 8) two each
    assert (app.pending_links, app.pending_dropped) == (9, 7)
    app.observe_page(["http://x.test/t0a"], 0.9)  # dropped: its link is no instance
    app.observe_page(["http://x.test/t7b"], 0.9)  # kept: an instance
    feats, rels = app.take_batch()
    assert len(feats) == 1 and rels.tolist() == [0.9]
    unbounded = online(batch_size=100)
    for i in range(8):
        links = [f"http://x.test/t{i}a", f"http://x.test/t{i}b"]
        unbounded.observe_links(links, unbounded.link_features(f"http://x.test/p{i}", html(*links), 0.5, [], links))
    assert (unbounded.pending_links, unbounded.pending_dropped) == (16, 0)


def test_trains_scores_and_rescores_with_parent_aggregation():
    app = online(batch_size=1, aggregation="max")
    assert app.score([LinkPayload(np.array([1, 2], dtype=np.int32))]) is None  # no model yet: callers use Pr(c*|u)
    for i in range(6):
        good, bad = f"http://x.test/g{i}", f"http://x.test/b{i}"
        payloads = app.link_features(f"http://x.test/h{i}", html(good, bad), 0.5, [], [good, bad])
        app.observe_links([good, bad], payloads)
        app.observe_page([good], 0.95)
        app.observe_page([bad], 0.05)
    model = app.train(*app.take_batch())
    assert model is not None
    app.install(model)
    good, bad = "http://x.test/new-good", "http://x.test/new-bad"
    pg, pb = app.link_features("http://x.test/new", html(good, bad), 0.5, [], [good, bad])
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


def anchor_critic(texts, urls):
    """A stand-in critic of anchor texts: 'match' reads as on topic."""
    assert len(texts) == len(urls)
    return np.array([0.9 if "match" in t else 0.1 for t in texts])


def side_online(**kw):
    learner = Apprentice(min_instances=4, binning="fixed", n_features=2**16, n_side=2)
    return OnlineApprentice(learner, d_max=3, snippet_critic=anchor_critic, **kw)


def page(links_with_anchors):
    body = "".join(f'<p>the same words <a href="{u}">{a}</a> around</p>' for u, a in links_with_anchors)
    return f"<html><body>{body}</body></html>"


def test_side_features_are_the_critics_views_of_page_and_anchor():
    app = side_online(anchor_weight=0.5)
    links = ["http://x.test/a", "http://x.test/b", "http://x.test/unseen"]
    payloads = app.link_features(
        "http://x.test/u", page([(links[0], "match report"), (links[1], "shop")]), 0.8, [], links
    )
    sides = np.stack([p.side for p in payloads])
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    np.testing.assert_allclose(sides[:, 0], logit(0.8), rtol=1e-5)
    np.testing.assert_allclose(sides[:, 1], logit(np.array([0.9, 0.1, 0.1])), rtol=1e-5)  # unseen link: empty anchor
    # before a model: the blend of the two views, so the matching anchor leads
    scores = app.score(payloads)
    assert scores is not None
    assert scores[0] == pytest.approx(1 / (1 + np.exp(-(0.5 * logit(0.8) + 0.5 * logit(0.9)))))
    assert scores[0] > scores[1] == pytest.approx(scores[2])


def test_stacking_learns_to_trust_the_anchor_when_the_context_says_nothing():
    app = side_online(batch_size=1)
    rng = np.random.default_rng(0)
    for i in range(40):
        good, bad = f"http://x.test/g{i}", f"http://x.test/b{i}"
        anchors = [(good, "match"), (bad, "shop")] if rng.random() < 0.5 else [(bad, "shop"), (good, "match")]
        payloads = app.link_features(f"http://x.test/h{i}", page(anchors), 0.5, [], [u for u, _ in anchors])
        app.observe_links([u for u, _ in anchors], payloads)
        app.observe_page([good], 0.95)
        app.observe_page([bad], 0.05)
    model = app.train(*app.take_batch())
    assert model is not None and model.n_side == 2
    assert model.side_weights[1] > 0  # the anchor's view carries the signal
    app.install(model)
    links = ["http://x.test/new-good", "http://x.test/new-bad"]
    pg, pb = app.link_features("http://x.test/new", page([(links[1], "shop"), (links[0], "match")]), 0.5, [], links)
    good_score, bad_score = app.score([pg, pb])
    assert good_score > 0.8 > 0.2 > bad_score
    # a model with side features refuses payloads without them
    with pytest.raises(ValueError, match="side features"):
        app.rescore([[LinkPayload(pg.ids)]])


def test_side_features_need_a_snippet_critic():
    with pytest.raises(ValueError, match="snippet critic"):
        OnlineApprentice(Apprentice(n_side=2))


def test_anchor_weight_must_be_a_fraction():
    with pytest.raises(ValueError, match="anchor_weight"):
        side_online(anchor_weight=1.5)


def test_link_payloads_round_trip_as_bytes_and_damage_is_refused():
    import numpy as np

    from focused.learning.apprentice.payload import LinkPayload

    with_side = LinkPayload(np.array([3, 1, 4, 1], np.int32), np.array([0.25, -2.0], np.float32))
    for payload in (with_side, LinkPayload(np.zeros(0, np.int32))):
        back = LinkPayload.from_bytes(payload.to_bytes())
        assert back.ids.tolist() == payload.ids.tolist()
        assert (back.side is None) == (payload.side is None)
        if payload.side is not None:
            assert back.side.tolist() == payload.side.tolist()
    data = with_side.to_bytes()
    for damaged in (b"", data[:3], data[:-1], data + b"\x00"):
        with pytest.raises(ValueError):
            LinkPayload.from_bytes(damaged)


def test_store_payloads_keep_sorted_ids_as_gaps_and_anything_else_as_written():
    import numpy as np

    from focused.frontier.payloads import decode_payload, encode_payload
    from focused.learning.apprentice.payload import LinkPayload

    side = np.array([0.25, -2.0], np.float32)
    cases = [
        LinkPayload(np.array([1, 1, 4, 60_000, 125_000], np.int32), side),  # sorted, repeats, gaps < 65,536
        LinkPayload(np.array([3, 1, 4], np.int32), side),  # unsorted: written as is
        LinkPayload(np.array([5, 200_000], np.int32)),  # a gap over 65,535
        LinkPayload(np.zeros(0, np.int32)),
    ]
    for payload in cases:
        data = encode_payload(payload)
        back = decode_payload(data)
        assert isinstance(back, LinkPayload) and back.ids.dtype == np.int32
        assert back.ids.tolist() == payload.ids.tolist()
        assert (back.side is None) == (payload.side is None)
        if payload.side is not None:
            assert back.side.tolist() == payload.side.tolist()
    compact, plain = encode_payload(cases[0]), b"L" + cases[0].to_bytes()
    assert compact[:1] == b"D" and len(compact) < len(plain)
    assert encode_payload(cases[1])[:1] == b"L" and encode_payload(cases[2])[:1] == b"L"
    assert decode_payload(plain).ids.tolist() == cases[0].ids.tolist()  # stores written before still read
    for damaged in (compact[:4], compact[:-1], compact + b"\x00"):
        with pytest.raises(ValueError):
            decode_payload(damaged)
    assert decode_payload(encode_payload({"a": 1})) == {"a": 1} and decode_payload(encode_payload(b"x")) == b"x"


def test_payloads_decoded_in_one_batch_equal_those_decoded_one_by_one():
    import numpy as np

    from focused.frontier.payloads import decode_payload, decode_payloads, encode_payload
    from focused.learning.apprentice.payload import LinkPayload

    rng = np.random.default_rng(3)
    payloads = [
        LinkPayload(np.zeros(0, np.int32), np.array([0.5, 1.5], np.float32)),  # empty, first
        *(
            LinkPayload(
                np.sort(rng.integers(0, 2**20, size=int(n))).astype(np.int32), rng.normal(size=2).astype(np.float32)
            )
            for n in rng.integers(1, 200, size=30)
        ),
        LinkPayload(np.array([7, 7, 9], np.int32)),  # no side features
        {"a": 1},
        b"raw",
        LinkPayload(np.array([3, 1, 4], np.int32)),  # unsorted: the uncompact kind
        LinkPayload(np.zeros(0, np.int32)),  # empty, last
    ]
    blobs = [encode_payload(p) for p in payloads]
    batch, single = decode_payloads(blobs), [decode_payload(b) for b in blobs]
    assert len(batch) == len(single)
    for a, b in zip(batch, single, strict=True):
        if isinstance(b, LinkPayload):
            assert a.ids.dtype == b.ids.dtype == np.int32 and a.ids.tolist() == b.ids.tolist()
            assert (a.side is None and b.side is None) or a.side.tolist() == b.side.tolist()
        else:
            assert a == b
    assert decode_payloads([]) == []
    with pytest.raises(ValueError):
        decode_payloads([blobs[1], blobs[2][:-1]])


def test_a_resumed_apprentice_keeps_the_crawls_bound_on_its_instances(tmp_path):
    from focused.learning.apprentice.checkpoint import load_checkpoint, save_checkpoint

    app = online(batch_size=100)
    app.learner.add([np.array([1, 2, 3], dtype=np.int32)] * 6, [0.1, 0.9, 0.1, 0.9, 0.1, 0.9])
    save_checkpoint(tmp_path, app, None)  # written by a crawl without a bound
    resumed = online(batch_size=100)
    resumed.learner.limit(5)
    load_checkpoint(tmp_path, resumed)
    assert resumed.learner.n_instances == 6 and resumed.learner.max_instances == 5
    resumed.learner.add([np.array([4], dtype=np.int32)], [0.9])  # the next add applies it
    assert resumed.learner.n_instances == 4 and resumed.learner.dropped == 3


def test_a_page_is_encoded_once_for_the_frontier_and_the_apprentices_pending_links():
    """The apprentice strategy encodes a page's payloads once: the frontier's bytes are ``encode_payloads``'s,
    and the links kept until their targets are judged hold the same bytes as when the apprentice encoded them."""
    from types import SimpleNamespace

    from focused.frontier.payloads import encode_payloads
    from focused.strategies.apprentice import ApprenticeStrategy
    from focused.strategies.base import FetchedPage

    links = [f"http://x.test/{name}" for name in ("a", "b", "c", "d")]
    body = html(links[0], links[1]) + html(links[2], links[3])
    page = FetchedPage("http://x.test/hub", 0, SimpleNamespace(parent_view=0.5, top_classes=[]), body)
    strategy = ApprenticeStrategy(online(), "apprentice")
    strategy.online.observe_page(["http://x.test/b"], 0.9)  # b's target judged: an instance, not kept pending
    scored = strategy.score(page, links)
    assert scored.blobs == encode_payloads(scored.payloads)
    alone = online()
    alone.observe_page(["http://x.test/b"], 0.9)
    alone.observe_links(links, scored.payloads)  # encoding them itself
    assert strategy.online._pending == alone._pending and len(alone._pending) == 3
