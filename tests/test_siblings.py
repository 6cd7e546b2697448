import math

import numpy as np
import pytest

from focused.bench.runner import CrawlSpec, run_crawl
from focused.bench.suite import split_strategy
from focused.crawldb import iter_pages
from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.linkbatch import LinkBatch
from focused.learning.apprentice.online import OnlineApprentice
from focused.learning.apprentice.payload import LinkPayload
from focused.learning.apprentice.siblings import SiblingFeedback, source_tag
from focused.replay.server import ReplayServer
from tests.sites import HOST, neutral_hubs_site, train_critic


def anchor_critic(texts, urls):
    return np.full(len(texts), 0.3)


def side_online(siblings=0.0, **kw):
    learner = Apprentice(min_instances=4, binning="fixed", n_features=2**16, n_side=2)
    feedback = SiblingFeedback(siblings) if siblings else None
    return OnlineApprentice(learner, d_max=3, snippet_critic=anchor_critic, siblings=feedback, **kw)


def page(urls):
    return "<html><body>" + "".join(f'<p>see <a href="{u}">item</a></p>' for u in urls) + "</body></html>"


HUB, DULL = "http://x.test/hub", "http://x.test/dull"


def fetch_children(app, source, relevance, n=3, name="c"):
    """Fetch n children of ``source``, each judged ``relevance``; returns the payloads of two more, unfetched."""
    children = [f"{source}/{name}{i}" for i in range(n + 2)]
    payloads = app.link_features(source, page(children), 0.5, [], children)
    app.observe_links(children, payloads)
    for child in children[:n]:
        app.observe_page([child], relevance)
    return payloads[n:]


def test_the_term_follows_the_judged_children_of_the_source():
    s = SiblingFeedback(weight=1.0, pseudo_count=2.0)
    hub, dull, unknown = source_tag(HUB), source_tag(DULL), source_tag("http://x.test/other")
    assert s.term(np.array([hub])).tolist() == [0.0]  # nothing judged: no evidence either way
    for _ in range(3):
        s.observe([hub], 0.9)
        s.page_judged(0.9)
    for _ in range(9):
        s.observe([dull], 0.05)
        s.page_judged(0.05)
    hub_term, dull_term, none = s.term(np.array([hub, dull, unknown]))
    assert hub_term > 0 > dull_term and none == 0.0
    p = (3 * 0.9 + 9 * 0.05 + 0.5) / 13
    q = (2.7 + 2 * p) / 5  # three children and the pseudo-count m = 2 at the crawl's mean
    assert hub_term == pytest.approx(np.log(q / (1 - q)) - np.log(p / (1 - p)))
    stronger = SiblingFeedback(weight=2.0, pseudo_count=2.0)
    stronger.restore_arrays(s.state_arrays())  # the checkpoint keeps every count
    assert stronger.term(np.array([hub]))[0] == pytest.approx(2 * hub_term)
    assert 0 < source_tag(HUB) < 2**24 and float(np.float32(source_tag(HUB))) == source_tag(HUB)
    with pytest.raises(ValueError, match="weight"):
        SiblingFeedback(weight=0.0)


def test_a_hubs_waiting_links_rise_above_a_dull_pages_once_the_frontier_is_rescored():
    app = side_online(siblings=1.0)
    hub_waiting = fetch_children(app, HUB, 0.9)
    dull_waiting = fetch_children(app, DULL, 0.05)
    # the critic's views are the same for all four waiting links: the tag after them differs
    assert all(len(p.side) == 3 for p in hub_waiting + dull_waiting)
    np.testing.assert_allclose(hub_waiting[0].side[:2], dull_waiting[0].side[:2])
    assert hub_waiting[0].side[2] == np.float32(source_tag(HUB))
    hub_p, dull_p = app.rescore([[hub_waiting[0]], [dull_waiting[0]]])
    prior = app.prior(np.stack([hub_waiting[0].side[:2]]))[0]
    assert hub_p is not None and dull_p is not None and hub_p > dull_p
    assert app.score([hub_waiting[0]])[0] > prior > app.score([dull_waiting[0]])[0]
    # a waiting URL linked from both takes the better parent
    assert app.rescore([[dull_waiting[1], hub_waiting[1]]]) == [hub_p]
    # off: payloads carry the two views only and the prior's priorities stand
    plain = side_online()
    waiting = fetch_children(plain, HUB, 0.9)
    assert len(waiting[0].side) == 2 and plain.rescore([[waiting[0]]]) == [None]


def test_links_to_pages_judged_earlier_count_as_children_too():
    app = side_online(siblings=1.0)
    app.observe_page(["http://x.test/known"], 0.95)
    links = ["http://x.test/known", "http://x.test/new"]
    app.observe_links(links, app.link_features(HUB, page(links), 0.5, [], links))
    assert app.siblings is not None and app.siblings.term(np.array([source_tag(HUB)]))[0] > 0


