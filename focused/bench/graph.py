"""The link graph of a replayed web, for the look-ahead oracle (:mod:`focused.strategies.oracles`).

Nodes are the stored pages the replay answers with a page (normalised URLs);
an edge i -> j is a link of page i that the replay answers with page j
(following a stored redirect or the ``dir`` -> ``dir/`` redirect). Links to
anything else (dead links, pages outside a confined store) are dropped.
"""

from __future__ import annotations

import logging
from pathlib import Path

from focused.bench.metrics import outlinks
from focused.replay.store import ReplayStore
from focused.replay.urlnorm import normalize_url
from focused.strategies.oracles import save_graph

logger = logging.getLogger(__name__)

_REDIRECTS = (301, 302, 303, 307, 308)


def served_url(store: ReplayStore, url: str, hops: int = 5) -> str | None:
    """The normalised URL of the page a request for ``url`` ends on, if the store answers it."""
    for _ in range(hops):
        try:
            lookup = store.resolve(url)
        except ValueError:
            return None
        if lookup.redirect is not None:
            url = lookup.redirect
            continue
        response = lookup.response
        if response is None:
            return None
        if response.status in _REDIRECTS:
            location = response.header("location")
            if not location:
                return None
            url = location
            continue
        return normalize_url(response.url) if response.status == 200 else None
    return None


def link_graph(store: ReplayStore) -> tuple[list[str], list[int], list[int]]:
    """``(urls, src, dst)`` of every page the store serves."""
    pages = [r for r in store.responses() if r.status == 200]
    index = {normalize_url(r.url): i for i, r in enumerate(pages)}
    targets: dict[str, int | None] = {}
    src: list[int] = []
    dst: list[int] = []
    for i, response in enumerate(pages):
        seen: set[int] = set()
        for link in outlinks(response.url, response.body):
            if link not in targets:
                url = served_url(store, link)
                targets[link] = index.get(url) if url else None
            j = targets[link]
            if j is not None and j not in seen:
                seen.add(j)
                src.append(i)
                dst.append(j)
    return list(index), src, dst


def write_link_graph(store: ReplayStore, path: Path) -> Path:
    """Write the store's link graph to ``path`` (kept if it already exists)."""
    if not path.exists():
        urls, src, dst = link_graph(store)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_graph(path, urls, src, dst)
        logger.info("link graph: %d pages, %d links -> %s", len(urls), len(src), path)
    return path
