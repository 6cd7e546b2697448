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
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from focused.bench.graph import write_link_graph
from focused.bench.metrics import canonical_url, reachable
from focused.replay.labels import write_labels
from focused.replay.load import open_store
from focused.replay.store import ReplayStore
from focused.strategies.oracles import load_graph

if TYPE_CHECKING:
    from focused.learning.critic.naive_bayes import Critic

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


@dataclass(frozen=True)
class ExtraJob:
    """A crawl beyond the track's cases × strategies: ``strategy`` on ``case`` (its own critic), reported as
    ``label`` (the examples track's ``taxonomy`` and ``examples-kK`` crawls; ``repeat`` is the sample)."""

    case: Case
    label: str
    strategy: str
    repeat: int


@dataclass
class Track:
    name: str
    store: ReplayStore
    labels: Path
    cases: list[Case] = field(default_factory=list)
    #: The strategies run on every case (``None``: the bench's ``--strategies``).
    strategies: tuple[str, ...] | None = None
    extra: list[ExtraJob] = field(default_factory=list)
    #: Figures of the track's critics per case (``bench.json`` and a table of ``bench.md``).
    figures: dict[str, Any] = field(default_factory=dict)

    def canonical(self, url: str) -> str:
        return canonical_url(self.store, url)


def _write_labels(store: ReplayStore, path: Path) -> None:
    if not path.exists():
        write_labels(path, ((u, store.labels[u], store.groups.get(u)) for u in sorted(store.labels)))


class TrackError(ValueError):
    """A track cannot be built from what was asked (unknown group or topic, no groups): one line to the user."""


class NoGroupsError(TrackError):
    """The labels have no group column, so there is no group to hold out (the cross-fitted protocol applies)."""


def department_page(store: ReplayStore, university: str) -> str:
    """The university's department home page (the shortest such URL)."""
    pages = [
        u for u, label in store.labels.items() if "department" in label.split("|") and store.groups.get(u) == university
    ]
    if not pages:
        raise TrackError(f"no department page for {university!r} in the archive")
    return min(pages, key=lambda u: (len(u), u))


def group_seed(store: ReplayStore, group: str, graph: tuple[list[str], Iterable[int], Iterable[int]]) -> str:
    """The seed of a held-out group (the documented rule).

    The group's page labelled ``department`` with the shortest URL when the
    labels have one (WebKB: the department home page); otherwise the group's
    page with the most in-links from the group's own pages, ties by the
    shortest URL, then alphabetically. ``graph`` is the confined store's link graph.
    """
    if any("department" in label.split("|") and store.groups.get(u) == group for u, label in store.labels.items()):
        return department_page(store, group)
    urls, src, dst = graph
    indegree = [0] * len(urls)
    for i, j in zip(src, dst, strict=True):
        if i != j:
            indegree[int(j)] += 1
    if not urls:
        raise TrackError(f"group {group!r} has no page the replay can serve")
    best = min(range(len(urls)), key=lambda i: (-indegree[i], len(urls[i]), urls[i]))
    return urls[best]


def topic_seeds(members: set[str], graph: Mapping[str, Sequence[str]], n: int = 3) -> tuple[str, ...]:
    """A topic's seeds (the documented rule): its ``n`` pages with the most in-links from other pages of
    the topic, ties by URL. ``members`` and ``graph`` use the same URL spelling."""
    count = dict.fromkeys(members, 0)
    for source in members:
        for target in set(graph.get(source, ())):
            if target in count and target != source:
                count[target] += 1
    return tuple(sorted(count, key=lambda u: (-count[u], u))[:n])


def store_training_set(store: ReplayStore, groups: Collection[str]) -> tuple[list[str], list[str], list[str]]:
    """The visible texts, first labels and URLs of the labelled, fetched (200) pages of ``groups``."""
    from focused.page.text import content_type_charset, html_to_text

    texts, labels, urls = [], [], []
    for response in store.responses():
        if response.status != 200 or store.group_of(response.url) not in groups:
            continue
        label = store.label_of(response.url)
        if not label:
            continue
        texts.append(html_to_text(response.body, content_type_charset(response.header("Content-Type"))))
        labels.append(label.split("|")[0])
        urls.append(response.url)
    return texts, labels, urls