def test_a_model_trains_and_rescores_on_tagged_payloads_as_from_a_link_batch():
    app = side_online(siblings=1.5)
    for i in range(3):
        fetch_children(app, f"http://x.test/good{i}", 0.9, name="g")
        fetch_children(app, f"http://x.test/bad{i}", 0.1, name="b")
    model = app.train(*app.take_batch())
    assert model is not None and model.n_side == 2  # the tag is no feature of the model
    app.install(model)
    waiting = fetch_children(app, HUB, 0.9) + fetch_children(app, DULL, 0.1)
    direct = app.rescore([[p] for p in waiting])
    batch = LinkBatch(
        entry_sizes=np.ones(len(waiting), dtype=np.int64),
        lengths=np.array([len(p.ids) for p in waiting]),
        ids=np.concatenate([p.ids for p in waiting]),
        side=np.stack([p.side for p in waiting]).astype(np.float32),
    )
    assert app.rescore(batch) == direct
    assert direct[0] > direct[2]  # the hub's waiting link over the dull page's, same context
    again = side_online(siblings=1.5)
    again.restore_arrays(app.state_arrays())
    again.install(model)
    assert again.rescore(batch) == direct
    assert LinkPayload.from_bytes(waiting[0].to_bytes()).side.tolist() == waiting[0].side.tolist()


def test_the_sibling_variants_set_the_settings():
    name, settings = split_strategy("apprentice:siblings1.5+pseudo4+refresh25+until0")
    assert name == "apprentice"
    assert settings == {
        "FOCUSED_APPRENTICE_SIBLINGS": 1.5,
        "FOCUSED_APPRENTICE_SIBLINGS_PSEUDO": 4.0,
        "FOCUSED_APPRENTICE_REFRESH_PAGES": 25,
        "FOCUSED_APPRENTICE_REFRESH_UNTIL": 0,
    }
    assert isinstance(settings["FOCUSED_APPRENTICE_REFRESH_PAGES"], int)


def test_the_crawlers_sibling_feedback_is_on_and_damped_by_default():
    from scrapy.settings import Settings

    from focused.core.runtime import CrawlRuntime

    settings = Settings({"FOCUSED_TOPIC": "course", "FOCUSED_STRATEGY": "apprentice"})
    settings.setmodule("focused.settings", priority="default")
    siblings = CrawlRuntime(settings).strategy.online.siblings
    assert siblings is not None and siblings.weight == 2.0 and siblings.spread_scale == 2.0


@pytest.fixture(scope="module")
def hubs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hubs")
    model = train_critic(tmp / "critic.npz")
    with ReplayServer(neutral_hubs_site()) as server:
        yield {"model": model, "proxy": server.proxy_url, "tmp": tmp}


def crawl(hubs, name, **settings):
    spec = CrawlSpec(
        name=name,
        topic="sport",
        strategy="apprentice",
        seeds=(HOST + "/",),
        model=hubs["model"],
        proxy=hubs["proxy"],
        db=hubs["tmp"] / f"{name}.sqlite",
        max_pages=33,  # home, two hubs and 30 of the 60 leaves
        settings={"FOCUSED_REPLAY_CONCURRENCY": 1, "FOCUSED_APPRENTICE_MIN_INSTANCES": 10**9, **settings},
    )
    result = run_crawl(spec, timeout=180)
    assert result.returncode == 0, result.log.read_text()[-3000:]
    return result, [p.url for p in iter_pages(spec.db)]


def test_a_crawl_with_sibling_feedback_turns_to_the_hub_whose_leaves_were_on_topic(hubs):
    _, plain = crawl(hubs, "plain", FOCUSED_APPRENTICE_SIBLINGS=0)
    result, fed = crawl(hubs, "siblings", FOCUSED_APPRENTICE_SIBLINGS=2.0, FOCUSED_APPRENTICE_REFRESH_PAGES=5)
    sport = [sum("/b/" in u and u.endswith(".html") for u in order) for order in (plain, fed)]
    # every leaf looks alike to the critic's views: without feedback the crawl fetches them in the
    # order found (the cooking hub's first); with it, the sport hub's leaves once a few were judged
    assert sport[1] >= sport[0] + 10
    assert result.stats["focused/apprentice/refreshes"] >= 4
    assert "sibling terms refreshed" in result.log.read_text()
    # on by default (γ = 2), damped by the anchors' spread, which is 0 here (every anchor "item i")
    _, default = crawl(hubs, "default", FOCUSED_APPRENTICE_REFRESH_PAGES=5)
    assert default == fed
    # refreshes stop after FOCUSED_APPRENTICE_REFRESH_UNTIL pages (later, retrains re-score)
    short, _ = crawl(hubs, "until", FOCUSED_APPRENTICE_REFRESH_PAGES=5, FOCUSED_APPRENTICE_REFRESH_UNTIL=12)
    assert short.stats["focused/apprentice/refreshes"] == 2


