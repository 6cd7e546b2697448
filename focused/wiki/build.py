"""The Wikipedia benchmark track: the rendered web, the cross-fitted critic and the seeds, built or reused.

:mod:`focused.wiki.web` renders the site and writes its WARC, labels and link
graph; :mod:`focused.wiki.critic` trains the critics; :mod:`focused.wiki.graph`
holds the link graph and the seed rule. Their public names stay importable from
here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from focused.corpora.wikispeedia import load_wikispeedia
from focused.learning.critic.crossfit import CrossFitCritic
from focused.wiki import render
from focused.wiki.critic import cross_validate, page_texts, train_wiki_critic
from focused.wiki.graph import (
    seed_articles,
)
from focused.wiki.web import (
    DEFAULT_OUT,
    build_wiki_web,
    default_archive,
    outputs_fresh,
    read_manifest,
    web_up_to_date,
    write_manifest,
)

__all__ = ["DEFAULT_TOPICS", "WikiTrack", "prepare_wiki_track"]

#: Benchmark topics: one per subtree, neither a whole subject nor a tiny class (paper §3.2).
DEFAULT_TOPICS = (
    "Science.Physics",
    "Science.Chemistry",
    "History.British_History",
    "Geography.African_Geography",
    "Everyday_life.Food_and_agriculture",
    "Music",
    "People.Artists",
    "Design_and_Technology.Railway_transport",
)
CRITIC_FOLDS = 5

#: Bump when the critic recipe (or the seed rule) changes: cached critics of another version are retrained.
TRACK_VERSION = 1

CRITIC_NAME = "wiki-critic-crossfit.npz"
TRACK_MANIFEST = "wiki.track.json"


@dataclass(frozen=True)
class WikiTrack:
    """What the benchmark needs for the Wikipedia track (see :func:`prepare_wiki_track`)."""

    warc: Path
    labels: Path
    critic: Path  #: the 5-fold cross-fitted critic
    topics: list[str]
    seeds: dict[str, list[str]]  #: topic -> seed URLs
    links: Path  #: the article link graph (:func:`read_link_graph`)


def prepare_wiki_track(
    out_dir: str | Path = DEFAULT_OUT,
    archive: str | Path | None = None,
    force: bool = False,
    topics: Sequence[str] = DEFAULT_TOPICS,
    url_features: bool = True,
    verdict_head: bool = False,
) -> WikiTrack:
    """Build (or reuse) the web, the cross-fitted critic and the seeds in ``out_dir``.

    The web is rebuilt when missing, older than the archive or of another
    :data:`~focused.wiki.web.SITE_VERSION`; the critic and seeds when missing, older, of another
    :data:`TRACK_VERSION` or topics, or when the web was rebuilt; all with ``force``.
    Every topic must resolve in the critic (``UnknownTopicError`` otherwise). With
    ``url_features`` the critic reads the articles' URL words too, with ``verdict_head`` its folds judge
    pages with a discriminative head (:mod:`focused.learning.critic.verdict_head`); each its own file and manifest.
    """
    archive = Path(archive) if archive is not None else default_archive()
    out = Path(out_dir)
    wiki = load_wikispeedia(archive) if force or not web_up_to_date(out, archive) else None
    web = build_wiki_web(archive, out, force=force, wiki=wiki)
    suffix = ("-urls" if url_features else "") + ("-head" if verdict_head else "")
    critic_path = out / CRITIC_NAME.replace(".npz", f"{suffix}.npz")
    manifest = out / TRACK_MANIFEST.replace(".json", f"{suffix}.json")
    track = read_manifest(manifest)
    wanted = {"version": TRACK_VERSION, "topics": list(topics)}
    stale = web.built or not outputs_fresh([critic_path, manifest], archive)
    if force or stale or any(track.get(k) != v for k, v in wanted.items()):
        wiki = wiki or load_wikispeedia(archive)
        texts = page_texts(wiki)
        critic = train_wiki_critic(
            wiki, folds=CRITIC_FOLDS, texts=texts, url_features=url_features, verdict_head=verdict_head
        )
        assert isinstance(critic, CrossFitCritic)
        for topic in topics:
            critic.resolve_topic(topic)
        accuracy = cross_validate(wiki, critic, texts=texts)
        critic.metadata["crossfit"]["accuracy"] = accuracy
        if verdict_head:
            critic.metadata["crossfit"]["verdict_accuracy"] = cross_validate(wiki, critic, texts=texts, verdicts=True)
        critic.save(critic_path)
        seeds = {t: [render.article_url(a) for a in seed_articles(wiki, t)] for t in topics}
        track = {**wanted, "seeds": seeds, "crossfit_accuracy": accuracy}
        write_manifest(manifest, track)
    return WikiTrack(web.warc, web.labels, critic_path, list(track["topics"]), track["seeds"], web.links)
