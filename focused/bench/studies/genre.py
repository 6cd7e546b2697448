"""Examples unlike the background: critics from k posts of a newsgroup, with and without pages of their kind.

The shipped background is web pages and encyclopedia articles; 20 Newsgroups posts are neither. For each of a
few newsgroups, k posts of its training split are the examples of a critic from examples
(:func:`~focused.core.background.read_background` and
:func:`~focused.learning.critic.examples.train_examples_critic`, as ``-a examples=`` trains it), against three
backgrounds: the default one; the default one and a folder of 1,000 other training posts (random, as a
breadth-first crawl of a forum would fetch them); the default one and 1,000 posts of which 300 are the topic's (as
a focused first crawl would fetch them). Each critic judges 60 test posts of each of the 20 groups. Prints one
Markdown row per newsgroup and k: on-topic accepted / off-topic accepted / average precision.

``--crawls``: the same in crawls. A forum of 1,000 test posts (50 of each group; a post links to 3 posts of its
group, 3 of any group and its group's index; the root lists the 20 indexes) is served by the replay proxy; for each
of three newsgroups, 20 training posts are the examples of ``scrapy crawl focused -a examples=`` from the root, with
the default background, then again with a breadth-first crawl of 400 pages of the forum in the background (the
recipe of docs/topic.md), with the default strategy and with ``baseline``. Prints the topic's posts among the first
100 and 250 pages, and the pages the critic judged relevant. A study, never asserted (docs/topic.md, "Examples
unlike the background")::

    FOCUSED_CORPORA=../shared/corpora python -m focused.bench.studies.genre [--crawls]
"""

from __future__ import annotations

import html
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

from focused.bench.runner import PROJECT_ROOT
from focused.core.background import read_background
from focused.corpora import corpora_dir
from focused.corpora.dirtree import iter_dirtree
from focused.learning.critic.examples import train_examples_critic
from focused.learning.critic.naive_bayes import Critic
from focused.page.text import html_to_text
from focused.replay.server import ReplayServer
from focused.replay.store import ReplayStore, StoredResponse

GROUPS = ("sci.space", "rec.autos", "comp.graphics", "talk.politics.guns", "sci.med")
TEST_PER_GROUP = 60
UNLABELLED = 1000
CRAWLED_ON_TOPIC = 300


def _posts(subset: str) -> dict[str, list[str]]:
    posts: dict[str, list[str]] = defaultdict(list)
    for _doc, group, text in iter_dirtree(corpora_dir() / "20news-bydate.tar.gz", subset):
        posts[group].append(text)
    return posts


def _folder(root: Path, name: str, posts: list[str]) -> str:
    folder = root / name
    folder.mkdir()
    for i, text in enumerate(posts):
        (folder / f"{i}.txt").write_text(text)
    return str(folder)


def _figures(critic: Critic, test: list[tuple[str, str]], group: str) -> str:
    target = critic.resolve_topic("t")
    relevance = np.array([critic.judge(html_to_text(text.encode()), target).relevance for _, text in test])
    on = np.array([g == group for g, _ in test])
    hits = on[np.argsort(-relevance, kind="stable")]
    precision = np.cumsum(hits) / np.arange(1, len(hits) + 1)
    ap = float((precision * hits).sum() / hits.sum())
    return f"{np.mean(relevance[on] >= 0.5):.0%} / {np.mean(relevance[~on] >= 0.5):.1%} / {ap:.1%}"


