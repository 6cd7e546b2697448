"""A topic from examples: the positive-unlabelled critic, ``focused train-topic`` and ``scrapy crawl -a examples=``.

The examples are the hand-written astronomy and cooking pages of ``tests/data/topic``; the background is a
small folder of generated pages (the default background, WebKB and Wikipedia, is measured in docs/topic.md).
"""

from __future__ import annotations

import html
import os
import random
import time
from pathlib import Path

import numpy as np
import pytest

from focused.cli import main
from focused.crawldb import iter_pages
from focused.learning.critic.examples import train_examples_critic
from focused.learning.critic.load import load_critic
from focused.learning.critic.threshold import MAX_LEVEL, MIN_LEVEL, THRESHOLD
from focused.page.text import html_to_text
from focused.replay.server import ReplayServer
from focused.replay.store import ReplayStore, StoredResponse
from tests.commands import scrapy_crawl
from tests.local_server import HTML, LocalServer

DATA = Path(__file__).parent / "data" / "topic"
ASTRONOMY = sorted((DATA / "astronomy").glob("*.html"))
COOKING_PAGES = sorted((DATA / "cooking").glob("*.html"))


def texts(files: list[Path]) -> list[str]:
    return [html_to_text(f.read_bytes()) for f in files]


@pytest.fixture(scope="module")
def background(tmp_path_factory) -> Path:
    """The openings of 300 Wikipedia articles (Wikispeedia, of the shared corpora): a small unlabelled background.

    Generated word lists do not do: any real page, on topic or not, looks nothing like them.
    """
    from focused.corpora import corpora_dir
    from focused.corpora.wikispeedia import load_wikispeedia

    archive = corpora_dir() / "wikispeedia.tar.gz"
    if not archive.exists():
        pytest.skip(f"no corpus at {archive}")
    wiki = load_wikispeedia(archive)
    folder = tmp_path_factory.mktemp("background")
    names = sorted(wiki.articles)
    for name in random.Random(0).sample(names, 300):
        article = wiki.articles[name]
        # the article's opening, about as long as the examples: a background of long pages only would make
        # any short page look like an example
        opening = " ".join(article.text.split()[:120])
        body = f"<p>{html.escape(opening)}</p>"
        (folder / f"{len(list(folder.iterdir()))}.html").write_text(
            f"<html><head><title>{html.escape(article.title)}</title></head><body>{body}</body></html>"
        )
    return folder


def verdicts(model: Path, topic: str, files: list[Path]) -> np.ndarray:
    critic = load_critic(model)
    target = critic.resolve_topic(topic)
    return np.array([critic.judge(t, target).relevance for t in texts(files)])


# ---------------------------------------------------------------------- the learner


def test_the_critic_accepts_its_examples_and_rejects_other_pages(background):
    trained = train_examples_critic(texts(ASTRONOMY), texts(sorted(background.glob("*.html"))), name="astronomy")
    critic, report = trained.critic, trained.report
    assert critic.classes == ["astronomy", "background"] and critic.head is not None and critic.head.pu_c is not None
    topic = critic.resolve_topic("astronomy")
    own = [critic.judge(t, topic).relevance for t in texts(ASTRONOMY)]
    cooking = [critic.judge(t, topic).relevance for t in texts(COOKING_PAGES)]
    assert min(own) >= THRESHOLD and max(cooking) < THRESHOLD
    assert report.own_rejected == 0 and report.positives == len(ASTRONOMY) and report.warning() is None
    assert report.background_accepted <= 0.05


def test_the_critic_leaves_out_the_template_its_examples_share(background):
    """Examples from one site carry its menu and footer, which the background lacks: whoever trains the critic (the
    commands, the bench), those lines are left out, else every page of the site, cooking too, would be on topic."""
    menu = "Star Gazette\nHome\nNews desk\nSubscribe today\nContact the editors\n"
    footer = "\nCopyright Star Gazette Publishing, all rights reserved\nPrivacy policy and cookie notice"

    def site(pages: list[str]) -> list[str]:
        return [menu + page + footer for page in pages]

    bg = texts(sorted(background.glob("*.html")))
    astronomy, cooking = site(texts(ASTRONOMY)), site(texts(COOKING_PAGES))
    for negatives in ([], cooking[:4]):  # negatives from the same site: its template is not the background's either
        trained = train_examples_critic(astronomy, bg, negatives, name="sky")
        topic = trained.critic.resolve_topic("sky")
        assert max(trained.critic.judge(t, topic).relevance for t in cooking) < THRESHOLD
        assert min(trained.critic.judge(t, topic).relevance for t in astronomy) >= THRESHOLD


