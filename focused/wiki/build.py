"""Build the Wikispeedia benchmark: the rendered site, its labels and link graph, the critics.

:func:`build_wiki_web` renders the corpus (see :mod:`focused.wiki.render`) into
``out_dir``:

- ``wiki.warc.gz``: one ``response`` record per page (articles, main page, portals,
  about page) plus ``/robots.txt`` (allow all), ``Content-Type: text/html;
  charset=utf-8``, ``Date`` fixed at 1 July 2007;
- ``wiki.labels.tsv``: ``url, label, group``; an article's label is its full
  category paths joined by ``|`` (``Science.Physics.The_Planets``), so that any
  prefix topic can be checked with :meth:`~focused.learning.critic.Topic.matches`;
  group = the top-level subject of its first category. Navigation pages are
  labelled ``Navigation``, the 7 articles without a category ``Uncategorised``:
  both are relevant to no topic;
- ``wiki.links.tsv``: the article link graph as ``source URL<TAB>target URL`` (the
  navigation adds no article edges, so this is the site's article graph), for
  :func:`reachable_from`;
- ``wiki.web.json``: page and link counts.

The critic (:func:`train_wiki_critic`) trains on the rendered pages' visible text
(``html_to_text``: title, paragraphs, "See also" titles, navigation), what the
crawler sees, one copy per distinct class of an article (:mod:`focused.wiki.taxonomy`).
Top-1 accuracy with 5-fold cross-fitting over the 4,597 categorised articles, 105
classes (correct when the predicted class is one of the article's classes; on the
article's first class it is ~5 points lower); the standard error is ~0.7 point:

=================  ======  =====  =====  =====  =====  =====  =====  =====
features / alpha   0.003   0.01   0.02   0.03   0.05   0.08   0.1    0.3
=================  ======  =====  =====  =====  =====  =====  =====  =====
2**19                      0.624
2**18              0.603   0.632  0.642  0.643  0.636         0.605  0.485
2**17                      0.626         0.653  0.659  0.654  0.649
2**16                                           0.664
=================  ======  =====  =====  =====  =====  =====  =====  =====

The critic's default smoothing (0.1, chosen on 20 Newsgroups and WebKB) over-smooths
these 100-article classes; 2**17 features and alpha = 0.05 are the defaults here
(2**16 gains half a point, but the default model also scores the live web, whose
vocabulary is larger). Training on the plain article text instead of the rendered
page makes no difference (0.606 vs 0.605 at 2**18 / 0.1, 0.631 vs 0.632 at 0.01).
The accuracies are those of :meth:`Critic.predict` (length-normalised posteriors);
the raw naive Bayes argmax is more accurate at top-1 (0.729 against 0.659 at the
defaults) but ranks worse (topic AUC 0.87-1.00 against 0.96-1.00): the calibration
gives the class prior more weight, so big classes (``Science.Biology``, 698
articles) win more argmaxes. Ranking is much better than top-1 suggests: at the defaults the AUC of the topic's
posterior mass against ground truth is 0.96 (British_History) to 1.00 for the
benchmark topics, while recall at relevance > 0.5 ranges from 11% (People.Artists,
36 articles) to 90% (Science.Physics).

Seeds (fixed rule): a topic's seeds are its 3 articles with the most in-links from
other articles of the topic, ties broken by name. The default model's
``examples`` apply the same rule to each class.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from focused.corpora import corpora_dir
from focused.corpora.wikispeedia import Wikispeedia, load_wikispeedia
from focused.learning.critic import Critic
from focused.learning.crossfit import CrossFitCritic
from focused.learning.text import html_to_text
from focused.replay.labels import write_labels
from focused.replay.store import StoredResponse, atomic_output
from focused.replay.warc import write_warc
from focused.wiki import render
from focused.wiki.taxonomy import Taxonomy, build_taxonomy

__all__ = [
    "DEFAULT_OUT",
    "DEFAULT_TOPICS",
    "WikiTrack",
    "WikiWeb",
    "build_wiki_web",
    "cross_validate",
    "prepare_wiki_track",
    "reachable_from",
    "read_link_graph",
    "seed_articles",
    "train_wiki_critic",
]

logger = logging.getLogger(__name__)

#: Where generated data goes by default (relative to the working directory; git-ignored).
DEFAULT_OUT = Path("results/cache/wiki")
ARCHIVE_NAME = "wikispeedia.tar.gz"
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
SEEDS_PER_TOPIC = 3
CRITIC_FOLDS = 5
#: Naive Bayes smoothing and hashed features of the Wikipedia critic (sweep in the module docstring).
DEFAULT_ALPHA = 0.05
DEFAULT_N_FEATURES = 2**17
NAV_LABEL = "Navigation"
NO_CATEGORY_LABEL = "Uncategorised"
CAPTURE_DATE = "Sun, 01 Jul 2007 00:00:00 GMT"

#: Bump when the rendering (or the critic recipe) changes: cached outputs of another version are rebuilt.
SITE_VERSION = 1
TRACK_VERSION = 1

WARC_NAME = "wiki.warc.gz"
LABELS_NAME = "wiki.labels.tsv"
LINKS_NAME = "wiki.links.tsv"
WEB_MANIFEST = "wiki.web.json"
CRITIC_NAME = "wiki-critic-crossfit.npz"
TRACK_MANIFEST = "wiki.track.json"


def default_archive() -> Path:
    return corpora_dir() / ARCHIVE_NAME


# ---------------------------------------------------------------------- the site


def _response(url: str, body: bytes, content_type: str = "text/html; charset=utf-8") -> StoredResponse:
    headers = [("Date", CAPTURE_DATE), ("Content-Type", content_type), ("Content-Length", str(len(body)))]
    return StoredResponse(url, 200, headers, body)


def _node_counts(wiki: Wikispeedia) -> dict[str, int]:
    """Articles under each category node (any depth), for the portals."""
    counts: dict[str, int] = {}
    for cats in wiki.categories.values():
        nodes = {".".join(c.split(".")[:i]) for c in cats for i in range(1, c.count(".") + 2)}
        for node in nodes:
            counts[node] = counts.get(node, 0) + 1
    return counts


def site_pages(wiki: Wikispeedia) -> Iterator[StoredResponse]:
    """Yield every page of the rendered site: robots.txt, main, portals, about, articles."""
    site = render.Site.from_corpus(wiki)
    yield _response(render.BASE_URL + "/robots.txt", b"User-agent: *\nDisallow:\n", "text/plain; charset=utf-8")
    yield _response(render.MAIN_URL, render.render_main(site, sum(a.listed for a in wiki.articles.values())))
    counts = _node_counts(wiki)
    for subject in site.subjects:
        yield _response(render.portal_url(subject), render.render_portal(site, subject, counts))
    footer = {render.LICENCE_ARTICLE, render.DONATE_ARTICLE}
    extra = [a for a in wiki.articles.values() if not a.listed and a.name not in footer]
    yield _response(render.ABOUT_URL, render.render_about(site, extra))
    for name, article in wiki.articles.items():
        yield _response(render.article_url(name), render.render_article(site, article, wiki.links[name]))


def label_rows(wiki: Wikispeedia) -> Iterator[tuple[str, str, str]]:
    """``(url, label, group)`` for every HTML page (see the module docstring)."""
    site = render.Site.from_corpus(wiki)
    nav = [render.MAIN_URL, *map(render.portal_url, site.subjects), render.ABOUT_URL]
    for url in nav:
        yield url, NAV_LABEL, NAV_LABEL
    for name, cats in wiki.categories.items():
        if cats:
            yield render.article_url(name), "|".join(cats), cats[0].split(".")[0]
        else:
            yield render.article_url(name), NO_CATEGORY_LABEL, NO_CATEGORY_LABEL


@dataclass(frozen=True)
class WikiWeb:
    """The files of a built web and its counts (``built``: False when they were up to date)."""

    warc: Path
    labels: Path
    links: Path
    pages: int
    articles: int
    link_count: int
    built: bool


def _manifest(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    with atomic_output(path) as fh:
        fh.write((json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))


def _web_paths(out: Path) -> list[Path]:
    return [out / WARC_NAME, out / LABELS_NAME, out / LINKS_NAME, out / WEB_MANIFEST]


def _web_up_to_date(out: Path, archive: Path) -> bool:
    paths = _web_paths(out)
    return _fresh(paths, archive) and _manifest(paths[3]).get("version") == SITE_VERSION


def _fresh(outputs: Iterable[Path], source: Path) -> bool:
    outputs = list(outputs)
    if not all(p.exists() for p in outputs):
        return False
    return min(p.stat().st_mtime for p in outputs) >= source.stat().st_mtime


def build_wiki_web(
    archive: str | Path | None = None,
    out_dir: str | Path = DEFAULT_OUT,
    *,
    force: bool = False,
    wiki: Wikispeedia | None = None,
) -> WikiWeb:
    """Render the corpus into ``out_dir`` (WARC, labels, link graph); skip when up to date.

    The outputs are up to date when they all exist and are newer than the archive;
    ``force`` rebuilds anyway. ``wiki`` saves reloading an already loaded corpus.
    """
    archive = Path(archive) if archive is not None else default_archive()
    out = Path(out_dir)
    paths = _web_paths(out)
    counts = _manifest(paths[3])
    if not force and _web_up_to_date(out, archive):
        return WikiWeb(paths[0], paths[1], paths[2], counts["pages"], counts["articles"], counts["links"], False)
    wiki = wiki or load_wikispeedia(archive)
    out.mkdir(parents=True, exist_ok=True)
    records = write_warc(paths[0], site_pages(wiki))
    pages = write_labels(paths[1], label_rows(wiki))
    graph = link_graph(wiki)
    n_links = sum(map(len, graph.values()))
    with atomic_output(paths[2]) as fh:
        fh.write("".join(f"{s}\t{t}\n" for s, ts in graph.items() for t in ts).encode("utf-8"))
    counts = {
        "version": SITE_VERSION,
        "pages": pages,
        "records": records,
        "articles": len(wiki.articles),
        "links": n_links,
    }
    _write_json(paths[3], counts)
    logger.info("built the wiki web in %s: %d pages, %d article links", out, pages, n_links)
    return WikiWeb(paths[0], paths[1], paths[2], pages, len(wiki.articles), n_links, True)


# ---------------------------------------------------------------------- graph and seeds


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


# ---------------------------------------------------------------------- the critic


def page_texts(wiki: Wikispeedia, *, rendered: bool = True) -> dict[str, str]:
    """Each article's training text: the rendered page's visible text, or title + plain text."""
    if not rendered:
        return {name: f"{a.title}\n{a.text}" for name, a in wiki.articles.items()}
    site = render.Site.from_corpus(wiki)
    return {name: html_to_text(render.render_article(site, a, wiki.links[name])) for name, a in wiki.articles.items()}


def _training_set(
    wiki: Wikispeedia, taxonomy: Taxonomy, texts: Mapping[str, str]
) -> tuple[list[str], list[str], list[str]]:
    out: tuple[list[str], list[str], list[str]] = ([], [], [])
    for name, cats in wiki.categories.items():
        for cls in taxonomy.classes_of(cats):
            out[0].append(texts[name])
            out[1].append(cls)
            out[2].append(render.article_url(name))
    return out


def train_wiki_critic(
    wiki: Wikispeedia,
    *,
    taxonomy: Taxonomy | None = None,
    folds: int = 0,
    rendered: bool = True,
    texts: Mapping[str, str] | None = None,
    **critic_args: object,
) -> Critic | CrossFitCritic:
    """Train the critic on the taxonomy's classes: one model, or ``folds`` cross-fitted ones.

    ``examples`` (the default seeds) hold each class's 3 seed URLs. ``critic_args``
    go to :meth:`Critic.train` (``n_features``, ``alpha``, ...).
    """
    taxonomy = taxonomy or build_taxonomy(wiki.categories)
    texts = texts if texts is not None else page_texts(wiki, rendered=rendered)
    x, y, urls = _training_set(wiki, taxonomy, texts)
    meta = {
        "corpus": "wikispeedia",
        "site": render.BASE_URL,
        "taxonomy": {"level": taxonomy.level, "min_size": taxonomy.min_size, "merged": dict(taxonomy.merged)},
        "text": "rendered" if rendered else "plain",
    }
    examples = class_examples(wiki, taxonomy)
    args: dict[str, Any] = {"alpha": DEFAULT_ALPHA, "n_features": DEFAULT_N_FEATURES, **critic_args}
    if folds:
        return CrossFitCritic.train(x, y, urls, k=folds, metadata=meta, examples=examples, **args)
    return Critic.train(x, y, metadata=meta, examples=examples, **args)


def cross_validate(
    wiki: Wikispeedia,
    critic: CrossFitCritic,
    *,
    taxonomy: Taxonomy | None = None,
    texts: Mapping[str, str] | None = None,
) -> float:
    """Top-1 accuracy of a cross-fitted critic over the categorised articles, each by its held-out model.

    A prediction is correct when it is one of the article's classes.
    """
    taxonomy = taxonomy or build_taxonomy(wiki.categories)
    texts = texts if texts is not None else page_texts(wiki, rendered=critic.metadata.get("text") != "plain")
    names = [name for name, cats in wiki.categories.items() if cats]
    urls = [render.article_url(name) for name in names]
    predicted = critic.predict([texts[n] for n in names], urls)
    hits = [p in taxonomy.classes_of(wiki.categories[n]) for p, n in zip(predicted, names, strict=True)]
    return float(np.mean(hits))


# ---------------------------------------------------------------------- the benchmark track


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
) -> WikiTrack:
    """Build (or reuse) the web, the cross-fitted critic and the seeds in ``out_dir``.

    The web is rebuilt when missing, older than the archive or of another
    :data:`SITE_VERSION`; the critic and seeds when missing, older, of another
    :data:`TRACK_VERSION` or topics, or when the web was rebuilt; all with ``force``.
    Every topic must resolve in the critic (``UnknownTopicError`` otherwise).
    """
    archive = Path(archive) if archive is not None else default_archive()
    out = Path(out_dir)
    wiki = load_wikispeedia(archive) if force or not _web_up_to_date(out, archive) else None
    web = build_wiki_web(archive, out, force=force, wiki=wiki)
    critic_path, manifest = out / CRITIC_NAME, out / TRACK_MANIFEST
    track = _manifest(manifest)
    wanted = {"version": TRACK_VERSION, "topics": list(topics)}
    stale = web.built or not _fresh([critic_path, manifest], archive)
    if force or stale or any(track.get(k) != v for k, v in wanted.items()):
        wiki = wiki or load_wikispeedia(archive)
        texts = page_texts(wiki)
        critic = train_wiki_critic(wiki, folds=CRITIC_FOLDS, texts=texts)
        assert isinstance(critic, CrossFitCritic)
        for topic in topics:
            critic.resolve_topic(topic)
        accuracy = cross_validate(wiki, critic, texts=texts)
        critic.metadata["crossfit"]["accuracy"] = accuracy
        critic.save(critic_path)
        seeds = {t: [render.article_url(a) for a in seed_articles(wiki, t)] for t in topics}
        track = {**wanted, "seeds": seeds, "crossfit_accuracy": accuracy}
        _write_json(manifest, track)
    return WikiTrack(web.warc, web.labels, critic_path, list(track["topics"]), track["seeds"], web.links)
