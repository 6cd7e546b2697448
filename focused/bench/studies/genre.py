"""Examples unlike the background: critics from k posts of a newsgroup, with and without pages of their kind.

The shipped background is web pages and encyclopedia articles; 20 Newsgroups posts are neither. For each of a
few newsgroups, k posts of its training split are the examples of a critic from examples
(:func:`~focused.core.examples.read_background` and
:func:`~focused.learning.critic.examples.train_examples_critic`, as ``-a examples=`` trains it), against three
backgrounds: the default one; the default one and a folder of 1,000 other training posts (random, as a
breadth-first crawl of a forum would fetch them); the default one and 1,000 posts of which 300 are the topic's (as
a focused first crawl would fetch them). Each critic judges 60 test posts of each of the 20 groups. Prints one
Markdown row per newsgroup and k: on-topic accepted / off-topic accepted / average precision. A study, never
asserted (docs/topic.md, "Examples unlike the background")::

    FOCUSED_CORPORA=../shared/corpora python -m focused.bench.studies.genre
"""

from __future__ import annotations

import random
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

from focused.core.examples import read_background
from focused.corpora import corpora_dir
from focused.corpora.dirtree import iter_dirtree
from focused.learning.critic.examples import train_examples_critic
from focused.learning.critic.naive_bayes import Critic
from focused.page.text import html_to_text

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


if __name__ == "__main__":
    main()
