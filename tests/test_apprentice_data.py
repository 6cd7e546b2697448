"""Apprentice training data from crawl databases, the train-apprentice command and the feature study."""

from __future__ import annotations

import json

import numpy as np
import pytest

from focused.bench.studies.features import feature_study
from focused.bench.studies.linkcorpus import link_corpus
from focused.cli import main
from focused.crawldb import CrawlDB
from focused.learning.apprentice.data import fetch_key, instances_from_crawl, train_apprentice
from focused.learning.apprentice.features import compact, compact_many, extract_link_features
from focused.learning.apprentice.learner import Apprentice
from focused.learning.critic.naive_bayes import Critic
from focused.replay.load import open_store

N_FEATURES = 2**16
SITE = "http://www.cs.example.edu"


def hub_html(good: list[str], bad: list[str], words: tuple[str, ...], extra: str = "") -> str:
    """A page whose "recommended reading" list leads to good pages and "unrelated junk" list to bad ones."""
    good_items = "".join(f'<li><a href="{u}">{words[i % len(words)]} {i}</a></li>' for i, u in enumerate(good))
    bad_items = "".join(f'<li><a href="{u}">{words[i % len(words)]} {i}</a></li>' for i, u in enumerate(bad))
    return (
        "<html><body><p>Welcome to this page of our department</p>"
        f"<h2>recommended reading</h2><ul>{good_items}</ul>"
        "<p>filler one</p><p>filler two</p><p>filler three</p><p>filler four</p><p>filler five</p>"
        f"<h2>unrelated junk</h2><ul>{bad_items}</ul>{extra}</body></html>"
    )


def add(db: CrawlDB, url: str, order: int, relevance: float, html: str | None = "<p>leaf</p>") -> None:
    db.add_page(
        url=url,
        fetch_order=order,
        parent=None,
        depth=0,
        status=200,
        content_type="text/html",
        title="",
        relevance=relevance,
        predicted_class="course" if relevance >= 0.5 else "other",
        top_classes=("course", "student", "other") if relevance >= 0.5 else ("other", "staff", "course"),
        html=html,
    )


WORDS = ("alpha", "bravo", "charlie")


@pytest.fixture
def crawl(tmp_path):
    """Two hubs, three good and three bad pages; the expected (u, v) pairs."""
    path = tmp_path / "crawl.sqlite"
    db = CrawlDB(path, commit_every=1)
    db.set_meta(topic="course", strategy="baseline")
    hub1, hub2 = f"{SITE}/", f"{SITE}/people.html"
    goods = [f"{SITE}/g{i}.html" for i in range(3)]
    bads = [f"{SITE}/b{i}.html" for i in range(3)]
    # The crawler reached "/dir" through a redirect and stored the page as "/dir/"; hub1 links "/dir" and
    # hub2 "/dir/index.html". "/nowhere.html" was never fetched; hub2 also links to itself.
    dir_page = f"{SITE}/dir/"
    add(
        db,
        hub1,
        1,
        0.2,
        hub_html([*goods, f"{SITE}/dir"], bads, (*WORDS, "delta"), extra=f'<a href="{SITE}/nowhere.html">x</a>'),
    )
    add(db, hub2, 2, 0.2, hub_html([goods[0], f"{SITE}/dir/index.html"], bads[:2], WORDS, extra='<a href="">me</a>'))
    for i, url in enumerate(goods):
        add(db, url, 3 + i, 0.9)
    for i, url in enumerate(bads):
        add(db, url, 6 + i, 0.05)
    add(db, dir_page, 9, 0.95, html=None)  # a good target whose own HTML was not stored
    db.close()
    expected = {(hub1, g) for g in goods} | {(hub1, b) for b in bads} | {(hub1, dir_page)}
    expected |= {(hub2, goods[0]), (hub2, dir_page), (hub2, bads[0]), (hub2, bads[1])}
    return path, expected