def test_the_spread_of_a_sources_anchors_damps_its_term():
    def tagged(url, anchor_logits):
        return [
            LinkPayload(np.zeros(1, np.int32), np.array([0.0, a, source_tag(url)], np.float32)) for a in anchor_logits
        ]

    terms = []
    for scale in (0.0, 1.0):
        s = SiblingFeedback(weight=1.0, spread_scale=scale)
        s.note_source(tagged(HUB, [-1.0, -1.0, -1.0, -1.0]))  # a list of alike anchors (names)
        s.note_source(tagged(DULL, [-4.0, 2.0, -1.0, 3.0]))  # anchors the critic tells apart
        for _ in range(3):
            for url in (HUB, DULL):
                s.observe([source_tag(url)], 0.9)
                s.page_judged(0.1)
        terms.append(s.term(np.array([source_tag(HUB), source_tag(DULL)])))
    (hub, dull), (hub_damped, dull_damped) = terms
    assert hub == pytest.approx(dull) and hub > 0  # the same children: the same term, undamped
    assert hub_damped == pytest.approx(hub)  # no spread: no damping
    spread = np.std([-4.0, 2.0, -1.0, 3.0])
    assert dull_damped == pytest.approx(dull / (1 + spread**2))


def test_the_anchor_spread_is_noted_per_source():
    s = SiblingFeedback(weight=2.0, spread_scale=2.0)
    a, b = source_tag("http://x.test/p"), source_tag("http://x.test/q")
    side = [np.array([0.0, z, t], dtype=np.float32) for z, t in [(1.0, a), (1.0, a), (-3.0, b), (3.0, b)]]
    s.note_source([LinkPayload(np.zeros(1, dtype=np.int32), x) for x in side])
    assert s._children[int(a)][3] == pytest.approx(0.0)
    assert s._children[int(b)][3] == pytest.approx(3.0)


def test_few_and_many_links_get_the_same_terms():
    s = SiblingFeedback(weight=2.0, pseudo_count=2.0, spread_scale=1.0)
    tags = [source_tag(f"http://x.test/p{i}") for i in range(50)]
    rng = np.random.default_rng(3)
    for tag in tags:
        s.note_source(
            [LinkPayload(np.zeros(1, np.int32), np.array([0.0, a, tag], np.float32)) for a in rng.normal(size=4)]
        )
        for _ in range(int(rng.integers(0, 4))):
            relevance = float(rng.random())
            s.observe([tag], relevance, np.array([rng.random()]))
            s.page_judged(relevance)
    few = np.array([*tags, -1.0])
    many = np.tile(few, 100)  # over the look-up limit: the sorted table
    assert len(many) > 4096
    np.testing.assert_allclose(s.term(many)[: len(few)], s.term(few))


def test_links_to_judged_pages_count_as_one_by_one():
    rng = np.random.default_rng(5)
    payloads = [
        LinkPayload(
            np.zeros(1, np.int32),
            np.array([rng.normal(), rng.normal(), source_tag(f"http://x.test/{i % 3}")], np.float32),
        )
        for i in range(12)
    ]
    relevances = rng.random(12).tolist()
    app = side_online(siblings=1.0)
    one, batch = SiblingFeedback(1.0), SiblingFeedback(1.0)
    for payload, relevance in zip(payloads, relevances, strict=True):
        one.observe_payloads([payload], relevance, app.prior)
    batch.observe_links_to_judged(payloads, relevances, app.prior)
    for key in ("siblings_tags", "siblings_counts"):
        np.testing.assert_allclose(batch.state_arrays()[key], one.state_arrays()[key])


@pytest.mark.parametrize("scale", [0.0, 0.7, 2.0])
def test_the_terms_of_a_pages_links_are_the_formula_to_the_bit(scale):
    """The look-up path computes each source's term in Python floats (a re-score's pieces take it for every
    source they hold): the same bits as the module docstring's formula written out, its damping computed as
    the sorted table's path computes it (NumPy)."""
    s = SiblingFeedback(weight=1.5, pseudo_count=2.0, spread_scale=scale)
    rng = np.random.default_rng(11)
    tags = rng.integers(0, 2**24, size=300)
    for tag in tags[:250].tolist():  # the last 50 sources have no judged child
        for _ in range(int(rng.integers(1, 5))):
            relevance = float(rng.random())
            s.observe([tag], relevance, [0.0])
            s.page_judged(relevance)
        s._children[tag][3] = float(rng.random() * 3)  # the spread of the source's anchor logits
    p = np.clip(np.float64((s.relevance_sum + 0.5) / (s.pages + 1)), 1e-3, 1 - 1e-3)
    expected = []
    for tag in tags.tolist():
        if tag not in s._children:
            expected.append(0.0)
            continue
        n, total, _, spread = (np.float64(x) for x in s._children[tag])
        q = np.clip((total + 2.0 * p) / (n + 2.0), 1e-3, 1 - 1e-3)
        damping = 1.0 / (1.0 + (np.array([spread]) / scale) ** 2) if scale > 0 else np.ones(1)
        expected.append(1.5 * ((math.log(q / (1 - q)) - math.log(p / (1 - p))) * damping[0]))
    got = s.term(tags.astype(np.float64))
    assert np.count_nonzero(got) == 250
    assert got.tobytes() == np.array(expected).tobytes()
