"""Crawls simulated on a link graph: pages ``0..n-1`` and links ``src[i] -> dst[i]``, no HTTP.

Numpy only. The ceiling study (:mod:`focused.bench.studies.ceiling`) runs its best-first crawls
with :func:`simulate` and bounds them with :func:`reachable`; :func:`page_links` is the
index both walk, and the link model (:mod:`focused.bench.studies.linkmodel`) reads link positions from it.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["Scorer", "page_links", "reachable", "simulate"]

#: ``scorer(u, links) -> scores``: the scores of the links (edge ids) of page u, when u is fetched.
Scorer = Callable[[int, np.ndarray], Sequence[float]]


def page_links(n_pages: int, src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, starts)``: page u's links are the edge ids ``order[starts[u]:starts[u + 1]]``, in page order."""
    order = np.argsort(src, kind="stable")
    return order, np.searchsorted(src[order], np.arange(n_pages + 1))


def simulate(
    n_pages: int, src: np.ndarray, dst: np.ndarray, score: np.ndarray | Scorer, seeds: Sequence[int], budget: int
) -> list[int]:
    """The pages a best-first crawl fetches, in order: seeds first, then the waiting page whose best
    link from a fetched page scores highest (ties by page index). ``score[i]`` is link i's, or
    ``score(u, links)`` gives them when u is fetched (a scorer with state, as the look-ahead)."""
    scorer: Scorer = score if callable(score) else (lambda _, links: score[links].tolist())
    order, starts = page_links(n_pages, src)
    best = np.full(n_pages, -np.inf)
    fetched = np.zeros(n_pages, dtype=bool)
    heap: list[tuple[float, int]] = [(-np.inf, s) for s in dict.fromkeys(seeds)]  # seeds come first
    out: list[int] = []
    while heap and len(out) < budget:
        _, u = heapq.heappop(heap)
        if fetched[u]:
            continue
        fetched[u] = True
        out.append(u)
        links = order[starts[u] : starts[u + 1]]
        for v, s in zip(dst[links].tolist(), scorer(u, links), strict=True):
            if not fetched[v] and s > best[v]:
                best[v] = s
                heapq.heappush(heap, (-s, v))
    return out


def reachable(n_pages: int, src: np.ndarray, dst: np.ndarray, seeds: Sequence[int]) -> np.ndarray:
    """Which pages a crawl from ``seeds`` can ever fetch (bool per page): the most any strategy can harvest."""
    order, starts = page_links(n_pages, src)
    seen = np.zeros(n_pages, dtype=bool)
    seen[list(seeds)] = True
    stack = list(dict.fromkeys(seeds))
    while stack:
        u = stack.pop()
        for v in dst[order[starts[u] : starts[u + 1]]].tolist():
            if not seen[v]:
                seen[v] = True
                stack.append(v)
    return seen