def test_the_model_file_keeps_the_scaled_verdict(tmp_path, background):
    trained = train_examples_critic(texts(ASTRONOMY), texts(sorted(background.glob("*.html"))), name="astronomy")
    path = trained.critic.save(tmp_path / "astronomy.npz")
    loaded = load_critic(path)
    topic = loaded.resolve_topic("astronomy")
    pages = texts(ASTRONOMY + COOKING_PAGES)
    before = [trained.critic.judge(t, topic).relevance for t in pages]
    after = [loaded.judge(t, topic).relevance for t in pages]
    assert np.allclose(before, after, atol=1e-5)
    assert loaded.metadata["topic_from_examples"]["level"] == pytest.approx(trained.report.level)
    # the threshold: Pr(topic) = 0.5 falls at the report's percentile of the background
    assert MIN_LEVEL <= trained.report.level <= MAX_LEVEL


def test_examples_like_the_background_get_the_one_line_warning(background):
    pages = texts(sorted(background.glob("*.html")))
    unrelated = random.Random(5).sample(pages, 6)  # six articles on six subjects, in the background too
    report = train_examples_critic(unrelated, pages, name="x").report
    warning = report.warning()
    assert warning is not None, report and warning.startswith("warning:") and "\n" not in warning
    assert report.lines()[-1] == warning


# ---------------------------------------------------------------------- focused train-topic


def test_train_topic_from_files_prints_the_holdout_report(tmp_path, background, capsys):
    out = tmp_path / "astronomy.npz"
    args = ["train-topic", "--positive", str(DATA / "astronomy"), "--background", str(background), "--out", str(out)]
    assert main(args) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "held out (5-fold):" in printed and "of 14 positives" in printed and "warning" not in printed
    assert verdicts(out, "astronomy", ASTRONOMY).min() >= THRESHOLD
    assert verdicts(out, "astronomy", COOKING_PAGES).max() < THRESHOLD


def test_the_link_views_rank_the_topic_first(tmp_path, background, capsys):
    """The views that order a crawl before the apprentice learns, from a model `focused train-topic` wrote: the
    parent view of a page's links ranks the examples above the background and the cooking pages, and the anchor
    view ranks anchors of the topic above anchors of cooking (with the smoothing of a taxonomy critic, 0.1,
    cooking anchors outranked astronomy ones: 7 of the 12 pairs below in order)."""
    from sklearn.metrics import roc_auc_score

    out = tmp_path / "astronomy.npz"
    args = ["train-topic", "--positive", str(DATA / "astronomy"), "--background", str(background), "--out", str(out)]
    assert main(args) == 0, capsys.readouterr().err
    critic = load_critic(out)
    topic = critic.resolve_topic("astronomy")

    def parent(files: list[Path]) -> np.ndarray:
        return np.array([critic.judge(t, topic).parent_view for t in texts(files)])

    examples, others = parent(ASTRONOMY), parent(sorted(background.glob("*.html")))
    assert examples.min() > np.quantile(others, 0.9) and examples.min() > parent(COOKING_PAGES).max()
    sky = ["the solar system", "planets and their moons", "the telescope"]
    food = ["bread", "how to roast a chicken", "olive oil and garlic", "chocolate cake recipe"]
    anchors = critic.snippet_relevance(sky + food, topic)
    assert roc_auc_score([1] * len(sky) + [0] * len(food), anchors) >= 0.8


def test_the_link_views_learn_topic_words_the_examples_lack(background, monkeypatch):
    """The background pages the regression scores most like the examples join the topic's side of the naive
    Bayes views (Nigam et al.'s EM, one round, together weighing as much as the examples): anchors with astronomy
    words that no example has but the background's astronomy articles do rank higher than from the examples
    alone, and the topic's side holds as many soft pages as there are examples."""
    import re

    from focused.learning.critic import examples

    pages = texts(sorted(background.glob("*.html")))
    grown = train_examples_critic(texts(ASTRONOMY), pages, name="astronomy").critic
    monkeypatch.setattr(examples, "UNLABELLED_MASS", 0.0)
    alone = train_examples_critic(texts(ASTRONOMY), pages, name="astronomy").critic
    anchors = ["binary star", "perihelion", "space station"]
    words = {w.lower() for t in texts(ASTRONOMY) for w in re.findall(r"\w+", t)}
    assert all(set(a.split()) - words for a in anchors), "an anchor without a word the examples lack"
    topic = grown.resolve_topic("astronomy")
    assert np.all(grown.snippet_relevance(anchors, topic) > alone.snippet_relevance(anchors, topic) + 0.1)
    assert grown.metadata["critic"]["unlabelled"]["mass"] == 1.0
    assert alone.metadata["critic"]["unlabelled"]["pages"] == 0.0
    # the verdicts are the regression's, the same with or without the unlabelled pages
    assert np.allclose(grown.verdict_posteriors(pages[:50]), alone.verdict_posteriors(pages[:50]))


