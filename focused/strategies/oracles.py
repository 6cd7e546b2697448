"""The look-ahead oracle: a benchmark bound that knows the web's link graph and every label.

Scrapy-free. The greedy oracle (:class:`Oracle`) sees only
the label of the page a link points to: behind off-topic pages it is no better
than breadth-first, and on WebKB (targets behind ``other`` pages) it can fall
below the baseline. The look-ahead oracle ranks a waiting URL by how far it is
from the next on-topic page nobody has found yet:

* an on-topic URL first (distance 0; among them, those linking to more
  undiscovered on-topic pages first) — the greedy label;
* then an off-topic URL by its graph distance, in the replayed web's link
  graph, to the nearest on-topic page not yet discovered (neither fetched nor
  waiting: a page already waiting is reachable without going through anything);
  ties by the number of undiscovered on-topic pages it links to;
* a URL outside the graph (a dead link) last.

Distances are recomputed whenever a link to an undiscovered on-topic page
turns up; a waiting URL keeps the priority it got when it was found (the
frontier is not re-scored), so late in a crawl priorities can be stale.

The graph is a ``.npz`` file (no pickle) written by
:func:`focused.bench.graph.write_link_graph`: ``urls`` (normalised URLs of the
stored pages), ``src`` and ``dst`` (edge arrays of indices), ``format_version``.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from scipy import sparse

from focused.errors import ConfigError
from focused.learning.critic.topics import Topic
from focused.learning.modelfile import read_npz
from focused.paths import project_path
from focused.replay.labels import label_lookup, read_labels
from focused.settings.access import setting
from focused.strategies.base import BuildContext, FetchedPage, Scored


class Oracle:
    """Benchmark bound: a link scores 1 when its target's true label is on topic.

    ``label_of`` maps a URL to its ground-truth label (``None`` if unknown).
    """

    name = "oracle"

    def __init__(self, topic: Topic, label_of: Callable[[str], str | None]) -> None:
        self.topic = topic
        self.label_of = label_of

    def score(self, page: FetchedPage, links: Sequence[str]) -> Scored:
        scores = []
        for url in links:
            label = self.label_of(url)
            scores.append(1.0 if label and self.topic.matches(label) else 0.0)
        return Scored(scores)


GRAPH_FORMAT = 1
#: Distances at and beyond this share the lowest non-zero level (scores keep 6 digits).
MAX_LEVEL = 16


class GraphFileError(ValueError):
    """A link-graph file is missing, unreadable or of another format."""


def load_graph(path: str | Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(urls, src, dst)`` from a graph file; :class:`GraphFileError` if it is not one."""
    try:  # within the size limit of model files, before anything is decompressed
        data = read_npz(path, ["format_version", "urls", "src", "dst"])
        version = int(data["format_version"])
        urls, src, dst = [str(u) for u in data["urls"]], data["src"], data["dst"]
    except (OSError, KeyError, ValueError, TypeError, zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise GraphFileError(f"cannot read link graph {path}: {exc}") from exc
    if version != GRAPH_FORMAT:
        raise GraphFileError(f"link graph {path} has format {version}, this version reads {GRAPH_FORMAT}")
    return urls, np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)


def save_graph(path: str | Path, urls: Sequence[str], src: Sequence[int], dst: Sequence[int]) -> None:
    np.savez_compressed(
        path,
        format_version=np.int64(GRAPH_FORMAT),
        urls=np.array(list(urls), dtype=str),
        src=np.asarray(src, dtype=np.int64),
        dst=np.asarray(dst, dtype=np.int64),
    )