def main(ks: tuple[int, ...] = (20, 5)) -> None:
    train, test_posts = _posts("20news-bydate-train"), _posts("20news-bydate-test")
    rng = random.Random(0)
    test = [(g, t) for g, posts in test_posts.items() for t in rng.sample(posts, TEST_PER_GROUP)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for k in ks:
            for group in GROUPS:
                examples = random.Random(1).sample(train[group], k)
                others = [t for g, posts in train.items() for t in posts if t not in examples]
                off = [t for g, posts in train.items() if g != group for t in posts]
                on = [t for t in train[group] if t not in examples]
                crawled = random.Random(3).sample(on, CRAWLED_ON_TOPIC)
                crawled += random.Random(4).sample(off, UNLABELLED - CRAWLED_ON_TOPIC)
                backgrounds = (
                    ["webkb", "wiki"],
                    ["webkb", "wiki", _folder(root, f"posts-{group}-{k}", random.Random(2).sample(others, UNLABELLED))],
                    ["webkb", "wiki", _folder(root, f"crawled-{group}-{k}", crawled)],
                )
                row = []
                for sources in backgrounds:
                    background = read_background(sources, 3000, 0)
                    positives = [html_to_text(p.encode()) for p in examples]
                    critic = train_examples_critic(positives, background, name="t", seed=0).critic
                    row.append(_figures(critic, test, group))
                print(f"| {group} | {k} | " + " | ".join(row) + " |", flush=True)


CRAWL_GROUPS = ("sci.space", "rec.autos", "talk.politics.guns")
FORUM = "http://forum.test"
POSTS_PER_GROUP = 50


def _forum(posts: dict[str, list[str]]) -> tuple[ReplayStore, dict[str, str]]:
    """The forum web of ``posts`` (test posts by group) and each post's group by URL."""
    rng = random.Random(0)
    groups = sorted(posts)
    chosen = {g: rng.sample(posts[g], POSTS_PER_GROUP) for g in groups}
    every = [(g, i) for g in groups for i in range(POSTS_PER_GROUP)]
    store, group_of = ReplayStore(), {}

    def add(url: str, title: str, body: str, links: list[tuple[str, str]]) -> None:
        items = "".join(f'<li><a href="{u}">{html.escape(t)}</a></li>' for u, t in links)
        page = (
            f"<html><head><title>{html.escape(title)}</title></head><body><p><a href='{FORUM}/'>Forum</a></p>"
            f"<h1>{html.escape(title)}</h1>{body}<ul>{items}</ul></body></html>"
        )
        store.add(StoredResponse(url, 200, [("Content-Type", "text/html; charset=utf-8")], page.encode()))

    def post(g: str, i: int) -> str:
        return f"{FORUM}/{g}/{i}.html"

    add(f"{FORUM}/", "Forum", "<p>All groups</p>", [(f"{FORUM}/{g}/", g) for g in groups])
    for g in groups:
        add(f"{FORUM}/{g}/", g, "<p>Threads</p>", [(post(g, i), f"post {i}") for i in range(POSTS_PER_GROUP)])
        for i, text in enumerate(chosen[g]):
            links = [(post(g, j), f"related {j}") for j in rng.sample(range(POSTS_PER_GROUP), 3)]
            links += [(post(h, j), f"see also {j}") for h, j in rng.sample(every, 3)]
            add(post(g, i), f"{g} post {i}", f"<pre>{html.escape(text)}</pre>", [*links, (f"{FORUM}/{g}/", "back")])
            group_of[post(g, i)] = g
    return store, group_of


def crawls() -> None:
    train, test = _posts("20news-bydate-train"), _posts("20news-bydate-test")
    store, group_of = _forum(test)
    print("| newsgroup | strategy | background | its posts in 100 / 250 pages | judged relevant of 250 |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp, ReplayServer(store) as server:
        root = Path(tmp)
        for group in CRAWL_GROUPS:
            examples = _folder(root, f"examples-{group}", random.Random(1).sample(train[group], 20))

            def crawl(name: str, *args: str, examples: str = examples) -> Path:
                db = root / f"{name}.sqlite"
                command = [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", f"examples={examples}"]
                command += ["-a", f"seeds={FORUM}/", "-a", f"db={db}", "-s", "AUTOTHROTTLE_ENABLED=False"]
                command += ["-s", "DOWNLOAD_DELAY=0", "-s", f"FOCUSED_EXAMPLES_CACHE={root / 'cache'}", *args]
                env = dict(os.environ, http_proxy=server.proxy_url)
                subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, check=True)
                return db

            survey = crawl(f"bfs-{group}", "-a", "max_pages=400", "-a", "strategy=bfs")
            for strategy in ("apprentice", "baseline"):
                for background in ("webkb,wiki", f"webkb,wiki,{survey}"):
                    db = crawl(
                        f"{group}-{strategy}-{len(background)}", "-a", "max_pages=250", "-a", f"strategy={strategy}",
                        "-s", f"FOCUSED_EXAMPLES_BACKGROUND={background}",
                    )  # fmt: skip
                    conn = sqlite3.connect(db)
                    rows = conn.execute("SELECT url, relevance FROM pages ORDER BY fetch_order").fetchall()
                    conn.close()
                    hits = [group_of.get(url) == group for url, _ in rows]
                    judged = sum(relevance >= 0.5 for _, relevance in rows)
                    shown = "default" if background == "webkb,wiki" else "+ the breadth-first crawl"
                    print(f"| {group} | {strategy} | {shown} | {sum(hits[:100])} / {sum(hits[:250])} | {judged} |")


if __name__ == "__main__":
    crawls() if "--crawls" in sys.argv[1:] else main()