def train_store_critic(store: ReplayStore, groups: Collection[str], *, url_features: bool = True, **kw: Any) -> Critic:
    """A page critic trained on the labelled, fetched (200) pages of ``groups``; a page's first label is its class.

    With ``url_features`` it learns from each page's URL words too (:mod:`focused.learning.critic.urlwords`).
    """
    from focused.learning.critic.naive_bayes import Critic

    texts, labels, urls = store_training_set(store, groups)
    if len(set(labels)) < 2:
        raise TrackError(f"the critic needs labelled pages of two classes or more in {', '.join(sorted(groups))}")
    meta = {"bench": "held-out groups", "groups": sorted(groups)}
    return Critic.train(texts, labels, urls=urls if url_features else None, metadata=meta, **kw)


def holdout_track(
    name: str,
    archive: Path,
    cache: Path,
    *,
    labels: Path | None = None,
    hold_out: Sequence[str] | None = None,
    topics: Sequence[str] | None = None,
    critic_urls: bool = True,
    critic_head: bool = False,
) -> Track:
    """A leave-one-group-out track on any WebKB-layout archive or WARC with a labels file.

    For each held-out group the critic is trained on every *other* group's
    labelled pages, and each topic's crawl is confined to the held-out group
    (the replay 404s the rest) from the seed :func:`group_seed` picks. Defaults:
    the WebKB universities and page types when the archive has them. Labels without groups (and no
    ``hold_out``) raise :class:`NoGroupsError`: :func:`focused.bench.crossfit.labelled_track` then runs the
    wiki track's cross-fitted protocol instead. With
    ``critic_urls`` the critics have URL features (:mod:`focused.learning.critic.urlwords`), with ``critic_head``
    a discriminative verdict (:mod:`focused.learning.critic.verdict_head`).
    Raises :class:`TrackError` naming what is wrong and what is valid.
    """
    from focused.learning.critic.load import load_critic
    from focused.learning.critic.topics import UnknownTopicError
    from focused.replay.files import StoreError

    cache.mkdir(parents=True, exist_ok=True)
    try:
        store = open_store(archive, labels=labels)
    except StoreError as exc:
        raise TrackError(str(exc)) from exc
    groups = sorted(set(store.groups.values()))
    if not groups:
        if hold_out:
            raise TrackError(
                f"--hold-out needs groups, and {labels.name if labels else archive.name} has no group column "
                "(url<TAB>label<TAB>group); without --hold-out the track cross-fits its critic instead"
            )
        raise NoGroupsError(f"{labels.name if labels else archive.name} has no group column to hold out")
    if hold_out is None:
        if not set(WEBKB_UNIVERSITIES) <= set(groups):
            raise TrackError(f"give the groups to hold out (--hold-out); groups in {archive.name}: {', '.join(groups)}")
        hold_out = WEBKB_UNIVERSITIES
    unknown = [g for g in hold_out if g not in groups]
    if unknown:
        raise TrackError(f"unknown group(s) {', '.join(unknown)} in {archive.name}; valid: {', '.join(groups)}")
    if len(groups) < 2:
        raise TrackError(f"{archive.name} has one group ({groups[0]}): nothing left to train the critic on")
    track = Track(name, store, cache / f"{name}.labels.tsv")
    _write_labels(store, track.labels)
    for group in hold_out:
        suffix = ("-urls" if critic_urls else "") + ("-head" if critic_head else "")
        model = cache / f"critic-{name}-without-{group}{suffix}.npz"
        if not model.exists():
            others = [g for g in groups if g != group]
            logger.info("training the critic without %s (on %s)", group, ", ".join(others))
            train_store_critic(store, others, url_features=critic_urls, verdict_head=critic_head).save(model)
        critic = load_critic(model)
        wanted = tuple(topics) if topics else tuple(t for t in WEBKB_TARGETS if t in critic.topics())
        if not wanted:
            raise TrackError(f"give the topics (--topics); valid: {', '.join(critic.topics())}")
        confined = store.confined([group])
        case_labels = cache / f"{name}.{group}.labels.tsv"
        _write_labels(confined, case_labels)
        graph_path = cache / f"{name}.{group}.graph.npz"
        write_link_graph(confined, graph_path)
        seed = group_seed(confined, group, load_graph(graph_path))
        reach = reachable(confined, [seed])
        for target in wanted:
            try:
                topic = critic.resolve_topic(target)
            except UnknownTopicError as exc:
                raise TrackError(f"unknown topic {target!r}; valid: {', '.join(critic.topics())}") from exc
            on_topic = frozenset(
                url for url in reach if (label := store.label_of(url)) is not None and topic.matches(label)
            )
            track.cases.append(
                Case(
                    name,
                    group,
                    target,
                    (seed,),
                    model,
                    on_topic,
                    len(reach),
                    frozenset([group]),
                    case_labels,
                    graph_path,
                )
            )
        logger.info("%s: %d pages reachable from %s", group, len(reach), seed)
    return track


