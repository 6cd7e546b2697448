"""``focused train-topic``: a critic from example pages against an unlabelled background."""

from __future__ import annotations

import random

import numpy as np
import pytest

from focused.bench.runner import CrawlSpec, run_crawl
from focused.cli import main
from focused.crawldb import iter_pages
from focused.learning.critic.load import load_critic
from focused.replay.server import ReplayServer
from focused.replay.warc import write_warc
from tests.sites import COOKING, HOST, NEUTRAL, SPORT, graph_site, words


def html(vocab: tuple[str, ...], rng: random.Random, n: int = 60) -> str:
    return f"<html><body><p>{words(vocab, n, rng)} {words(NEUTRAL, 15, rng)}</p></body></html>"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("topic")
    rng = random.Random(0)
    pos = tmp / "positives"
    pos.mkdir()
    for i in range(20):
        (pos / f"sport{i}.html").write_text(html(SPORT, rng))
    bg = tmp / "background"
    bg.mkdir()
    for i in range(60):
        (bg / f"page{i}.html").write_text(html(COOKING if i % 2 else NEUTRAL, rng))
    held_pos = [html(SPORT, rng) for _ in range(15)]
    held_neg = [html(COOKING, rng) for _ in range(15)] + [html(NEUTRAL, rng) for _ in range(15)]
    return {"tmp": tmp, "pos": pos, "bg": bg, "held_pos": held_pos, "held_neg": held_neg}


def test_a_topic_from_example_files_ranks_held_out_positives_above_negatives(corpus, capsys):
    from focused.page.text import html_to_text

    out = corpus["tmp"] / "sport.npz"
    args = ["train-topic", "--positive", str(corpus["pos"]), "--background", str(corpus["bg"]), "--out", str(out)]
    assert main(args) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "held out (5-fold): 100% of 20 positives and " in printed and "of 60 background pages" in printed
    assert "ROC AUC 1.000" in printed
    critic = load_critic(out)
    assert sorted(critic.classes) == ["background", "sport"]
    topic = critic.resolve_topic("sport")
    pos = critic.relevance([html_to_text(t) for t in corpus["held_pos"]], topic)
    neg = critic.relevance([html_to_text(t) for t in corpus["held_neg"]], topic)
    assert pos.min() > neg.max()
    assert np.mean(pos > 0.5) == 1.0 and np.mean(neg < 0.5) == 1.0


def test_positive_urls_are_read_from_a_warc(corpus, capsys):
    from focused.replay.store import StoredResponse

    rng = random.Random(1)
    headers = [("Content-Type", "text/html")]
    responses = [StoredResponse(f"{HOST}/s/{i}.html", 200, headers, html(SPORT, rng).encode()) for i in range(10)]
    warc = corpus["tmp"] / "pages.warc.gz"
    write_warc(warc, responses)
    listing = corpus["tmp"] / "urls.txt"
    listing.write_text("# sport pages\n" + "\n".join(r.url for r in responses[:8]) + "\n")
    out = corpus["tmp"] / "from-urls.npz"
    args = ["train-topic", "--positive", str(listing), "--positive", responses[9].url, "--from", str(warc)]
    code = main([*args, "--background", str(corpus["bg"]), "--out", str(out), "--name", "Sport.Football"])
    assert code == 0, capsys.readouterr().err
    critic = load_critic(out)
    assert critic.examples["Sport.Football"][0] == responses[0].url  # the positives seed a crawl
    assert critic.resolve_topic("Sport").classes == ("Sport.Football",)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--positive", "http://nowhere.test/a"], "cannot resolve nowhere.test"),
        (["--positive", "missing-folder"], "no such folder or file"),
        (["--positive", "POS", "--name", "a,b"], "topic name"),
        (["--positive", "POS", "--background", "nowhere"], "--background 'nowhere'"),
        (["--positive", "POS", "--name", "background"], "topic name"),
        (["--positive", "http://nowhere.test/a", "--from", "WARC"], "1 of 1 positive URLs are in none"),
    ],
)
def test_bad_input_is_one_line_and_exit_1(corpus, capsys, extra, message):
    warc = corpus["tmp"] / "pages.warc.gz"
    if not warc.exists():
        write_warc(warc, [])
    extra = [str(corpus["pos"]) if e == "POS" else str(warc) if e == "WARC" else e for e in extra]
    code = main(["train-topic", *extra, "--background", str(corpus["bg"]), "--out", str(corpus["tmp"] / "x.npz")])
    err = capsys.readouterr().err
    assert code == 1
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (corpus["tmp"] / "x.npz").exists()


def test_a_crawl_runs_with_the_trained_topic_model(corpus, capsys):
    out = corpus["tmp"] / "sport-crawl.npz"
    args = ["--positive", str(corpus["pos"]), "--background", str(corpus["bg"]), "--out", str(out)]
    assert main(["train-topic", *args, "--name", "sport"]) == 0
    with ReplayServer(graph_site(80), latency=0.0) as server:
        spec = CrawlSpec(
            name="topic-crawl",
            topic="sport",
            strategy="baseline",
            seeds=(HOST + "/g/0.html",),
            model=out,
            proxy=server.proxy_url,
            db=corpus["tmp"] / "topic-crawl.sqlite",
            max_pages=40,
            settings={"FOCUSED_REPLAY_CONCURRENCY": 1, "FOCUSED_ALLOW_INTERNAL": "127.0.0.0/8,::1"},
        )
        result = run_crawl(spec, timeout=180)
    assert result.returncode == 0, result.log.read_text()[-3000:]
    pages = list(iter_pages(spec.db))
    assert len(pages) == 40
    # graph_site alternates sport (even) and cooking (odd) pages: the critic tells them apart
    for page in pages:
        number = int(page.url.rsplit("/", 1)[1].split(".")[0])
        assert (page.relevance > 0.5) == (number % 2 == 0)
    assert result.stats["focused/relevant_pages"] > 20  # best-first on the trained topic: mostly sport


def test_an_out_file_that_cannot_be_written_is_one_line_before_the_training(corpus, capsys):
    blocker = corpus["tmp"] / "a-file"
    blocker.write_text("not a folder")
    args = ["train-topic", "--positive", str(corpus["pos"]), "--background", str(corpus["bg"])]
    assert main([*args, "--out", str(blocker / "x.npz")]) == 1
    printed = capsys.readouterr()
    assert f"--out {blocker / 'x.npz'}: cannot make its folder" in printed.err and printed.err.count("\n") == 1
    assert "held out" not in printed.out  # refused before the training, not after it
