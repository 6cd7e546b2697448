"""Training instances for the apprentice from crawl databases (Chakrabarti et al. 2002, §3.5).

The paper's off-line recipe: run the baseline crawler, then for every link
(u, v) such that *both* u and v were fetched, make an instance from the ⟨t, d⟩
features of the link in u and the critic's relevance Pr(c*|v) of the fetched
target, and train the apprentice on them. This module reads one or more crawl
databases (:mod:`focused.crawldb`, e.g. baseline crawls of other
universities) and does exactly that; it knows nothing of Scrapy.

Matching a link to a fetched page
---------------------------------
A crawler stores a page under the URL it finally got (``response.url``), and a
1990s server answers ``dir`` with a redirect to ``dir/``, which is the same page
as ``dir/index.html``. Links and pages are therefore matched on
:func:`fetch_key`: :func:`~focused.replay.urlnorm.normalize_url` with a trailing
``index.html``/``index.htm`` and then a trailing ``/`` removed from the path.
When two fetched pages share a key (rare), the first fetched wins.

A page that links to the same target under several spellings (``dir`` and
``dir/index.html``) gives one instance whose features are the union of both
links' features (counts added), as :class:`~focused.learning.apprentice.features.PageLinks`
does for repeated links. Links from a page to itself are not instances, and a
page fetched twice under two spellings is read once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from focused.crawldb import iter_pages, read_meta
from focused.learning.apprentice.features import D_MAX, N_FEATURES, compact_many, extract_link_features
from focused.learning.apprentice.features import class_features as _class_features
from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.model import critic_views
from focused.learning.critic.snippet import SnippetCritic
from focused.replay.store import INDEX_NAMES
from focused.replay.urlnorm import normalize_url

__all__ = ["Instances", "fetch_key", "instances_from_crawl", "train_apprentice"]

logger = logging.getLogger(__name__)

DBPaths = str | PathLike[str] | Sequence[str | PathLike[str]]


@dataclass
class Instances:
    """Apprentice training instances, parallel lists indexed by instance.

    Attributes
    ----------
    features
        Hashed feature ids of each link (u, v), :func:`~focused.learning.apprentice.features.compact`
        arrays (an id repeated for each occurrence).
    relevances
        The critic's Pr(c*|v) of each fetched target, as stored in the crawl database.
    pairs
        ``(u, v)`` as stored (v under the URL the crawler fetched it as).
    side
        With a snippet critic, the critic's views of each link
        (:func:`~focused.learning.apprentice.model.critic_views`: Pr(c*|u) as stored
        with u, Pr(c*|anchor text) read now), shape (n, 2); else ``None``.
    topic
        The crawl topic recorded in the databases (``None`` if none recorded).
    pages, pages_without_html
        Pages read, and pages that could not be parsed because their HTML was not stored.
    seconds
        Wall time of the extraction.
    """

    features: list[np.ndarray] = field(default_factory=list)
    relevances: np.ndarray = field(default_factory=lambda: np.zeros(0))
    pairs: list[tuple[str, str]] = field(default_factory=list)
    side: np.ndarray | None = None
    topic: str | None = None
    pages: int = 0
    pages_without_html: int = 0
    seconds: float = 0.0

    def __len__(self) -> int:
        return len(self.pairs)


def fetch_key(url: str) -> str:
    """The key on which a link target and a fetched page are matched (see the module docstring).

    Raises ``ValueError`` for a URL that is not absolute.

    >>> fetch_key("HTTP://Example.edu/~a/index.html") == fetch_key("http://example.edu/~a") == "http://example.edu/~a"
    True
    """
    url = normalize_url(url)
    path, qmark, query = url.partition("?")
    for name in INDEX_NAMES:
        if path.endswith("/" + name):
            path = path[: -len(name)]
            break
    return path.rstrip("/") + qmark + query


def _key_or_none(url: str) -> str | None:
    try:
        return fetch_key(url)
    except ValueError:
        return None


def _paths(db_paths: DBPaths) -> list[Path]:
    if isinstance(db_paths, (str, PathLike)):
        return [Path(db_paths)]
    return [Path(p) for p in db_paths]


def instances_from_crawl(
    db_paths: DBPaths,
    *,
    d_max: int = D_MAX,
    class_features: bool = False,
    offsets: bool = True,
    n_features: int = N_FEATURES,
    snippet_critic: SnippetCritic | None = None,
) -> Instances:
    """Every link (u, v) with both ends fetched in the same crawl, as an apprentice instance.

    Parameters
    ----------
    db_paths
        One crawl database or several (e.g. crawls of other universities);
        each is matched on its own: u and v must have been fetched in the same crawl.
    d_max, offsets
        Passed to :func:`~focused.learning.apprentice.features.extract_link_features`
        (one parse of u for all its links).
    class_features
        Add :func:`~focused.learning.apprentice.features.class_features` of u's top
        classes (the critic's verdict stored with u), the paper's §3.8.
    n_features
        Dimension of the hashed feature space.
    snippet_critic
        ``(anchor texts, target URLs) -> Pr(c*|anchor)`` for the crawl's topic;
        when given, :attr:`Instances.side` holds the critic's views of each link.

    Raises
    ------
    focused.crawldb.CrawlDBError
        A file is missing or not a crawl database.
    ValueError
        The databases record different crawl topics (their relevances are
        probabilities of different things).

    Pages whose HTML was not stored cannot give features; they are counted and
    reported with one warning per database (they still count as fetched targets).
    """
    start = time.perf_counter()
    paths = _paths(db_paths)
    topics = {str(p): read_meta(p).get("topic") for p in paths}
    distinct = {t for t in topics.values() if t is not None}
    if len(distinct) > 1:
        listing = ", ".join(f"{p}: {t!r}" for p, t in topics.items())
        raise ValueError(f"crawl databases of different topics cannot be mixed ({listing})")
    out = Instances(topic=next(iter(distinct), None))
    feature_lists: list[list[str]] = []
    relevances: list[float] = []
    anchors: list[str] = []
    parents: list[float] = []
    for path in paths:
        n_before = len(feature_lists)
        pages, missing = _read_crawl(
            path, d_max, class_features, offsets, feature_lists, relevances, out.pairs, anchors, parents
        )
        out.pages += pages
        out.pages_without_html += missing
        if missing:
            logger.warning(
                "%s: %d of %d pages have no stored HTML; their outlinks give no instances", path, missing, pages
            )
        logger.info("%s: %d pages, %d instances", path, pages, len(feature_lists) - n_before)
    out.features = compact_many(feature_lists, n_features)
    out.relevances = np.asarray(relevances, dtype=np.float64)
    if snippet_critic is not None:
        anchor_rel = snippet_critic(anchors, [v for _, v in out.pairs]) if anchors else np.zeros(0)
        out.side = critic_views(np.asarray(parents, dtype=np.float64), anchor_rel)
    out.seconds = time.perf_counter() - start
    return out


def _read_crawl(
    path: Path,
    d_max: int,
    class_features: bool,
    offsets: bool,
    feature_lists: list[list[str]],
    relevances: list[float],
    pairs: list[tuple[str, str]],
    anchors: list[str],
    parents: list[float],
) -> tuple[int, int]:
    """Append the instances of one database; return (pages, pages without HTML)."""
    fetched: dict[str, tuple[str, float]] = {}  # fetch key -> (stored URL, relevance), first fetch wins
    n_pages = 0
    for page in iter_pages(path):
        n_pages += 1
        try:
            fetched.setdefault(fetch_key(page.url), (page.url, float(page.relevance)))
        except ValueError:
            logger.debug("%s: skipping page with a bad URL %r", path, page.url)
    missing = 0
    keys: dict[str, str | None] = {}
    for page in iter_pages(path, with_html=True):
        if not page.html_blob:
            missing += 1
            continue
        try:
            own = fetch_key(page.url)
        except ValueError:
            continue
        if fetched[own][0] != page.url:
            continue  # the same page fetched again under another spelling: its links are already in
        links = extract_link_features(page.html, page.url, d_max=d_max, offsets=offsets)
        extra = _class_features(page.top_classes) if class_features else []
        found: dict[str, int] = {}  # target key -> instance index (several spellings merge)
        for url, feats, anchor in zip(links.urls, links.features, links.anchors, strict=True):
            key = keys.get(url, "")
            if key == "":  # site-wide navigation repeats the same URLs on every page: normalise each once
                key = keys[url] = _key_or_none(url)
            if key is None or key == own:
                continue
            target = fetched.get(key)
            if target is None:
                continue
            i = found.get(key)
            if i is None:
                found[key] = len(feature_lists)
                feature_lists.append(feats + extra)
                relevances.append(target[1])
                pairs.append((page.url, target[0]))
                anchors.append(anchor)
                parents.append(float(page.relevance))
            else:
                feature_lists[i].extend(feats)
                if anchor:
                    anchors[i] = f"{anchors[i]} | {anchor}" if anchors[i] else anchor
    return n_pages, missing


def train_apprentice(
    db_paths: DBPaths,
    *,
    d_max: int = D_MAX,
    class_features: bool = False,
    binning: str = "equal-prob",
    threshold: float = 0.5,
    min_instances: int = 1,
    alpha: float = 0.1,
    offsets: bool = True,
    n_features: int = N_FEATURES,
    instances: Instances | None = None,
    snippet_critic: SnippetCritic | None = None,
    **kw: Any,
) -> Apprentice:
    """An :class:`~focused.learning.apprentice.learner.Apprentice` holding every instance of the crawl(s).

    Returns the learner, not a frozen model: a crawl can load it and keep
    adding instances (call :meth:`~focused.learning.apprentice.learner.Apprentice.fit`
    for a model). Its ``feature_params`` record ``d_max``, ``class_features``,
    ``offsets``, ``n_features`` (what a crawler must extract to use it) and the
    crawl ``topic``. ``binning="equal-prob"`` is the paper's choice (§2.3);
    extra keywords go to :class:`Apprentice`. ``instances`` reuses an
    :func:`instances_from_crawl` result made with the same feature parameters.
    With a ``snippet_critic`` (or ``instances`` that have side features) the
    apprentice gets the critic's views of each link as side features, as an
    online crawl with ``FOCUSED_APPRENTICE_ANCHOR_CRITIC`` does.

    Raises
    ------
    ValueError
        No instances (e.g. databases without stored HTML, or crawls whose
        fetched pages do not link to each other), or all instances in one bucket.
    focused.crawldb.CrawlDBError
        A file is missing or not a crawl database.
    """
    if instances is None:
        instances = instances_from_crawl(
            db_paths,
            d_max=d_max,
            class_features=class_features,
            offsets=offsets,
            n_features=n_features,
            snippet_critic=snippet_critic,
        )
    if not len(instances):
        why = (
            f"no page of {instances.pages} has stored HTML"
            if instances.pages and instances.pages_without_html == instances.pages
            else f"no link between two fetched pages among {instances.pages} pages"
        )
        raise ValueError(f"no training instances in {_names(db_paths)}: {why}")
    rel = instances.relevances
    if binning == "fixed":
        n_high = int(np.count_nonzero(rel >= threshold))
        if n_high in (0, len(rel)):
            raise ValueError(
                f"cannot train an apprentice: both buckets need instances, but {n_high} of {len(rel)} "
                f"instances have relevance >= {threshold:g}"
            )
    elif np.ptp(rel) == 0:
        raise ValueError(
            f"cannot train an apprentice: all {len(rel)} instances have relevance {rel[0]:.3g}, "
            "so equal-probability binning has one bucket"
        )
    feature_params = {
        "d_max": d_max,
        "class_features": class_features,
        "offsets": offsets,
        "n_features": n_features,
        "topic": instances.topic,
        "critic_views": instances.side is not None,
    }
    app = Apprentice(
        n_features=n_features,
        alpha=alpha,
        threshold=threshold,
        binning=binning,
        min_instances=min_instances,
        feature_params=feature_params,
        n_side=0 if instances.side is None else instances.side.shape[1],
        **kw,
    )
    app.add(instances.features, rel, instances.side)
    return app


def _names(db_paths: DBPaths) -> str:
    return ", ".join(str(p) for p in _paths(db_paths))