def test_train_topic_with_negatives_and_keywords(tmp_path, background, capsys):
    out = tmp_path / "sky.npz"
    args = ["train-topic", "--positive", str(DATA / "astronomy"), "--negative", str(DATA / "cooking")]
    args += ["--keyword", "planet star telescope orbit", "--background", str(background), "--out", str(out)]
    assert main(args) == 0, capsys.readouterr().err
    meta = load_critic(out).metadata["topic_from_examples"]
    assert meta["negatives"] == len(COOKING_PAGES) and meta["keywords"] == ["planet star telescope orbit"]
    plain = tmp_path / "plain.npz"
    assert (
        main(["train-topic", "--positive", str(DATA / "astronomy"), "--background", str(background), "-o", str(plain)])
        == 0
    )
    assert verdicts(out, "sky", COOKING_PAGES).mean() < verdicts(plain, "plain", COOKING_PAGES).mean()


def site_pages() -> dict[str, tuple[int, list[tuple[str, str]], bytes]]:
    """The fixture pages at /astronomy/NAME.html and /cooking/NAME.html, in one site template: a menu of three
    links on every page, and links to the next four pages (astronomy and cooking pages alternate), whose anchors say
    nothing of their topic."""
    astronomy = [(f"/astronomy/{f.name}", f) for f in ASTRONOMY]
    cooking = [(f"/cooking/{f.name}", f) for f in COOKING_PAGES]
    mixed = [p for pair in zip(astronomy, cooking, strict=False) for p in pair] + astronomy[len(cooking) :]
    menu = '<ul><li><a href="/">Home</a></li><li><a href="/about">About us</a></li><li>Contact</li></ul>'
    pages = {}
    for i, (path, file) in enumerate(mixed):
        nxt = [mixed[(i + j) % len(mixed)][0] for j in range(1, 5)]
        links = "".join(f'<p><a href="{p}">read more ({k})</a></p>' for k, p in enumerate(nxt))
        body = (
            file.read_bytes()
            .replace(b"<body>", f"<body>{menu}".encode())
            .replace(b"</body>", f"{links}</body>".encode())
        )
        pages[path] = (200, HTML, body)
    return pages


def test_train_topic_from_urls_fetches_them_only_where_allowed(tmp_path, background, capsys):
    with LocalServer(site_pages()) as web:
        urls = ",".join(f"{web.url}/astronomy/{f.name}" for f in ASTRONOMY[:8])
        base = ["train-topic", "--positive", urls, "--background", str(background), "--out", str(tmp_path / "u.npz")]
        assert main(base) == 1  # loopback: refused without the allow-list
        err = capsys.readouterr().err
        assert "internal address" in err and f"FOCUSED_ALLOW_INTERNAL={web.allow}" in err and err.count("\n") == 1
        assert main([*base, "--allow-internal", web.allow]) == 0, capsys.readouterr().err
    critic = load_critic(tmp_path / "u.npz")
    assert critic.examples["u"][0] == f"{web.url}/astronomy/{ASTRONOMY[0].name}"  # the seeds of a crawl
    assert verdicts(tmp_path / "u.npz", "u", ASTRONOMY[:8]).min() >= THRESHOLD  # its examples, less the template
    assert verdicts(tmp_path / "u.npz", "u", COOKING_PAGES).mean() < THRESHOLD


def test_train_topic_fetches_example_urls_through_the_proxy_of_the_environment(
    tmp_path, background, capsys, monkeypatch
):
    """Behind a proxy (``http_proxy``) the examples' host names need not resolve here: they are checked by name,
    as the crawl checks its requests through a proxy, and fetched through it; a local name is still refused."""
    store = ReplayStore()
    for file in ASTRONOMY[:8]:
        store.add(StoredResponse(f"http://astro.test/{file.name}", 200, HTML, file.read_bytes()))
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "proxied.npz"
    urls = ",".join(f"http://astro.test/{f.name}" for f in ASTRONOMY[:8])
    base = ["train-topic", "--background", str(background), "--out", str(out)]
    assert main([*base, "--positive", urls]) == 1  # no proxy: the name does not resolve
    assert "cannot resolve astro.test" in capsys.readouterr().err
    with ReplayServer(store) as server:
        monkeypatch.setenv("http_proxy", server.proxy_url)
        assert main([*base, "--positive", urls]) == 0, capsys.readouterr().err
        assert main([*base, "--positive", f"{urls},http://localhost/x.html"]) == 1
        err = capsys.readouterr().err
        assert "localhost is an internal address" in err and err.count("\n") == 1
    assert verdicts(out, "proxied", ASTRONOMY[:8]).min() >= THRESHOLD