def test_fetch_key_matches_redirect_and_index_variants():
    assert fetch_key(f"{SITE}/dir") == fetch_key(f"{SITE}/dir/") == fetch_key(f"{SITE}/dir/index.html")
    assert fetch_key(f"{SITE}/dir/index.htm") == fetch_key("HTTP://WWW.CS.EXAMPLE.EDU:80/dir")
    assert fetch_key(f"{SITE}/dir/a.html") != fetch_key(f"{SITE}/dir")
    assert fetch_key(f"{SITE}/q/?a=1") == fetch_key(f"{SITE}/q?a=1") != fetch_key(f"{SITE}/q")


def test_instances_are_the_links_with_both_ends_fetched(crawl):
    path, expected = crawl
    inst = instances_from_crawl(path, n_features=N_FEATURES)
    assert set(inst.pairs) == expected
    assert len(inst.pairs) == len(expected)  # one instance per pair
    assert len(inst.features) == len(inst.relevances) == len(inst)
    assert inst.topic == "course" and inst.pages == 9 and inst.pages_without_html == 1
    rel = dict(zip(inst.pairs, inst.relevances, strict=True))
    assert rel[(f"{SITE}/", f"{SITE}/dir/")] == pytest.approx(0.95)
    assert rel[(f"{SITE}/", f"{SITE}/b1.html")] == pytest.approx(0.05)
    # Features are the link's <t,d> features in u: the good list's heading is just left of g0's anchor.
    g0 = inst.features[inst.pairs.index((f"{SITE}/", f"{SITE}/g0.html"))]
    assert compact(["recommended@-1"], N_FEATURES)[0] in g0
    assert compact(["junk@-1"], N_FEATURES)[0] not in g0


def test_class_features_of_the_source_page_when_asked(crawl):
    path, _ = crawl
    cls_ids = set(compact_many([["cls:other"], ["cls:staff"], ["cls:"]], N_FEATURES)[i][0] for i in range(3))
    plain = instances_from_crawl(path, n_features=N_FEATURES)
    with_cls = instances_from_crawl(path, n_features=N_FEATURES, class_features=True)
    assert all(not cls_ids & set(f.tolist()) for f in plain.features)
    assert all(cls_ids <= set(f.tolist()) for f in with_cls.features)
    assert [len(b) - len(a) for a, b in zip(plain.features, with_cls.features, strict=True)] == [4] * len(plain)


def test_several_databases_add_up_and_mixed_topics_fail(crawl, tmp_path):
    path, expected = crawl
    assert len(instances_from_crawl([path, path], n_features=N_FEATURES)) == 2 * len(expected)
    other = tmp_path / "other.sqlite"
    db = CrawlDB(other)
    db.set_meta(topic="student")
    add(db, f"{SITE}/", 1, 0.5)
    db.close()
    with pytest.raises(ValueError, match="different topics"):
        instances_from_crawl([path, other])


def test_apprentice_ranks_a_good_region_link_above_a_bad_one_on_an_unseen_page(crawl):
    path, _ = crawl
    app = train_apprentice(path, n_features=N_FEATURES)
    assert isinstance(app, Apprentice) and app.binning == "equal-prob"
    assert app.feature_params == {
        "d_max": 5,
        "class_features": False,
        "offsets": True,
        "n_features": N_FEATURES,
        "topic": "course",
        "critic_views": False,
    }
    model = app.fit()
    new_good, new_bad = "http://other.example.org/x.html", "http://other.example.org/y.html"
    page = extract_link_features(
        hub_html([new_good], [new_bad], ("zulu",)), "http://other.example.org/", d_max=app.feature_params["d_max"]
    )
    p_good, p_bad = model.predict([page.features[page.urls.index(u)] for u in (new_good, new_bad)])
    assert p_good > p_bad + 0.2


