"""Tests for the Wikispeedia benchmark: reader, taxonomy, rendered site, cross-fitted critic, seeds."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest

from focused.cli import main as cli_main
from focused.corpora.wikispeedia import WikispeediaError, load_wikispeedia
from focused.learning.critic.crossfit import CrossFitCritic, fold_of
from focused.learning.critic.load import load_critic
from focused.learning.critic.naive_bayes import Critic
from focused.replay.labels import read_labels
from focused.replay.load import open_store
from focused.replay.urlnorm import normalize_url
from focused.replay.warc import iter_warc
from focused.wiki import render
from focused.wiki.build import WikiTrack, prepare_wiki_track
from focused.wiki.graph import reachable_from, read_link_graph, seed_articles
from focused.wiki.taxonomy import article_classes, build_taxonomy
from focused.wiki.web import build_wiki_web
from tests.require import require_corpus

# name (URL-encoded as in the corpus), title, categories, body
ARTICLES = [
    (
        "Physics",
        "Physics",
        ["Science.Physics.General_Physics"],
        "Physics is the study of matter and energy. Astrophysics is not the\n   same thing.\n\n"
        "   Physics relates to CHEMISTRY, and to chemistry again.\n\n   Tables use <b> & such.",
    ),
    (
        "Chemistry",
        "Chemistry",
        ["Science.Chemistry.General_Chemistry"],
        "Chemistry studies compounds. Astrophysics differs; physics helps chemistry.",
    ),
    (
        "Mercury_%28planet%29",
        "Mercury (planet)",
        ["Science.Physics.The_Planets"],
        "Mercury is the innermost planet. Physics explains its orbit.",
    ),
    (
        "Astronomy",
        "Astronomy",
        ["Science.Physics.Space_Astronomy"],
        "Astronomy observes Mercury and other planets using physics.",
    ),
    ("Science", "Science", ["Science"], "Science is knowledge. Physics and chemistry are sciences."),
    (
        "%C3%85land",
        "Åland",
        ["Countries", "Geography.European_Geography.European_Countries"],
        "Åland is a group of islands. Nobody studies physics there.",
    ),
    ("AT%26T", "AT&T", ["Business_Studies.Companies"], "AT&T is a company <with> brackets & ampersands."),
    ("Pikachu", "Pikachu", [], "Pikachu is a fictional creature."),
]
LINKS = [
    ("Physics", "Chemistry"),
    ("Physics", "Astronomy"),
    ("Physics", "Mercury_%28planet%29"),
    ("Chemistry", "Physics"),
    ("Mercury_%28planet%29", "Physics"),
    ("Astronomy", "Mercury_%28planet%29"),
    ("Astronomy", "Physics"),
    ("Science", "Physics"),
    ("Science", "Chemistry"),
    ("%C3%85land", "Physics"),
    ("AT%26T", "Pikachu"),
    ("Physics", "Physics"),
]


def _plaintext(title: str, body: str) -> str:
    return (
        f"   #copyright\n\n{title}\n\n2007 Schools Wikipedia Selection. Related subjects: Secret\n"
        f'Labels\n\n   {body}\n\n   Retrieved from " http://en.wikipedia.org/wiki/{title}"\n'
        "   This reference article is mainly selected from the English Wikipedia\n"
    )


def make_corpus(root: Path, articles=ARTICLES, links=LINKS) -> Path:
    """Write a tiny corpus in the Wikispeedia layout; return its .tar.gz."""
    base = root / "wikispeedia"
    (base / "plaintext_articles").mkdir(parents=True)
    for name, title, _, body in articles:
        (base / "plaintext_articles" / f"{name}.txt").write_text(_plaintext(title, body), encoding="utf-8")
    header = "# comment line\n\n"
    (base / "articles.tsv").write_text(header + "".join(f"{a[0]}\n" for a in articles))
    (base / "links.tsv").write_text(header + "".join(f"{s}\t{t}\n" for s, t in links))
    cats = "".join(f"{a[0]}\tsubject.{c}\n" for a in articles for c in a[2])
    (base / "categories.tsv").write_text(header + cats)
    archive = root / "wikispeedia.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(base, arcname="wikispeedia")
    return archive


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    return make_corpus(tmp_path / "corpus")


# ---------------------------------------------------------------------- reader


def test_reader_decodes_names_strips_boilerplate_and_reads_both_layouts(archive: Path) -> None:
    wiki = load_wikispeedia(archive)
    assert list(wiki.articles) == [
        "Physics",
        "Chemistry",
        "Mercury_(planet)",
        "Astronomy",
        "Science",
        "Åland",
        "AT&T",
        "Pikachu",
    ]
    assert wiki.articles["Mercury_(planet)"].title == "Mercury (planet)"
    text = wiki.articles["Physics"].text
    assert text.lstrip().startswith("Physics is the study")
    assert "Related subjects" not in text and "Secret" not in text and "Retrieved from" not in text
    assert wiki.links["Physics"] == ["Chemistry", "Astronomy", "Mercury_(planet)"]  # self-link dropped
    assert wiki.categories["Åland"] == ["Countries", "Geography.European_Geography.European_Countries"]
    assert wiki.categories["Pikachu"] == []
    assert sorted(wiki.in_links()["Physics"]) == ["Astronomy", "Chemistry", "Mercury_(planet)", "Science", "Åland"]
    folder = load_wikispeedia(archive.parent)
    assert folder.articles == wiki.articles and folder.links == wiki.links


def test_reader_errors(tmp_path: Path) -> None:
    with pytest.raises(WikispeediaError, match="not found"):
        load_wikispeedia(tmp_path / "missing.tar.gz")
    (tmp_path / "empty").mkdir()
    with pytest.raises(WikispeediaError, match="not a Wikispeedia archive"):
        load_wikispeedia(tmp_path / "empty")
    (tmp_path / "bad.tar.gz").write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(WikispeediaError, match="cannot read"):
        load_wikispeedia(tmp_path / "bad.tar.gz")


# ---------------------------------------------------------------------- taxonomy


def test_taxonomy_levels_other_leaves_and_merging() -> None:
    cats = {
        "p1": ["Science.Physics.The_Planets"],
        "p2": ["Science.Physics"],
        "c1": ["Science.Chemistry.Elements", "Science.Physics.General"],  # two classes
        "s": ["Science"],  # filed directly under an internal subject
        "m": ["Mathematics"],  # a top-level leaf
        "a": ["Art.Artists"],
    }
    tax = build_taxonomy(cats)
    assert tax.classes_of(cats["p1"]) == ["Science.Physics"]
    assert tax.classes_of(cats["c1"]) == ["Science.Chemistry", "Science.Physics"]
    assert tax.classes_of(cats["s"]) == ["Science.Other"]
    assert tax.classes_of(cats["m"]) == ["Mathematics"]
    assert tax.sizes == {
        "Art.Artists": 1,
        "Mathematics": 1,
        "Science.Chemistry": 1,
        "Science.Other": 1,
        "Science.Physics": 3,
    }
    assert article_classes(["Science"]) == ["Science"]  # without the tree, a short path is a leaf
    assert article_classes(["Science"], tax) == ["Science.Other"]
    assert build_taxonomy(cats, level=1).classes == ["Art", "Mathematics", "Science"]
    merged = build_taxonomy(cats, min_size=2)
    assert merged.classes_of(cats["c1"]) == ["Science.Other", "Science.Physics"]
    assert merged.classes_of(cats["a"]) == ["Art.Other"]
    assert merged.sizes["Science.Other"] == 2 and "Mathematics" in merged.sizes  # top level never merged


# ---------------------------------------------------------------------- rendering


def test_render_places_links_on_anchor_text_and_the_rest_in_see_also(archive: Path) -> None:
    wiki = load_wikispeedia(archive)
    site = render.Site.from_corpus(wiki)
    page = render.render_article(site, wiki.articles["Physics"], wiki.links["Physics"]).decode()
    assert "<h1>Physics</h1>" in page and "<title>Physics - Wikipedia for Schools</title>" in page
    # first case-insensitive occurrence, as written in the text; only once
    assert 'relates to <a href="/wiki/Chemistry">CHEMISTRY</a>, and to chemistry again.' in page
    assert page.count('href="/wiki/Chemistry"') == 1
    # the disambiguation is dropped from the anchor; "Astronomy" never occurs in the text
    see_also = page.split("<h2>See also</h2>")[1]
    assert '<a href="/wiki/Astronomy">Astronomy</a>' in see_also
    assert '<a href="/wiki/Mercury_(planet)">Mercury (planet)</a>' in see_also  # "Mercury" not in text
    assert "Tables use &lt;b&gt; &amp; such." in page
    astro = render.render_article(site, wiki.articles["Astronomy"], wiki.links["Astronomy"]).decode()
    assert 'observes <a href="/wiki/Mercury_(planet)">Mercury</a> and' in astro
    assert 'using <a href="/wiki/Physics">physics</a>.' in astro
    assert "See also" not in astro
    # word boundaries: "physics" inside "Astrophysics" is not a link
    chem = render.render_article(site, wiki.articles["Chemistry"], wiki.links["Chemistry"]).decode()
    assert 'Astrophysics differs; <a href="/wiki/Physics">physics</a> helps' in chem
    att = render.render_article(site, wiki.articles["AT&T"], wiki.links["AT&T"]).decode()
    assert "<h1>AT&amp;T</h1>" in att and "&lt;with&gt; brackets &amp; ampersands" in att
    # navigation: main page, one portal per subject, about; footer
    nav = re.findall(r'<li><a href="([^"]+)">', page.split('<div id="content">')[0])
    assert nav == [
        "/",
        "/portal/Business_Studies",
        "/portal/Countries",
        "/portal/Geography",
        "/portal/Science",
        "/about",
    ]
    # deterministic: same bytes twice
    again = render.render_article(
        render.Site.from_corpus(load_wikispeedia(archive)), wiki.articles["Physics"], wiki.links["Physics"]
    )
    assert again == page.encode()


def test_place_links_longest_anchor_wins_and_shared_anchors_take_turns() -> None:
    titles = {
        "U": "United",
        "UK": "United Kingdom",
        "K": "Kingdom",
        "M1": "Mercury (planet)",
        "M2": "Mercury (element)",
        "X": "Xenon",
    }
    spans, rest = render.place_links(
        ["The United Kingdom, a kingdom, united.", "Mercury and mercury."],
        ["U", "K", "UK", "M1", "M2", "X"],
        titles,
    )
    # "United Kingdom" beats "United" at position 4 and covers "Kingdom"
    assert spans == [[(4, 18, "UK"), (22, 29, "K"), (31, 37, "U")], [(0, 7, "M1"), (12, 19, "M2")]]
    assert rest == ["X"]


# ---------------------------------------------------------------------- the built web


def test_build_web_writes_readable_warc_labels_and_graph_and_is_idempotent(archive: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    web = build_wiki_web(archive, out)
    assert web.built and web.articles == 8
    pages = {r.url: r for r in iter_warc(web.warc)}
    art = render.article_url
    assert art("Mercury_(planet)") == "http://wikischools.test/wiki/Mercury_(planet)"
    assert art("Åland") == "http://wikischools.test/wiki/%C3%85land"
    expected = {
        render.MAIN_URL,
        render.ABOUT_URL,
        render.BASE_URL + "/robots.txt",
        *(render.portal_url(s) for s in ["Business_Studies", "Countries", "Geography", "Science"]),
        *(art(n) for n in load_wikispeedia(archive).articles),
    }
    assert set(pages) == expected and web.pages == len(expected) - 1  # robots.txt has no label
    assert all(normalize_url(url) == url for url in pages)
    mercury = pages[art("Mercury_(planet)")]
    assert mercury.status == 200 and mercury.header("Content-Type") == "text/html; charset=utf-8"
    assert b'<a href="/wiki/Physics">Physics</a>' in mercury.body
    labels, groups = read_labels(web.labels)
    assert labels[art("Åland")] == "Countries|Geography.European_Geography.European_Countries"
    assert groups[art("Åland")] == "Countries"
    assert labels[art("Pikachu")] == "Uncategorised" and labels[render.portal_url("Science")] == "Navigation"
    assert read_link_graph(web.links)[art("Physics")] == [art("Chemistry"), art("Astronomy"), art("Mercury_(planet)")]
    store = open_store(web.warc, labels=web.labels)
    assert store.label_of(art("Mercury_(planet)")) == "Science.Physics.The_Planets"
    # up to date: not rebuilt; force rebuilds
    mtime = web.warc.stat().st_mtime_ns
    again = build_wiki_web(archive, out)
    assert not again.built and again.pages == web.pages and web.warc.stat().st_mtime_ns == mtime
    assert build_wiki_web(archive, out, force=True).built
    manifest = out / "wiki.web.json"
    manifest.write_text(manifest.read_text().replace('"version": 1', '"version": 0'))
    assert build_wiki_web(archive, out).built  # built by another version of the renderer


def test_seeds_rule_counts_in_topic_in_links_with_ties_by_name(archive: Path) -> None:
    wiki = load_wikispeedia(archive)
    # in-topic (Science.Physics) in-links: Physics 2 (Mercury, Astronomy), Mercury 2 (Physics, Astronomy),
    # Astronomy 1 (Physics); Chemistry/Science/Åland links to Physics do not count
    assert seed_articles(wiki, "Science.Physics") == ["Mercury_(planet)", "Physics", "Astronomy"]
    assert seed_articles(wiki, "Science", n=2) == ["Physics", "Chemistry"]
    assert seed_articles(wiki, "Countries") == ["Åland"]
    graph = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}
    assert reachable_from(["b"], graph) == {"a", "b", "c"}


# ---------------------------------------------------------------------- cross-fitting


def _fold_urls(k: int, n: int) -> dict[int, list[str]]:
    urls: dict[int, list[str]] = {f: [] for f in range(k)}
    i = 0
    while min(map(len, urls.values())) < n:
        url = f"http://wikischools.test/wiki/P{i}"
        urls[fold_of(url, k)].append(url)
        i += 1
    return urls


def test_crossfit_judges_a_page_with_the_model_that_did_not_train_on_it(tmp_path: Path) -> None:
    k = 3
    urls = _fold_urls(k, 6)
    texts, labels, page_urls = [], [], []
    for f in range(k):
        for j, url in enumerate(urls[f][:6]):
            cls = "Sci.Bio" if j < 2 else "Geo.Land"  # Geo.Land is the bigger class: the prior favours it
            texts.append("cell gene protein" if cls == "Sci.Bio" else "river mountain valley")
            labels.append(cls)
            page_urls.append(url)
    # the probe: labelled Sci.Bio, made of a word no other page has
    probe = "http://wikischools.test/wiki/Probe"
    texts.append("zyzzyva zyzzyva zyzzyva")
    labels.append("Sci.Bio")
    page_urls.append(probe)
    critic = CrossFitCritic.train(texts, labels, page_urls, k=k, calibrate=False)
    topic = critic.resolve_topic("Sci")
    home = fold_of(probe, k)
    # a model that trained on the probe calls it Sci.Bio; its held-out model falls back on the prior
    for f, model in enumerate(critic.folds):
        assert model.predict([texts[-1]]) == (["Geo.Land"] if f == home else ["Sci.Bio"])
    verdict = critic.judge(texts[-1], topic, url=probe)
    assert verdict.predicted_class == "Geo.Land" and verdict.relevance < 0.5
    assert critic.judge(texts[-1], topic, url=probe + "#frag").relevance == verdict.relevance
    full = Critic.train(texts, labels, calibrate=False)
    assert full.judge(texts[-1], full.resolve_topic("Sci")).relevance > 0.5
    # without a URL: the mean over folds (k-1 of which trained on the probe)
    assert critic.judge(texts[-1], topic).relevance > 0.5
    # batch methods agree with judge
    rel = critic.relevance([texts[-1], texts[0]], topic, urls=[probe, page_urls[0]])
    assert rel[0] == pytest.approx(verdict.relevance) and rel[1] > 0.5
    # an anchor text is read by the fold blind to the link's target, as the target itself would be
    anchor = critic.snippet_relevance(["zyzzyva"], topic, urls=[probe])
    assert anchor[0] < 0.5 < critic.folds[(home + 1) % k].snippet_relevance(["zyzzyva"], topic)[0]
    # save / load through load_critic
    critic.examples = {"Sci.Bio": [probe]}
    path = critic.save(tmp_path / "cf.npz")
    loaded = load_critic(path)
    assert isinstance(loaded, CrossFitCritic) and loaded.k == k and loaded.classes == ["Geo.Land", "Sci.Bio"]
    assert loaded.judge(texts[-1], loaded.resolve_topic("Sci"), url=probe) == verdict
    assert loaded.examples == {"Sci.Bio": [probe]} and loaded.topics() == ["Geo", "Geo.Land", "Sci", "Sci.Bio"]


def test_crossfit_fold_model_missing_a_class_gives_it_zero() -> None:
    urls = _fold_urls(2, 5)
    texts = ["aa bb"] * 4 + ["cc dd"] * 4 + ["ee ff"]
    labels = ["A"] * 4 + ["B"] * 4 + ["C"]
    page_urls = urls[0][:2] + urls[1][:2] + urls[0][2:4] + urls[1][2:4] + [urls[0][4]]
    critic = CrossFitCritic.train(texts, labels, page_urls, k=2, calibrate=False)
    assert critic.folds[0].classes == ["A", "B"] and critic.classes == ["A", "B", "C"]
    post = critic.posteriors(["ee ff"], [urls[0][4]])
    assert post.shape == (1, 3) and post[0, 2] == 0.0 and post.sum() == pytest.approx(1.0)


# ---------------------------------------------------------------------- track and CLI


def test_prepare_track_and_cli(archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "track"
    track = prepare_wiki_track(out, archive, topics=("Science.Physics", "Countries"))
    assert isinstance(track, WikiTrack)
    assert track.seeds["Science.Physics"] == [
        render.article_url(n) for n in ["Mercury_(planet)", "Physics", "Astronomy"]
    ]
    critic = load_critic(track.critic)
    assert isinstance(critic, CrossFitCritic) and critic.k == 5
    assert critic.examples["Science.Physics"] == track.seeds["Science.Physics"]
    assert critic.resolve_topic("Science.Other").classes == ("Science.Other",)
    mtime = track.critic.stat().st_mtime_ns
    assert prepare_wiki_track(out, archive, topics=("Science.Physics", "Countries")) == track
    assert track.critic.stat().st_mtime_ns == mtime
    assert cli_main(["build-wiki", "--archive", str(archive), "--out", str(tmp_path / "cli"), "--web-only"]) == 0
    assert "8 articles" in capsys.readouterr().out
    assert cli_main(["build-wiki", "--archive", str(tmp_path / "nope.tar.gz")]) == 1


# ---------------------------------------------------------------------- the real corpus


def test_real_archive_builds_the_whole_web(tmp_path: Path) -> None:
    web = build_wiki_web(require_corpus("wikispeedia.tar.gz"), tmp_path)
    assert web.pages >= 4604 and web.articles == 4604 and web.link_count > 100_000
    aland = next(r for r in iter_warc(web.warc) if r.url == "http://wikischools.test/wiki/%C3%85land")
    assert "<h1>Åland</h1>".encode() in aland.body
    assert b'<a href="/wiki/Finland">Finland</a>' in aland.body
    assert aland.body.count(b'<a href="/wiki/') > 10