@pytest.mark.parametrize(
    ("positive", "message"),
    [
        ("missing-folder", "no such folder or file"),
        ("ONE", "need at least 2 example pages"),
        ("EMPTY", "holds no example pages"),
        ("http://127.0.0.1:9/a.html", "internal address"),
        ("TYPO", "line 4: 'eclipse.htm' is neither an http(s) URL nor a file"),
    ],
)
def test_train_topic_bad_input_is_one_line(tmp_path, background, capsys, positive, message):
    (tmp_path / "empty").mkdir()
    listing = tmp_path / "typo.txt"  # a listing with a typo is not one page of text ("need at least 2 examples")
    listing.write_text(f"{ASTRONOMY[0]}\n# a comment\n{ASTRONOMY[1]}\neclipse.htm\n{ASTRONOMY[2]}\n")
    positive = {"ONE": str(ASTRONOMY[0]), "EMPTY": str(tmp_path / "empty"), "TYPO": str(listing)}.get(
        positive, positive
    )
    args = ["train-topic", "--positive", positive, "--background", str(background), "--out", str(tmp_path / "x.npz")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "x.npz").exists()


def test_an_example_file_that_is_not_text_is_skipped_and_named(tmp_path, background, capsys, caplog):
    """A PDF or an image saved as ``.html`` among the examples is no example (its bytes would be read as words,
    as the crawl's binary-body check keeps such responses out): it is skipped, with a warning naming it, as is
    a page without a word, and the critic learns from the others; with too few left, the one-line error names
    the files left out."""
    folder = tmp_path / "examples"
    folder.mkdir()
    for file in ASTRONOMY[:6]:
        (folder / file.name).write_bytes(file.read_bytes())
    (folder / "photo.html").write_bytes(random.Random(3).randbytes(5_000))
    (folder / "blank.html").write_text("<html><body> </body></html>")
    out = tmp_path / "sky.npz"
    args = ["train-topic", "--positive", str(folder), "--background", str(background), "--out", str(out)]
    assert main(args) == 0, capsys.readouterr().err
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert f"Skipped example {folder / 'photo.html'}: not text" in warned
    assert f"Skipped example {folder / 'blank.html'}: no word" in warned
    assert "6 example pages" in capsys.readouterr().out
    for file in ASTRONOMY[:5]:
        (folder / file.name).unlink()
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "need at least 2 example pages with text, got 1" in err
    assert f"{folder / 'photo.html'}: not text" in err and f"{folder / 'blank.html'}: no word" in err


# ---------------------------------------------------------------------- scrapy crawl focused -a examples=


def test_a_crawl_from_examples_trains_once_and_judges_pages(tmp_path, background):
    listing = tmp_path / "examples.txt"
    cache = tmp_path / "cache"
    with LocalServer(site_pages()) as web:
        listing.write_text("# astronomy\n" + "".join(f"{web.url}/astronomy/{f.name}\n" for f in ASTRONOMY[:8]))
        common = ["-a", f"examples={listing}", "-a", "topic=sky", "-a", "max_pages=16", "-a", "strategy=baseline"]
        common += ["-s", f"FOCUSED_EXAMPLES_BACKGROUND={background}", "-s", f"FOCUSED_EXAMPLES_CACHE={cache}"]
        common += ["-s", f"FOCUSED_ALLOW_INTERNAL={web.allow}", "-s", "CONCURRENT_REQUESTS=2"]
        first = scrapy_crawl(*common, "-s", f"FOCUSED_DB={tmp_path / 'first.sqlite'}", timeout=180)
        assert first.returncode == 0, first.stderr[-3000:]
        assert "trained a critic from 8 examples" in first.stderr and "held out (5-fold)" in first.stderr
        models = list(cache.glob("sky-*.npz"))
        assert len(models) == 1
        stamp = models[0].stat().st_mtime_ns
        second = scrapy_crawl(*common, "-s", f"FOCUSED_DB={tmp_path / 'second.sqlite'}", timeout=180)
        assert second.returncode == 0, second.stderr[-3000:]
        assert "the critic trained from these examples before" in second.stderr
        assert "trained a critic from" not in second.stderr
        assert list(cache.glob("*.npz")) == models and models[0].stat().st_mtime_ns == stamp
        # the first crawl's database as more background (pages of the kind the crawl meets): another critic,
        # sampled with the folder (300 pages) and the first crawl's 8 pages that are not examples
        more = f"FOCUSED_EXAMPLES_BACKGROUND={background},{tmp_path / 'first.sqlite'}"
        third = scrapy_crawl(*common, "-s", more, "-s", f"FOCUSED_DB={tmp_path / 'third.sqlite'}", timeout=180)
        assert third.returncode == 0, third.stderr[-3000:]
        assert "trained a critic from 8 examples" in third.stderr and len(list(cache.glob("sky-*.npz"))) == 2
        assert f"background ({background}, {tmp_path / 'first.sqlite'}): 308 of 308 pages" in third.stderr
    pages = list(iter_pages(tmp_path / "first.sqlite"))
    assert len(pages) == 16
    assert pages[0].url.startswith(f"{web.url}/astronomy/")  # the examples are the seeds
    astronomy = [p.relevance for p in pages if "/astronomy/" in p.url]
    cooking = [p.relevance for p in pages if "/cooking/" in p.url]
    assert astronomy and cooking
    assert min(astronomy) >= THRESHOLD and max(cooking) < THRESHOLD