def test_train_apprentice_fails_clearly_without_instances(tmp_path):
    path = tmp_path / "nohtml.sqlite"
    db = CrawlDB(path, store_html=False)
    add(db, f"{SITE}/", 1, 0.2, hub_html([f"{SITE}/g0.html"], [], WORDS))
    add(db, f"{SITE}/g0.html", 2, 0.9)
    db.close()
    with pytest.raises(ValueError, match="no page of 2 has stored HTML"):
        train_apprentice(path)


def test_train_apprentice_fails_clearly_with_one_bucket(crawl):
    path, _ = crawl
    with pytest.raises(ValueError, match="both buckets"):
        train_apprentice(path, binning="fixed", threshold=0.99, n_features=N_FEATURES)


def test_cli_writes_a_loadable_learner(crawl, tmp_path, capsys):
    path, expected = crawl
    out = tmp_path / "models" / "apprentice.npz"
    args = ["train-apprentice", "--from", str(path), "-o", str(out), "--d-max", "3", "--class-features"]
    assert main(args) == 1  # the database records no critic to read anchors with
    assert "records no critic" in capsys.readouterr().err
    code = main([*args, "--no-critic-views"])
    assert code == 0
    text = capsys.readouterr().out
    assert f"{len(expected)} instances" in text and "HIGH rate" in text and "training time" in text
    app = Apprentice.load(out)
    assert app.n_instances == len(expected)
    assert app.feature_params["d_max"] == 3 and app.feature_params["class_features"] is True
    assert app.n_side == 0
    assert not [p for p in out.parent.iterdir() if p.name != out.name]  # no temporary file left


def test_side_features_are_the_stored_parent_relevance_and_the_anchor_read_by_the_critic(crawl):
    path, expected = crawl
    seen = []

    def snippet(texts, urls):
        seen.extend(zip(texts, urls, strict=True))
        return np.array([0.9 if "alpha" in t else 0.2 for t in texts])

    inst = instances_from_crawl(path, n_features=N_FEATURES, snippet_critic=snippet)
    assert inst.side is not None and inst.side.shape == (len(expected), 2)
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    np.testing.assert_allclose(inst.side[:, 0], logit(0.2))  # both hubs were judged 0.2
    i = inst.pairs.index((f"{SITE}/", f"{SITE}/g0.html"))
    assert seen[i] == ("alpha 0", f"{SITE}/g0.html")  # read with the target's URL (cross-fitted critics)
    np.testing.assert_allclose(inst.side[i, 1], logit(0.9))
    app = train_apprentice(path, n_features=N_FEATURES, snippet_critic=snippet)
    assert app.n_side == 2 and app.feature_params["critic_views"] is True


def test_cli_reads_anchors_with_the_given_critic(crawl, tmp_path, capsys):
    path, _ = crawl
    texts = ["alpha bravo lecture syllabus"] * 5 + ["charlie delta people staff"] * 5
    critic = Critic.train(texts, ["course"] * 5 + ["other"] * 5, calibrate=False)
    model = critic.save(tmp_path / "critic.npz")
    out = tmp_path / "apprentice.npz"
    assert main(["train-apprentice", "--from", str(path), "-o", str(out), "--critic", str(model)]) == 0
    assert "critic views: weight" in capsys.readouterr().out
    assert Apprentice.load(out).n_side == 2
    assert main(["train-apprentice", "--from", str(path), "-o", str(out), "--critic", str(tmp_path / "no")]) == 1
    assert "critic" in capsys.readouterr().err


def test_cli_fails_clearly_on_missing_or_foreign_files(tmp_path, capsys):
    out = tmp_path / "a.npz"
    assert main(["train-apprentice", "--from", str(tmp_path / "missing.sqlite"), "-o", str(out)]) == 1
    assert "crawl database not found" in capsys.readouterr().err
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database at all, just some text " * 20)
    assert main(["train-apprentice", "--from", str(junk), "-o", str(out)]) == 1
    assert "not an SQLite crawl database" in capsys.readouterr().err
    assert not out.exists()


# ---------------------------------------------------------------------- the feature study

COLON = "\uf03a"


