"""Markines strategies in real crawls: trained off-line from a baseline crawl database, then crawling."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from focused.bench.runner import CrawlSpec, run_crawl
from focused.cli import main
from focused.crawldb import iter_pages
from focused.learning.markines.classifiers import MarkinesModel
from focused.replay.server import ReplayServer
from focused.replay.store import ReplayStore
from tests.sites import COOKING, HOST, SPORT, add, page, train_critic, words
from tests.test_markines import GAP

HUBS, PER = 5, 4


def chain_site() -> ReplayStore:
    """Two chains of hubs, ``/a/`` (to train on) and ``/b/`` (to crawl). A hub (sport text) links
    first to cooking leaves, then to sport leaves, then to the next hub; each link is preceded by
    three words of its target's topic, 12 empty leaves away from the next link."""
    rng = random.Random(4)
    store = ReplayStore()
    for chain in ("a", "b"):
        for h in range(HUBS):
            body = [f"<html><head><title>Hub</title></head><body><p>{words(SPORT, 40, rng)}</p>"]
            for kind, vocab in (("c", COOKING), ("s", SPORT)):
                for i in range(PER):
                    href = f"/{chain}/{kind}/{h}-{i}.html"
                    body.append(f'{GAP}<p>{words(vocab, 3, rng)} <a href="{href}">item</a></p>')
                    label = "cooking" if kind == "c" else "sport"
                    add(store, href, page(href, words(vocab, 80, rng), []), label)
            if h + 1 < HUBS:
                body.append(f'{GAP}<p><a href="/{chain}/hub/{h + 1}.html">next</a></p>')
            add(store, f"/{chain}/hub/{h}.html", ("".join(body) + "</body></html>").encode(), "sport")
    return store


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("markines")
    model = train_critic(tmp / "critic.npz")
    with ReplayServer(chain_site()) as server:
        yield {"model": model, "proxy": server.proxy_url, "tmp": tmp}


def crawl(web, strategy: str, name: str, chain: str, **settings) -> list[str]:
    spec = CrawlSpec(
        name=name,
        topic="sport",
        strategy=strategy,
        seeds=(f"{HOST}/{chain}/hub/0.html",),
        model=web["model"],
        proxy=web["proxy"],
        db=web["tmp"] / f"{name}.sqlite",
        max_pages=0,
        settings={"FOCUSED_REPLAY_CONCURRENCY": 1, "FOCUSED_ALLOW_INTERNAL": "127.0.0.0/8,::1", **settings},
    )
    result = run_crawl(spec, timeout=180)
    assert result.returncode == 0, result.log.read_text()[-3000:]
    order = [p.url for p in sorted(iter_pages(spec.db), key=lambda p: p.fetch_order)]
    assert len(order) == HUBS * (2 * PER + 1)
    return order


def mean_rank(order: list[str], kind: str) -> float:
    ranks = [i for i, url in enumerate(order) if f"/{kind}/" in url]
    return sum(ranks) / len(ranks)


@pytest.fixture(scope="module")
def trained(web, tmp_path_factory):
    baseline = crawl(web, "baseline", "baseline-a", "a")
    assert mean_rank(baseline, "c") < mean_rank(baseline, "s")  # document order: cooking first
    out = web["tmp"] / "markines.npz"
    assert main(["train-markines", "--db", str(web["tmp"] / "baseline-a.sqlite"), "--out", str(out), "--k", "60"]) == 0
    return out


@pytest.mark.parametrize("classifier", ["nb", "svm", "cosine"])
def test_offline_link_classifiers_fetch_the_on_topic_links_first(web, trained, classifier):
    model = MarkinesModel.load(trained)
    assert set(model.parts) == {"link", "page"} and model.parts["link"].info["n_positive"] > 0
    order = crawl(web, f"markines:{classifier}-link", f"{classifier}-link-b", "b", FOCUSED_MARKINES_MODEL=trained)
    leaves = [u for u in order if "/hub/" not in u]
    # the sport leaves of each hub come before its cooking leaves
    assert mean_rank(order, "s") < mean_rank(order, "c")
    assert all("/s/" in u for u in leaves[:PER])


def test_page_classifier_and_online_learning_run_end_to_end(web, trained, capsys):
    crawl(web, "markines:svm-page", "svm-page-b", "b", FOCUSED_MARKINES_MODEL=trained)
    order = crawl(web, "markines:nb-link", "online-b", "b", FOCUSED_MARKINES_MIN_INSTANCES=10, FOCUSED_MARKINES_BATCH=5)
    assert len(order) == HUBS * (2 * PER + 1)


def test_a_model_without_the_requested_mode_is_refused_in_one_line(web, trained, tmp_path, capsys):
    link_only = tmp_path / "link.npz"
    db = str(web["tmp"] / "baseline-a.sqlite")
    assert main(["train-markines", "--db", db, "--out", str(link_only), "--modes", "link"]) == 0
    from focused.errors import ConfigError
    from focused.strategies.markines import make_strategy

    settings = {"FOCUSED_MARKINES_MODEL": str(link_only)}

    class Settings(dict):
        def getint(self, key, default):
            return int(self.get(key, default))

        def getfloat(self, key, default):
            return float(self.get(key, default))

    with pytest.raises(ConfigError, match="has no page classifiers"):
        make_strategy("markines:nb-page", Settings(settings), Path)
    with pytest.raises(ConfigError, match="valid: markines:nb-link"):
        make_strategy("markines:tree-link", Settings(settings), Path)
    with pytest.raises(ConfigError, match="FOCUSED_MARKINES_K=0"):
        make_strategy("markines:nb-link", Settings({"FOCUSED_MARKINES_K": "0"}), Path)
    with pytest.raises(ConfigError, match="FOCUSED_MARKINES_SELECTION must be one of df, mi"):
        make_strategy("markines:nb-link", Settings({"FOCUSED_MARKINES_SELECTION": "chi2"}), Path)
    capsys.readouterr()
    assert main(["train-markines", "--db", "missing.sqlite", "--out", str(tmp_path / "x.npz")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not found: missing.sqlite" in err