def webkb_track(
    archive: Path,
    cache: Path,
    *,
    universities: tuple[str, ...] = WEBKB_UNIVERSITIES,
    targets: tuple[str, ...] = WEBKB_TARGETS,
    critic_urls: bool = True,
    critic_head: bool = False,
) -> Track:
    """The leave-one-university-out WebKB track (:func:`holdout_track` on the WebKB archive)."""
    return holdout_track(
        "webkb", archive, cache, hold_out=universities, topics=targets, critic_urls=critic_urls, critic_head=critic_head
    )


def wiki_track(
    cache: Path, *, topics: Sequence[str] | None = None, critic_urls: bool = True, critic_head: bool = False
) -> Track:
    """The Wikipedia track: topics of the category tree on the rendered site.

    The critic is cross-fitted (a page is judged by the fold that did not
    train on it), so the crawl is not confined. Any topic of the critic's
    taxonomy is accepted; its seeds follow :func:`topic_seeds` on the article
    graph (for the default topics, the seeds the track stored by the same rule).
    With ``critic_urls`` the critic has URL features, with ``critic_head`` a discriminative verdict.
    """
    from focused.learning.critic.load import load_critic
    from focused.learning.critic.topics import UnknownTopicError
    from focused.wiki.build import prepare_wiki_track
    from focused.wiki.graph import reachable_from, read_link_graph

    wiki = prepare_wiki_track(cache / "wiki", url_features=critic_urls, verdict_head=critic_head)
    store = open_store(wiki.warc, labels=wiki.labels)
    track = Track("wiki", store, wiki.labels)
    critic = load_critic(wiki.critic)
    graph = read_link_graph(wiki.links)  # the article graph: navigation links lead to no article
    web_graph = write_link_graph(store, cache / "wiki" / "wiki.graph.npz")
    articles = set(graph) | {t for ts in graph.values() for t in ts}
    for name in topics or tuple(wiki.topics):
        try:
            topic = critic.resolve_topic(name)
        except UnknownTopicError as exc:
            raise TrackError(f"unknown topic {name!r}; valid: {', '.join(critic.topics())}") from exc
        seeds = tuple(wiki.seeds.get(name, ()))
        if not seeds:
            members = {u for u in articles if (label := store.label_of(u)) is not None and topic.matches(label)}
            seeds = topic_seeds(members, graph)
            if not seeds:
                raise TrackError(f"topic {name!r} has no page in the Wikipedia track to seed from")
        reach = {track.canonical(url) for url in reachable_from(seeds, graph)}
        on_topic = frozenset(
            url for url in reach if (label := store.label_of(url)) is not None and topic.matches(label)
        )
        track.cases.append(
            Case("wiki", name.split(".")[0], name, seeds, wiki.critic, on_topic, len(reach), graph=web_graph)
        )
    return track