def webkb_file(root, label: str, uni: str, url: str, body: str) -> None:
    folder = root / "webkb" / label / uni
    folder.mkdir(parents=True, exist_ok=True)
    name = url.replace(":", COLON).replace("/", "^")
    (folder / name).write_text(f"Content-Type: text/html\n\n{body}", encoding="latin-1")


COURSE_TEXT = "course syllabus lecture homework exam assignments grading"
OTHER_TEXT = "photos hobbies travel music weather links"


@pytest.fixture
def archive(tmp_path):
    """Per university a department page listing course pages in one region and other pages in another."""
    root = tmp_path / "archive"
    for uni, host in (("cornell", "www.cs.cornell.edu"), ("texas", "www.cs.utexas.edu"), ("misc", "cs.misc.edu")):
        base = f"http://{host}"
        courses = [f"{base}/courses/c{i}.html" for i in range(4)]
        others = [f"{base}/~user{i}/" for i in range(4)]
        for i, url in enumerate(courses):
            webkb_file(root, "course", uni, url, f"<html><body><h1>CS {i}</h1><p>{COURSE_TEXT}</p></body></html>")
        for i, url in enumerate(others):
            webkb_file(root, "other", uni, url, f"<html><body><h1>Page {i}</h1><p>{OTHER_TEXT}</p></body></html>")
        linked_others = [u.rstrip("/") for u in others]  # "~user0" is answered by a redirect to "~user0/"
        webkb_file(
            root,
            "department",
            uni,
            f"{base}/",
            hub_html(courses, linked_others, ("intro", "systems", "theory", "graphics")),
        )
    return root


def test_smaller_windows_are_the_largest_window_filtered(archive):
    store = open_store(archive)
    corpus = link_corpus(store, d_max=4, n_features=N_FEATURES)
    assert len(corpus) == 3 * 8  # every department page -> its 4 course and 4 other pages (redirects followed)
    dept = corpus.urls.index("http://www.cs.cornell.edu/")
    resp = store.resolve("http://www.cs.cornell.edu/").response
    assert resp is not None
    for d in (0, 2, 4):
        direct = extract_link_features(resp.body, resp.url, d_max=d)
        plain = extract_link_features(resp.body, resp.url, d_max=d, offsets=False)
        offsets, texts = corpus.features(d, "offsets"), corpus.features(d, "plain")
        for i in np.flatnonzero(corpus.src == dept):
            target = corpus.urls[corpus.dst[i]]
            j = next(k for k, u in enumerate(direct.urls) if u.rstrip("/") == target.rstrip("/"))
            assert sorted(offsets[i]) == sorted(compact(direct.features[j], N_FEATURES))
            assert sorted(texts[i]) == sorted(compact(plain.features[j], N_FEATURES))


def test_feature_study_writes_its_three_reports(archive, tmp_path):
    out = tmp_path / "results"
    result = feature_study(
        archive, out, targets=("course",), universities=("cornell",), d_values=range(0, 3), n_features=N_FEATURES
    )
    for name in ("features.json", "features.md", "features.png"):
        assert (out / name).stat().st_size > 0
    assert (out / "cache" / "webkb" / "critic-webkb-without-cornell.npz").exists()
    saved = json.loads((out / "features.json").read_text())
    assert saved["fits"] == 1 * 1 * 2 * 2 * 3
    assert set(saved["summary"]["truth"]["offsets"]) == {"0", "1", "2"}
    assert {c["n_test"] for c in saved["cells"]} == {8}  # only the held-out university's links are tested
    # Links listed under "recommended reading" lead to course pages: with the heading in the window the
    # apprentice separates them perfectly on the held-out university.
    truth = result["summary"]["truth"]["offsets"]["2"]
    assert truth["auc"] == pytest.approx(1.0)
    assert truth["acc_low"] == 1.0
    assert result["label_balance"]["course"]["truth_high_rate"] == pytest.approx(0.5)
    table = (out / "features.md").read_text()
    assert "Fig. 6" in table and "Fig. 7" in table and "| course |" in table