def test_a_distributed_crawl_from_example_urls_starts_from_them(tmp_path, background, redis_server):
    """With a shared Redis frontier and no -a seeds, the example URLs are still the seeds (a worker without seeds
    used to wait for the Redis list, and the crawl ended at once with no page)."""
    listing = tmp_path / "examples.txt"
    with LocalServer(site_pages()) as web:
        listing.write_text("".join(f"{web.url}/astronomy/{f.name}\n" for f in ASTRONOMY[:8]))
        proc = scrapy_crawl(
            "-a", f"examples={listing}", "-a", "topic=sky", "-a", "max_pages=12", "-a", "strategy=baseline",
            "-s", f"REDIS_URL={redis_server.url}", "-s", f"FOCUSED_REDIS_PREFIX=examples{os.getpid()}",
            "-s", f"FOCUSED_EXAMPLES_BACKGROUND={background}", "-s", f"FOCUSED_EXAMPLES_CACHE={tmp_path / 'cache'}",
            "-s", f"FOCUSED_ALLOW_INTERNAL={web.allow}", "-s", f"FOCUSED_DB={tmp_path / 'w1.sqlite'}",
            timeout=180,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    pages = list(iter_pages(tmp_path / "w1.sqlite"))
    assert len(pages) == 12 and pages[0].url.startswith(f"{web.url}/astronomy/")


def test_a_crawl_from_a_folder_of_examples_judges_the_site(tmp_path, background):
    """``-a examples=DIR`` (saved pages, no URLs) with ``-a seeds=``: the site's astronomy pages are on topic,
    its cooking pages off it, in the crawl's own verdicts."""
    with LocalServer(site_pages()) as web:
        result = scrapy_crawl(
            "-a", f"examples={DATA / 'astronomy'}", "-a", f"seeds={web.url}/cooking/{COOKING_PAGES[0].name}",
            "-a", "max_pages=20", "-a", "strategy=baseline",
            "-s", f"FOCUSED_EXAMPLES_BACKGROUND={background}", "-s", f"FOCUSED_EXAMPLES_CACHE={tmp_path / 'cache'}",
            "-s", f"FOCUSED_ALLOW_INTERNAL={web.allow}", "-s", "CONCURRENT_REQUESTS=2",
            "-s", f"FOCUSED_DB={tmp_path / 'crawl.sqlite'}", timeout=180,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "trained a critic from 14 examples" in result.stderr and "'astronomy': warning:" not in result.stderr
    pages = list(iter_pages(tmp_path / "crawl.sqlite"))
    astronomy = [p.relevance for p in pages if "/astronomy/" in p.url]
    cooking = [p.relevance for p in pages if "/cooking/" in p.url]
    assert len(astronomy) >= 5 and len(cooking) >= 5
    assert min(astronomy) >= THRESHOLD and max(cooking) < THRESHOLD


def test_a_critic_from_live_example_urls_is_found_again_without_fetching_them(tmp_path, background):
    """A live page changes between fetches (a date, an advert): the cached critic is named by the example URLs,
    not their pages, so a resumed crawl or a second worker finds the critic the first one trained, and fetches
    nothing; example files are still named by their content (an edited file trains again)."""
    from scrapy.settings import Settings

    from focused.core.examples import prepare_crawl

    served = [0]

    def page(path: str):
        name = path.rsplit("/", 1)[-1]
        if not any(f.name == name for f in ASTRONOMY[:6]):
            return None
        served[0] += 1  # the page as a live site serves it: a little different every time
        body = (DATA / "astronomy" / name).read_bytes()
        return 200, HTML, body.replace(b"</body>", f"<p>served {served[0]}</p></body>".encode())

    with LocalServer(page) as web:
        urls = ",".join(f"{web.url}/astronomy/{f.name}" for f in ASTRONOMY[:6])
        settings = Settings(
            {
                "FOCUSED_EXAMPLES": urls,
                "FOCUSED_EXAMPLES_BACKGROUND": str(background),
                "FOCUSED_EXAMPLES_CACHE": str(tmp_path / "cache"),
                "FOCUSED_ALLOW_INTERNAL": web.allow,
                "USER_AGENT": "sky-watcher/1.0",  # the crawl's agent: a site that refuses others refuses the crawl
            }
        )
        first, _, trained = prepare_crawl(settings)
        assert trained and len(web.hits) == 6 and web.agents == ["sky-watcher/1.0"] * 6
        again, _, trained_again = prepare_crawl(settings)
        assert again == first and not trained_again and len(web.hits) == 6  # found, nothing fetched
    folder = tmp_path / "files"
    folder.mkdir()
    for file in ASTRONOMY[:6]:
        (folder / file.name).write_bytes(file.read_bytes())
    settings.set("FOCUSED_EXAMPLES", str(folder))
    from_files, _, _ = prepare_crawl(settings)
    (folder / ASTRONOMY[0].name).write_bytes(ASTRONOMY[0].read_bytes().replace(b"</body>", b"<p>edited</p></body>"))
    edited, _, trained = prepare_crawl(settings)
    assert trained and edited != from_files


@pytest.mark.parametrize(
    ("examples", "extra", "message"),
    [
        ("missing-folder", [], "no such folder or file"),
        ("ONE", [], "need at least 2"),
        ("DIR", [], "add -a seeds=URL"),
        ("DIR", ["-a", "model=models/webkb-pagetype.npz"], "leave out -a model="),
        ("DIR", ["-a", "seeds=http://a.test/", "-s", "FOCUSED_EXAMPLES_BACKGROUND=nowhere"], "background 'nowhere'"),
        (
            "DIR",
            ["-a", "seeds=http://a.test/", "-s", "FOCUSED_EXAMPLES_BACKGROUND=README.md"],
            "README.md is not an SQLite crawl database",
        ),
        (
            "DIR",
            ["-a", "seeds=http://a.test/", "-s", "FOCUSED_EXAMPLES_CACHE=README.md/critics"],
            "FOCUSED_EXAMPLES_CACHE=README.md/critics: cannot make the folder of the critics",
        ),
    ],
)
def test_a_crawl_with_bad_examples_stops_with_one_line(tmp_path, examples, extra, message):
    examples = {"ONE": str(ASTRONOMY[0]), "DIR": str(DATA / "astronomy")}.get(examples, examples)
    proc = scrapy_crawl("-a", f"examples={examples}", *extra, "-s", "FOCUSED_DB=", timeout=180)
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr


def test_examples_without_text_stop_with_one_line_before_the_training_is_announced(tmp_path):
    """With the default background the crawl says when the (long) training starts; examples the critic cannot
    learn from are refused before that line, so bad input stays one line."""
    folder = tmp_path / "examples"
    folder.mkdir()
    (folder / "empty.html").write_text("<html><body></body></html>")
    (folder / "blank.html").write_text("<html><body>   </body></html>")
    (folder / "mars.html").write_bytes(ASTRONOMY[0].read_bytes())
    proc = scrapy_crawl("-a", f"examples={folder}", "-a", "seeds=http://a.test/", "-s", "FOCUSED_DB=", timeout=180)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr[-2000:]
    assert "need at least 2 example pages with text, got 1" in lines[0]


def test_a_crawl_with_an_unreachable_example_url_stops_with_one_line(tmp_path, background):
    with LocalServer({}) as web:
        args = ["-a", f"examples={web.url}/a.html,{web.url}/b.html", "-s", f"FOCUSED_ALLOW_INTERNAL={web.allow}"]
        proc = scrapy_crawl(*args, "-s", f"FOCUSED_EXAMPLES_BACKGROUND={background}", "-s", "FOCUSED_DB=", timeout=180)
    assert proc.returncode == 1
    assert "HTTP 404" in proc.stderr and "Traceback" not in proc.stderr


def test_an_example_url_that_is_not_a_page_or_is_gone_is_left_out_and_named(tmp_path, background, capsys, caplog):
    """A PDF (or image) among the example URLs would give the critic its bytes as words, and one dead link among
    many is the live web: each is left out with a warning naming it, and the critic learns from the others; with
    too few left, the one-line error names them. An internal address stays refused outright."""
    pages = {f"/{f.name}": (200, HTML, f.read_bytes()) for f in ASTRONOMY[:3]}
    pages["/paper.pdf"] = (200, [("Content-Type", "application/pdf")], b"%PDF-1.4 \x00\x01 stream")
    pages["/moved.html"] = (302, [("Location", "http://169.254.169.254/latest/meta-data/")], b"")
    out = tmp_path / "x.npz"
    with LocalServer(pages) as web:
        good = [f"{web.url}/{f.name}" for f in ASTRONOMY[:3]]
        pdf, gone = f"{web.url}/paper.pdf", f"{web.url}/gone.html"
        base = ["train-topic", "--background", str(background), "--out", str(out), "--allow-internal", web.allow]
        assert main([*base, "--positive", ",".join([*good, pdf, gone])]) == 0, capsys.readouterr().err
        warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert f"Skipped example URL {pdf}: application/pdf is not a page (HTML or plain text)" in warned
        assert f"Skipped example URL {gone}: HTTP 404" in warned
        assert "3 example pages" in capsys.readouterr().out
        assert main([*base, "--positive", f"{good[0]},{pdf}"]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "need at least 2 example pages with text, got 1" in err
        assert f"{pdf}: application/pdf is not a page (HTML or plain text)" in err
        assert main([*base, "--positive", ",".join([*good, f"{web.url}/moved.html"])]) == 1  # a redirect inside
        err = capsys.readouterr().err
        assert "169.254.169.254 is an internal address" in err and err.count("\n") == 1
        assert main(["train-topic", "--background", str(background), "--out", str(out), "--positive", ",".join(good)])
        err = capsys.readouterr().err  # without --allow-internal: the loopback address is refused, nothing fetched
        assert "internal address" in err and err.count("\n") == 1


def test_an_example_url_given_twice_is_one_example():
    from focused.addresses import AddressPolicy
    from focused.core.examples import read_examples
    from focused.settings import USER_AGENT

    with LocalServer({"/a.html": (200, HTML, ASTRONOMY[0].read_bytes())}) as web:
        url = f"{web.url}/a.html"
        examples = read_examples([f"{url},{url}"], policy=AddressPolicy.from_setting(web.allow))
        assert web.hits == ["/a.html"] and web.agents == [USER_AGENT]  # the project's, as a crawl's
    assert len(examples.bodies) == 1 and examples.urls == [url]


def test_a_listing_saved_with_a_byte_order_mark_is_a_listing(tmp_path):
    """Windows' Notepad saves "UTF-8" with a byte-order mark and CRLF line ends: the listing was read as one page
    of text (its first line was no path)."""
    from focused.core.examples import check_examples_spec, read_examples

    listing = tmp_path / "urls.txt"
    listing.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(str(p).encode() for p in ASTRONOMY[:3]) + b"\r\n")
    assert check_examples_spec(str(listing)) == 3
    examples = read_examples([str(listing)])
    assert examples.names == [str(p) for p in ASTRONOMY[:3]]
    prose = tmp_path / "page.txt"  # a page of text that names a file on one line is a page, not a listing
    prose.write_text(f"Comets and planets.\nSee also:\n{ASTRONOMY[0]}\nwhich tells of the moon.\n")
    assert read_examples([str(prose)]).names == [str(prose)]


def test_an_example_url_that_drips_is_left_out_and_one_compressed_unasked_is_read(monkeypatch):
    """A server that sends a byte now and then (each within the socket's timeout) would hold the crawl's start
    for hours: the whole fetch has a deadline. A page gzipped though nobody asked for it is its words, not
    binary bytes."""
    import gzip
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from focused.addresses import AddressPolicy
    from focused.core import exampleurls
    from focused.core.exampleurls import Unavailable, fetch_page

    page = ASTRONOMY[0].read_bytes()
    dripped: list[int] = []

    class Drip(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            if self.path == "/gzip.html":
                body = gzip.compress(page)
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_header("Content-Length", "40")
            self.end_headers()
            for _ in range(40):  # 4 s in all
                self.wfile.write(b"x")
                self.wfile.flush()
                dripped.append(1)
                time.sleep(0.1)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base, policy = f"http://127.0.0.1:{server.server_port}", AddressPolicy.from_setting("127.0.0.1")
    monkeypatch.setattr(exampleurls, "FETCH_DEADLINE", 0.5)
    try:
        with pytest.raises(Unavailable, match=r"still sending after 0\.5 s"):
            fetch_page(f"{base}/drip.html", policy, "test")
        assert len(dripped) < 40  # given up while the page was still coming, not once it had all come
        body, _ = fetch_page(f"{base}/gzip.html", policy, "test")
        assert body == page
    finally:
        server.shutdown()
        server.server_close()


def test_examples_are_decoded_as_the_crawl_decodes_their_pages(tmp_path):
    """An example URL's page is decoded by the charset its Content-Type declares (the crawl's words, not
    mojibake), and a file saved as UTF-16 with its byte-order mark is text, not a binary file."""
    from scrapy.http import HtmlResponse

    from focused.addresses import AddressPolicy
    from focused.core.examples import example_texts, read_examples

    page = "<html><body><p>Звёзды и планеты Солнечной системы</p></body></html>"
    ru = [("Content-Type", "text/html; charset=windows-1251")]  # and no <meta>
    folder = tmp_path / "saved"
    folder.mkdir()
    (folder / "a-utf16.html").write_bytes(page.encode("utf-16"))  # with its mark, as Windows saves "Unicode"
    (folder / "b-utf8.html").write_bytes(page.encode("utf-8"))
    with LocalServer({"/ru.html": (200, ru, page.encode("cp1251"))}) as web:
        url = f"{web.url}/ru.html"
        examples = read_examples([str(folder), url], policy=AddressPolicy.from_setting(web.allow))
    crawl = html_to_text(HtmlResponse(url, body=page.encode("cp1251"), headers=dict(ru)).text)
    assert "Звёзды и планеты" in crawl
    assert example_texts(examples) == [crawl] * 3


def test_stored_pages_are_decoded_by_the_charset_they_were_stored_with(tmp_path):
    """A WARC response is decoded by its Content-Type's charset, and a crawl database's page (kept decoded) as
    UTF-8 whatever its <meta> says: as examples looked up with --from and as background pages."""
    from focused.addresses import AddressPolicy
    from focused.commands.train_topic import read_positives
    from focused.core.background import background_texts
    from focused.core.examples import example_texts
    from focused.crawldb import CrawlDB
    from focused.replay.warc import write_warc

    page = "<html><body><p>Звёзды и планеты Солнечной системы</p></body></html>"
    ru = [("Content-Type", "text/html; charset=windows-1251")]
    warc = tmp_path / "pages.warc.gz"
    write_warc(warc, [StoredResponse("http://ru.test/a.html", 200, ru, page.encode("cp1251"))])
    db_path = tmp_path / "crawl.sqlite"
    db = CrawlDB(db_path, commit_every=1)
    meta = page.replace("<html>", '<html><head><meta charset="iso-8859-1"></head>')  # saved as decoded text
    db.add_page(
        url="http://ru.test/b.html", fetch_order=1, parent=None, depth=0, status=200, content_type="text/html",
        title="t", relevance=0.5, predicted_class="x", top_classes=["x"], links=[], html=meta,
    )  # fmt: skip
    db.close()
    for source in (warc, db_path):
        ((_, text),) = background_texts(str(source))
        assert "Звёзды и планеты" in text, source
    urls = "http://ru.test/a.html,http://ru.test/b.html"
    examples = read_positives([urls], [str(warc), str(db_path)], AddressPolicy())
    assert len(examples.bodies) == 2 and all("Звёзды и планеты" in text for text in example_texts(examples))


# ---------------------------------------------------------------------- the default background


def test_astronomy_against_the_default_background_judges_its_pages_and_not_cooking(tmp_path, capsys, monkeypatch):
    """The issue's case: the 14 astronomy pages with the default background (WebKB and Wikipedia, whose
    astronomy articles are unlabelled there): every astronomy page on topic, every cooking page off it."""
    from focused.corpora import corpora_dir

    if not (corpora_dir() / "webkb-dev.tar.gz").exists() or not (corpora_dir() / "wikispeedia.tar.gz").exists():
        pytest.skip(f"no corpora at {corpora_dir()}")
    monkeypatch.setenv("FOCUSED_CORPORA", str(corpora_dir()))  # found from the checkout, before leaving it:
    monkeypatch.chdir(tmp_path)  # the corpora's texts are kept in crawls/examples of this folder, not the checkout's
    out = tmp_path / "astronomy.npz"
    assert main(["train-topic", "--positive", str(DATA / "astronomy"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "of 14 positives" in printed and "(webkb, wiki)" in printed and "warning" not in printed, printed
    assert verdicts(out, "astronomy", ASTRONOMY).min() >= THRESHOLD
    assert verdicts(out, "astronomy", COOKING_PAGES).max() < THRESHOLD


def test_the_users_own_background_is_sampled_beside_the_corpora_not_among_them(tmp_path):
    """A folder (or crawl database, WARC file) of the user's pages gets a sample of its own, as large as the
    corpora's: 20 pages are not lost among 11,000 corpus pages; adding them leaves the corpora's sample as it was."""
    from focused.core.background import read_background

    own = tmp_path / "own"
    own.mkdir()
    for i in range(20):
        (own / f"{i}.html").write_text(f"<html><body><p>forum post {i} about telescopes</p></body></html>")
    corpus = [(f"http://corpus.test/{i}", f"corpus page {i}") for i in range(500)]
    alone = read_background((), 50, 0, extra=iter(corpus))
    both = read_background([str(own)], 50, 0, extra=iter(corpus))
    assert both[:50] == alone and len(alone) == 50
    assert sorted(both[50:]) == sorted(f"forum post {i} about telescopes" for i in range(20))
    assert len(read_background([str(own)], 5, 0, extra=iter(corpus))) == 10


def test_a_cached_critic_is_named_by_its_background_files_contents_too(tmp_path):
    from focused.core.background import background_key

    db = tmp_path / "site.sqlite"
    db.write_bytes(b"x" * 10)
    before = background_key(["webkb", str(db)])
    assert background_key(["webkb", str(db)]) == before and before.startswith("webkb,")
    db.write_bytes(b"x" * 20)  # the crawl database grew: another critic
    assert background_key(["webkb", str(db)]) != before
