"""The Wikipedia track's protocol on any labelled web: a cross-fitted critic, topics from category paths.

``focused bench --tracks wiki --archive X.warc.gz --labels L.tsv`` (and the held-out-group track when
its labels have no group column) runs what the wiki track runs on the rendered Wikispeedia, on any
stored web whose labels are category paths (``url<TAB>Science.Physics|History[<TAB>group]``):

- the classes are the labels' category paths cut at level 2 (:mod:`focused.wiki.taxonomy`); a page
  trains once per distinct class, and the wiki web's ``Navigation`` / ``Uncategorised`` labels name no
  category (those pages are crawled, never trained on, relevant to no topic);
- the critic is cross-fitted (:class:`~focused.learning.critic.crossfit.CrossFitCritic`, 5 folds by URL
  hash, the wiki critic's smoothing and features), so a page is judged by a model that never saw it and
  the crawl is not confined;
- a topic is any class or prefix of the category paths; the default topics are the wiki track's eight
  when the labels have them all, else the eight biggest classes; a topic's seeds are its 3 pages with the
  most in-links from its own pages (:func:`~focused.bench.tracks.topic_seeds`) in the web's link graph.

The critic is cached in the track's folder, keyed by the labels' content and the archive's size and
time, so a second run reuses it.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from focused.bench.graph import write_link_graph
from focused.bench.metrics import reachable
from focused.bench.tracks import Case, NoGroupsError, Track, TrackError, holdout_track, topic_seeds
from focused.replay.labels import write_labels
from focused.replay.load import open_store
from focused.replay.store import ReplayStore
from focused.strategies.oracles import load_graph

logger = logging.getLogger(__name__)

#: Folds of the cross-fitted critic (the wiki track's).
FOLDS = 5
#: Labels that name no category (the rendered Wikispeedia's navigation pages and uncategorised articles).
NO_CATEGORY = frozenset({"Navigation", "Uncategorised"})
#: Default topics when the labels do not hold all of the wiki track's: this many of the biggest classes.
DEFAULT_TOPIC_COUNT = 8
#: Bump when the critic recipe changes: cached critics of another version are retrained.
VERSION = 1


def page_categories(store: ReplayStore) -> dict[str, tuple[str, list[str]]]:
    """``served URL -> (visible text, category paths)`` of each fetched (200) HTML page with a category."""
    from focused.page.text import content_type_charset, html_to_text

    out: dict[str, tuple[str, list[str]]] = {}
    for response in store.responses():
        if response.status != 200 or "html" not in (response.header("Content-Type") or "text/html"):
            continue
        label = store.label_of(response.url)
        categories = [c.strip() for c in (label or "").split("|") if c.strip() and c.strip() not in NO_CATEGORY]
        if categories:
            body = html_to_text(response.body, content_type_charset(response.header("Content-Type")))
            out[response.url] = (body, categories)
    return out


def _fingerprint(archive: Path, labels: Path | None) -> str:
    digest = hashlib.sha256(f"v{VERSION}".encode())
    files = sorted(archive.iterdir()) if archive.is_dir() else [archive]
    for path in files:
        stat = path.stat()
        digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    if labels is not None:
        digest.update(labels.read_bytes())
    return digest.hexdigest()


def train_crossfit_critic(
    pages: dict[str, tuple[str, list[str]]], *, url_features: bool = True, verdict_head: bool = False
) -> Any:
    """The cross-fitted critic of the pages' classes (the wiki critic's recipe), with each class's seeds."""
    from focused.learning.critic.crossfit import CrossFitCritic
    from focused.wiki.critic import DEFAULT_ALPHA, DEFAULT_N_FEATURES
    from focused.wiki.taxonomy import build_taxonomy

    taxonomy = build_taxonomy({url: cats for url, (_, cats) in pages.items()})
    if len(taxonomy.classes) < 2:
        valid = ", ".join(taxonomy.classes) or "none"
        raise TrackError(f"the critic needs pages of two categories or more; the labels have {valid}")
    texts, classes, urls = [], [], []
    for url, (text, cats) in pages.items():
        for cls in taxonomy.classes_of(cats):
            texts.append(text)
            classes.append(cls)
            urls.append(url)
    meta = {
        "bench": "cross-fitted",
        "taxonomy": {"level": taxonomy.level, "min_size": taxonomy.min_size, "merged": dict(taxonomy.merged)},
    }
    return CrossFitCritic.train(
        texts,
        classes,
        urls,
        k=FOLDS,
        metadata=meta,
        url_features=url_features,
        alpha=DEFAULT_ALPHA,
        n_features=DEFAULT_N_FEATURES,
        verdict_head=verdict_head,
    )


