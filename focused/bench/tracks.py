"""Benchmark tracks: a replayed web, its labels, and the crawl cases to run on it.

A *case* is one (topic, seeds, critic) crawl setting; every strategy is run
on every case. The WebKB track is leave-one-university-out: for each of
cornell, texas and washington, the critic is trained on the other two
universities plus ``misc`` and the crawl starts from the held-out university's
department page. The crawl is *confined* to the held-out university: the
replay serves it no page of the groups the critic was trained on (they are
404s), so its harvest counts only pages the critic never saw.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from focused.bench.graph import write_link_graph
from focused.bench.metrics import canonical_url, reachable
from focused.replay import ReplayStore, open_store, write_labels

logger = logging.getLogger(__name__)

WEBKB_UNIVERSITIES = ("cornell", "texas", "washington")
WEBKB_TARGETS = ("course", "student", "faculty", "project")


@dataclass(frozen=True)
class Case:
    """One crawl setting of a track."""

    track: str
    group: str  # e.g. the held-out university, or the topic's subject
    topic: str
    seeds: tuple[str, ...]
    model: Path
    targets: frozenset[str]  # canonical URLs of on-topic pages reachable from the seeds
    reachable: int
    #: Groups whose pages the replay serves to this case (``None``: the whole web).
    confine: frozenset[str] | None = None
    #: Ground-truth labels the crawl may read (the oracles), confined like the web.
    labels: Path | None = None
    #: The link graph of the web the case crawls (for ``oracle-lookahead``).
    graph: Path | None = None


@dataclass
class Track:
    name: str
    store: ReplayStore
    labels: Path
    cases: list[Case] = field(default_factory=list)

    def canonical(self, url: str) -> str:
        return canonical_url(self.store, url)


def _write_labels(store: ReplayStore, path: Path) -> None:
    if not path.exists():
        write_labels(path, ((u, store.labels[u], store.groups.get(u)) for u in sorted(store.labels)))


def department_page(store: ReplayStore, university: str) -> str:
    """The university's department home page (the shortest such URL)."""
    pages = [
        u for u, label in store.labels.items() if "department" in label.split("|") and store.groups.get(u) == university
    ]
    if not pages:
        raise ValueError(f"no department page for {university!r} in the archive")
    return min(pages, key=lambda u: (len(u), u))


def webkb_track(
    archive: Path,
    cache: Path,
    *,
    universities: tuple[str, ...] = WEBKB_UNIVERSITIES,
    targets: tuple[str, ...] = WEBKB_TARGETS,
) -> Track:
    """Build (or reuse from ``cache``) the leave-one-university-out WebKB track."""
    from focused.learning.critic import load_critic
    from focused.training import train_webkb_critic

    cache.mkdir(parents=True, exist_ok=True)
    store = open_store(archive)
    track = Track("webkb", store, cache / "webkb.labels.tsv")
    _write_labels(store, track.labels)
    for uni in universities:
        model = cache / f"critic-webkb-without-{uni}.npz"
        if not model.exists():
            others = sorted({g for g in store.groups.values()} - {uni})
            logger.info("training the critic without %s (on %s)", uni, ", ".join(others))
            train_webkb_critic(archive, exclude=[uni]).save(model)
        critic = load_critic(model)
        seed = department_page(store, uni)
        confined = store.confined([uni])
        labels = cache / f"webkb.{uni}.labels.tsv"
        _write_labels(confined, labels)
        reach = reachable(confined, [seed])
        graph = write_link_graph(confined, cache / f"webkb.{uni}.graph.npz")
        for target in targets:
            topic = critic.resolve_topic(target)
            on_topic = frozenset(
                url for url in reach if (label := store.label_of(url)) is not None and topic.matches(label)
            )
            track.cases.append(
                Case("webkb", uni, target, (seed,), model, on_topic, len(reach), frozenset([uni]), labels, graph)
            )
        logger.info("%s: %d pages reachable from %s", uni, len(reach), seed)
    return track


def wiki_track(cache: Path, *, topics: tuple[str, ...] | None = None) -> Track:
    """The Wikipedia track: topics of the category tree on the rendered site."""
    from focused.learning.critic import load_critic
    from focused.wiki.build import prepare_wiki_track, reachable_from, read_link_graph

    wiki = prepare_wiki_track(cache / "wiki")
    store = open_store(wiki.warc, labels=wiki.labels)
    track = Track("wiki", store, wiki.labels)
    critic = load_critic(wiki.critic)
    graph = read_link_graph(wiki.links)  # the article graph: navigation links lead to no article
    web_graph = write_link_graph(store, cache / "wiki" / "wiki.graph.npz")
    for name in topics or tuple(wiki.topics):
        topic = critic.resolve_topic(name)
        seeds = tuple(wiki.seeds[name])
        reach = {track.canonical(url) for url in reachable_from(seeds, graph)}
        on_topic = frozenset(
            url for url in reach if (label := store.label_of(url)) is not None and topic.matches(label)
        )
        track.cases.append(
            Case("wiki", name.split(".")[0], name, seeds, wiki.critic, on_topic, len(reach), graph=web_graph)
        )
    return track
