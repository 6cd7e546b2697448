"""The Wikispeedia article link graph, reachability, ground truth and seeds.


Seeds (fixed rule): a topic's seeds are its 3 articles with the most in-links from
other articles of the topic, ties broken by name. The default model's
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from focused.corpora.wikispeedia import Wikispeedia
from focused.wiki import render
from focused.wiki.taxonomy import Taxonomy

SEEDS_PER_TOPIC = 3


def link_graph(wiki: Wikispeedia) -> dict[str, list[str]]:
    """The article link graph by URL."""
    return {render.article_url(s): [render.article_url(t) for t in ts] for s, ts in wiki.links.items()}


def read_link_graph(path: str | Path) -> dict[str, list[str]]:
    """Read ``wiki.links.tsv`` back into ``source URL -> target URLs``."""
    graph: dict[str, list[str]] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        source, _, target = line.partition("\t")
        if target:
            graph.setdefault(source, []).append(target)
    return graph


def reachable_from(seeds: Iterable[str], links: Mapping[str, Sequence[str]]) -> set[str]:
    """Every node reachable from ``seeds`` by following ``links`` (seeds included)."""
    seen = set(seeds)
    stack = list(seen)
    while stack:
        for target in links.get(stack.pop(), ()):
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


def in_topic(categories: Iterable[str], topic: str) -> bool:
    """Ground truth: any category path equals ``topic`` or lies below it (``Topic.matches``)."""
    return any(c == topic or c.startswith(topic + ".") for c in categories)


def _top_linked(wiki: Wikispeedia, members: set[str], n: int) -> list[str]:
    inside = {name: 0 for name in members}
    for source in members:
        for target in wiki.links[source]:
            if target in inside:
                inside[target] += 1
    return sorted(inside, key=lambda name: (-inside[name], name))[:n]


def seed_articles(wiki: Wikispeedia, topic: str, n: int = SEEDS_PER_TOPIC) -> list[str]:
    """The topic's ``n`` articles with the most in-topic in-links, ties by name."""
    members = {name for name, cats in wiki.categories.items() if in_topic(cats, topic)}
    return _top_linked(wiki, members, n)


def class_examples(wiki: Wikispeedia, taxonomy: Taxonomy, n: int = SEEDS_PER_TOPIC) -> dict[str, list[str]]:
    """Each class's seed URLs (the seed rule applied to the class's articles)."""
    members: dict[str, set[str]] = {}
    for name, cats in wiki.categories.items():
        for cls in taxonomy.classes_of(cats):
            members.setdefault(cls, set()).add(name)
    return {cls: [render.article_url(a) for a in _top_linked(wiki, m, n)] for cls, m in sorted(members.items())}