def default_topics(critic: Any, pages: dict[str, tuple[str, list[str]]]) -> tuple[str, ...]:
    """The wiki track's topics when the critic has them all, else its biggest classes (ties by name)."""
    from focused.learning.critic.topics import UnknownTopicError
    from focused.wiki.build import DEFAULT_TOPICS

    try:
        for name in DEFAULT_TOPICS:
            critic.resolve_topic(name)
        return DEFAULT_TOPICS
    except UnknownTopicError:
        pass
    sizes = {cls: 0 for cls in critic.classes}
    for _, cats in pages.values():
        for cls in critic.classes:
            if any(c == cls or c.startswith(cls + ".") for c in cats):
                sizes[cls] += 1
    return tuple(sorted(sizes, key=lambda c: (-sizes[c], c))[:DEFAULT_TOPIC_COUNT])


def crossfit_track(
    name: str,
    archive: Path,
    cache: Path,
    *,
    labels: Path | None = None,
    topics: Sequence[str] | None = None,
    critic_urls: bool = True,
    critic_head: bool = False,
) -> Track:
    """The wiki track's protocol on a labelled web (see the module docstring).

    Raises :class:`~focused.bench.tracks.TrackError` (one line naming what is valid) for an archive
    that cannot be read, labels that give no page a category, or a topic that is no category path.
    """
    from focused.learning.critic.load import load_critic
    from focused.learning.critic.topics import UnknownTopicError
    from focused.replay.files import StoreError

    cache.mkdir(parents=True, exist_ok=True)
    try:
        store = open_store(archive, labels=labels)
    except StoreError as exc:
        raise TrackError(str(exc)) from exc
    if not store.labels:
        raise TrackError(f"{archive.name} has no labels: give --labels FILE of lines url<TAB>categories[<TAB>group]")
    pages = page_categories(store)
    where = labels.name if labels is not None else archive.name
    if not pages:
        raise TrackError(
            f"no page of {archive.name} has a category in {where}: labels are url<TAB>categories[<TAB>group], "
            "category paths such as Science.Physics joined by '|'"
        )
    if len(pages) < 2 * FOLDS:
        raise TrackError(f"{len(pages)} pages with a category in {where}: the {FOLDS}-fold critic needs {2 * FOLDS}")
    suffix = ("-urls" if critic_urls else "") + ("-head" if critic_head else "")
    model = cache / f"critic-{name}-crossfit{suffix}.npz"
    manifest = model.with_suffix(".json")
    key = _fingerprint(archive, labels)
    try:
        fresh = model.exists() and json.loads(manifest.read_text()).get("key") == key
    except (OSError, ValueError):
        fresh = False
    if not fresh:
        logger.info("training the %d-fold critic of %s on %d pages", FOLDS, name, len(pages))
        train_crossfit_critic(pages, url_features=critic_urls, verdict_head=critic_head).save(model)
        manifest.write_text(json.dumps({"key": key, "pages": len(pages)}))
    critic = load_critic(model)
    track = Track(name, store, cache / f"{name}.labels.tsv")
    write_labels(track.labels, ((u, store.labels[u], store.groups.get(u)) for u in sorted(store.labels)))
    graph_path = cache / f"{name}.graph.npz"
    if not fresh and graph_path.exists():
        graph_path.unlink()
    write_link_graph(store, graph_path)
    urls, src, dst = load_graph(graph_path)
    graph: dict[str, list[str]] = {}
    for i, j in zip(src, dst, strict=True):
        graph.setdefault(urls[int(i)], []).append(urls[int(j)])
    for topic_name in tuple(topics) if topics else default_topics(critic, pages):
        try:
            topic = critic.resolve_topic(topic_name)
        except UnknownTopicError as exc:
            raise TrackError(f"{exc} (the category paths of {where}, cut at level 2)") from exc
        members = {u for u in urls if (label := store.label_of(u)) is not None and topic.matches(label)}
        seeds = topic_seeds(members, graph)
        if not seeds:
            raise TrackError(f"topic {topic_name!r} has no page in {archive.name} to seed from")
        reach = reachable(store, seeds)
        on_topic = frozenset(u for u in reach if (label := store.label_of(u)) is not None and topic.matches(label))
        track.cases.append(
            Case(name, topic_name.split(".")[0], topic_name, seeds, model, on_topic, len(reach), graph=graph_path)
        )
        logger.info("%s %s: seeds %s, %d pages reachable", name, topic_name, ", ".join(seeds), len(reach))
    return track


def labelled_track(
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
    """The held-out-group track (:func:`focused.bench.tracks.holdout_track`) of a labelled archive, or, when
    its labels have no groups and no ``hold_out`` is asked, the wiki track's cross-fitted protocol
    (:func:`crossfit_track`)."""
    try:
        return holdout_track(
            name,
            archive,
            cache,
            labels=labels,
            hold_out=hold_out,
            topics=topics,
            critic_urls=critic_urls,
            critic_head=critic_head,
        )
    except NoGroupsError:
        logger.info("%s: no groups to hold out; cross-fitting the critic (the wiki track's protocol)", name)
        return crossfit_track(
            name, archive, cache, labels=labels, topics=topics, critic_urls=critic_urls, critic_head=critic_head
        )