class GraphLookAhead:
    """The look-ahead over graph nodes: ``on_topic`` marks the pages to reach (see the module doc).

    Scrapy-free and URL-free; :class:`LookAheadOracle` maps URLs and labels onto it, and the
    ceiling study (:mod:`focused.bench.studies.ceiling`) gives it the critic's verdicts instead of labels.
    """

    def __init__(self, on_topic: np.ndarray, src: np.ndarray, dst: np.ndarray) -> None:
        n = len(on_topic)
        self.on_topic = np.asarray(on_topic, dtype=bool)
        #: adjacency[i, j] = 1 when page i links to page j
        self.adjacency = sparse.csr_matrix((np.ones(len(src), dtype=np.float64), (src, dst)), shape=(n, n))
        self.adjacency.data[:] = 1.0  # duplicate edges count once
        self.discovered = np.zeros(n, dtype=bool)
        self._stale = True
        self.distance = np.full(n, np.inf)
        self.next_targets = np.zeros(n)
        self.recomputed = 0

    def score_nodes(self, page: int | None, nodes: Sequence[int | None]) -> list[float]:
        """The scores of a fetched ``page``'s links to ``nodes`` (both discovered first)."""
        self.discover([page, *nodes])
        if self._stale:
            self._refresh()
        return [self.score_node(node) for node in nodes]

    def _refresh(self) -> None:
        """Multi-source BFS backwards from the undiscovered on-topic pages (one sparse mat-vec per level)."""
        targets = self.on_topic & ~self.discovered
        distance = np.full(len(targets), np.inf)
        distance[targets] = 0.0
        frontier = targets.astype(np.float64)
        level = 0
        while frontier.any() and level < len(distance):
            level += 1
            reach = (self.adjacency @ frontier > 0) & np.isinf(distance)
            distance[reach] = level
            frontier = reach.astype(np.float64)
        self.distance = distance
        self.next_targets = self.adjacency @ targets.astype(np.float64)
        self._stale = False
        self.recomputed += 1

    def discover(self, nodes: Sequence[int | None]) -> None:
        """Mark ``nodes`` found (waiting or fetched); finding an on-topic one makes the distances stale."""
        for node in nodes:
            if node is not None and not self.discovered[node]:
                self.discovered[node] = True
                self._stale = self._stale or bool(self.on_topic[node])

    def score_node(self, node: int | None) -> float:
        """2^-(level+1) .. 2^-level for level = distance (0 for on-topic), more next targets higher."""
        if node is None:
            return 0.0
        level = 0.0 if self.on_topic[node] else self.distance[node]
        if np.isinf(level):
            return 0.0
        level = min(level, MAX_LEVEL)
        within = min(float(self.next_targets[node]), 99.0) / 100.0  # in [0, 1)
        return float(2.0 ** -(level + 1) * (1.0 + within))


class LookAheadOracle(GraphLookAhead):
    """Scores links by their distance to the nearest undiscovered on-topic page (see the module doc).

    ``label_of`` maps a URL to its ground-truth label; ``node_of`` maps a URL
    to its graph node (``None`` if not in the graph).
    """

    name = "oracle-lookahead"

    def __init__(
        self,
        topic: Topic,
        label_of: Callable[[str], str | None],
        urls: Sequence[str],
        src: np.ndarray,
        dst: np.ndarray,
        node_of: Callable[[str], int | None],
    ) -> None:
        on_topic = np.array([bool((label := label_of(u)) and topic.matches(label)) for u in urls], dtype=bool)
        super().__init__(on_topic, src, dst)
        self.node_of = node_of

    def score(self, page: FetchedPage, links: Sequence[str]) -> Scored:
        return Scored(self.score_nodes(self.node_of(page.url), [self.node_of(u) for u in links]))


def lookahead_oracle(topic: Topic, labels: dict[str, str], graph: str | Path) -> LookAheadOracle:
    """The oracle for ``topic`` from ground-truth ``labels`` and a graph file."""
    urls, src, dst = load_graph(graph)
    index = label_lookup({u: str(i) for i, u in enumerate(urls)})

    def node_of(url: str) -> int | None:
        found = index(url)
        return int(found) if found is not None else None

    return LookAheadOracle(topic, label_lookup(labels), urls, src, dst, node_of)


def build_oracle(name: str, ctx: BuildContext) -> Oracle | LookAheadOracle:
    """``oracle`` (greedy) or ``oracle-lookahead``, from FOCUSED_LABELS (and FOCUSED_ORACLE_GRAPH)."""
    path = setting(ctx.settings, "FOCUSED_LABELS")
    if not path:
        raise ConfigError(f"strategy {name!r} needs ground-truth labels: -s FOCUSED_LABELS=FILE")
    try:
        labels, _ = read_labels(project_path(path))
    except OSError as exc:
        raise ConfigError(f"cannot read labels file {path}: {exc}") from exc
    if name == "oracle":
        return Oracle(ctx.topic, label_lookup(labels))
    graph = setting(ctx.settings, "FOCUSED_ORACLE_GRAPH")
    if not graph:
        raise ConfigError("strategy 'oracle-lookahead' needs a link graph: -s FOCUSED_ORACLE_GRAPH=FILE.npz")
    try:
        return lookahead_oracle(ctx.topic, labels, project_path(graph))
    except GraphFileError as exc:
        raise ConfigError(str(exc)) from exc
