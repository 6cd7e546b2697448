"""The intelligent crawler's frontier policy (Aggarwal et al. 2001): candidates ranked by interest ratios.

Scrapy-free. :class:`IntelligentStrategy` keeps K (:class:`~focused.learning.intelligent.knowledge.Knowledge`)
and, for this crawl, the link graph seen so far: which crawled pages link to
which URLs, each crawled page's hashed words and whether it satisfies the
predicate. A candidate's payload in the frontier (one per inlinking page) is
``[parent_id, url_token_ids]``; from its payloads and K the strategy computes

* content: log I_c = the sum of the significant words' log ratios over the
  union of the words of its crawled inlinking pages;
* URL: log I_u = the sum of its significant URL tokens' log ratios;
* link: log I_l = m log p + (k - m) log q over its k crawled inlinking pages, m satisfying;
* sibling: log I_s = log(s / e) over the crawled children of its inlinking pages;

and the composite priority value sum_f w_f log I_f, with w_f = 1 / mean |log I_f|
over the candidates of the last re-scoring, so that each factor contributes
equally on average (the paper's balancing). ``factors`` picks a single factor
(``intelligent:content`` ...) or any subset. The value becomes a score in (0, 1)
by 0.5 + atan(x) / pi, monotone, so the order is the priority value's.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from focused.errors import ConfigError
from focused.learning.critic.topics import Verdict
from focused.learning.intelligent.knowledge import (
    SIGNIFICANCE,
    Knowledge,
    KnowledgeError,
    hash_tokens,
    sibling_ratio,
    url_tokens,
)
from focused.page.text import html_to_text, tokenize
from focused.paths import project_path
from focused.settings.access import setting
from focused.strategies.base import BuildContext, FetchedPage, Scored

logger = logging.getLogger(__name__)

__all__ = ["FACTORS", "IntelligentStrategy", "build_intelligent", "page_id", "parse_factors"]

FACTORS = ("content", "url", "link", "sibling")
#: Between re-scorings, the word and token ratios are recomputed when K has this many more pages (relative).
REFRESH_GROWTH = 0.05


def parse_factors(spec: str) -> tuple[str, ...]:
    """``"content,url"`` or ``"content+url"`` -> the factors in canonical order; ValueError names a bad one."""
    parts = [p.strip().lower() for p in spec.replace("+", ",").split(",") if p.strip()]
    bad = [p for p in parts if p not in FACTORS]
    if bad or not parts:
        raise ValueError(
            f"unknown intelligent-crawling factor {bad[0] if bad else spec!r}; valid: {', '.join(FACTORS)}"
        )
    return tuple(f for f in FACTORS if f in parts)


def page_id(url: str) -> int:
    """A stable 63-bit id of a URL (the same in every process)."""
    return int.from_bytes(hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little") >> 1


def to_score(value: float) -> float:
    """A priority value (any real) as a score in (0, 1), monotone."""
    return 0.5 + math.atan(value) / math.pi


class IntelligentStrategy:
    """Rank candidates by the interest ratios learned in K (``intelligent``, ``intelligent:FACTOR``)."""

    def __init__(
        self,
        factors: Sequence[str] = FACTORS,
        *,
        knowledge: Knowledge | None = None,
        significance: float = SIGNIFICANCE,
        threshold: float = 0.5,
        soft: bool = False,
        name: str = "intelligent",
    ) -> None:
        self.factors = tuple(f for f in FACTORS if f in factors)
        if not self.factors:
            raise ValueError("an intelligent strategy needs at least one factor")
        self.name = name
        self.k = knowledge if knowledge is not None else Knowledge()
        self.t = significance
        #: ``relevance_of(url, text, verdict)``: a page's relevance as the crawl defines it (the critic's
        #: Pr(c*|page) or the predicate's 1/0); with it, a page is learned from when its links are scored.
        self.relevance_of: Callable[[str, str, Verdict], float] | None = None
        #: A page satisfies C when its relevance reaches ``threshold``; ``soft``: it counts as its relevance.
        self.threshold = threshold
        self.soft = soft
        self.weights = dict.fromkeys(self.factors, 1.0)
        # this crawl's graph: crawled pages and the links seen from them
        self.satisfies: dict[int, float] = {}  # 1.0 / 0.0 (soft: the relevance)
        self.words: dict[int, np.ndarray] = {}
        self.children: dict[int, list[int]] = {}
        self.parents: dict[int, list[int]] = {}
        self.visited_children: dict[int, int] = {}
        self.satisfying_children: dict[int, float] = {}
        # caches of the ratios of K's current version
        self._version = -1
        self._word_logr = np.zeros(0, dtype=np.float32)
        self._token_logr = np.zeros(0, dtype=np.float32)
        self._link_logr = (0.0, 0.0)
        self._content_of: dict[int, tuple[np.ndarray, float]] = {}
        self._vocab_at = 0  # N_t when the word and token ratios were last computed
        #: Pages whose links were scored before the page itself was observed (their links get
        #: the parent's evidence only at the next re-scoring).
        self.scored_before_observed = 0

    # -- learning: after every fetched page -------------------------------------------

    def label(self, relevance: float) -> float:
        """How much a page of this relevance counts as satisfying C: 1 or 0 (soft: the relevance itself)."""
        return min(max(float(relevance), 0.0), 1.0) if self.soft else float(relevance >= self.threshold)

    def observe(self, url: str, text: str, links: Sequence[str], relevance: float, aliases: Sequence[str] = ()) -> None:
        """A crawled page and its relevance: update K (counts, link types) and the graph (siblings)."""
        pid = page_id(url)
        if pid in self.satisfies:
            return  # fetched again (after a resume): counted once
        satisfies = self.label(relevance)
        word_ids = hash_tokens(set(tokenize(text)), self.k.word_dims)
        self.k.observe_page(word_ids, hash_tokens(url_tokens(url), self.k.token_dims), satisfies)
        self.satisfies[pid] = satisfies
        self.words[pid] = word_ids
        for alias in aliases:  # links to a URL that redirected here lead to this page
            aid = page_id(alias)
            if aid != pid and aid not in self.satisfies:
                self.parents.setdefault(pid, []).extend(self.parents.get(aid, []))
        for parent in self.parents.get(pid, ()):
            self._link_crawled(parent, pid)
        self.add_links(url, links)

    def add_links(self, url: str, links: Sequence[str]) -> None:
        """Record the links of a crawled page (once per target); each to a crawled target is a crawled link."""
        pid = page_id(url)
        known = self.children.setdefault(pid, [])
        seen = set(known)
        for link in links:
            cid = page_id(link)
            if cid == pid or cid in seen:
                continue
            seen.add(cid)
            known.append(cid)
            self.parents.setdefault(cid, []).append(pid)
            if cid in self.satisfies and pid in self.satisfies:
                self._link_crawled(pid, cid)

    def _link_crawled(self, parent: int, child: int) -> None:
        """Both ends of parent -> child are crawled: count the link's type and the parent's visited child."""
        if parent not in self.satisfies:
            return  # counted when the parent is crawled (add_links)
        child_ok = self.satisfies[child]
        self.k.observe_link(self.satisfies[parent], child_ok)
        self.visited_children[parent] = self.visited_children.get(parent, 0) + 1
        self.satisfying_children[parent] = self.satisfying_children.get(parent, 0) + child_ok

    # -- scoring -----------------------------------------------------------------------

    def score(self, page: FetchedPage, links: Sequence[str]) -> Scored:
        """Score a crawled page's outlinks; each gets the payload ``[parent_id, url_token_ids]``."""
        pid = page_id(page.url)
        if pid not in self.satisfies and self.relevance_of is not None:
            # the pipeline labels the page after its links are scored: learn from it now, so that its
            # links get its evidence at once (observe() ignores the page when the pipeline reports it)
            text = page.text if page.text is not None else html_to_text(page.html)
            self.observe(page.url, text, links, self.relevance_of(page.url, text, page.verdict))
        self.scored_before_observed += pid not in self.satisfies
        payloads: list[Any] = [[pid, hash_tokens(url_tokens(link), self.k.token_dims).tolist()] for link in links]
        values = self.combine(self.factor_matrix([[p] for p in payloads]))
        return Scored([to_score(v) for v in values.tolist()], payloads)

    def rescore(self, entries: Sequence[Sequence[Any]]) -> list[float | None]:
        """New scores of waiting candidates from their payloads (``None``: no payload, keep);
        the factor weights are rebalanced over these candidates first."""
        self._version = -1
        self._refresh(force=True)
        rows = [i for i, payloads in enumerate(entries) if payloads]
        out: list[float | None] = [None] * len(entries)
        if rows:
            logs = self.factor_matrix([entries[i] for i in rows])
            self.balance(logs)
            for i, value in zip(rows, self.combine(logs).tolist(), strict=True):
                out[i] = to_score(value)
        return out

    def balance(self, logs: dict[str, np.ndarray]) -> None:
        """w_f = 1 / mean |log I_f| over the candidates of ``logs`` (a factor without evidence keeps its weight)."""
        if len(self.factors) == 1:
            return
        for f in self.factors:
            mean = float(np.abs(logs[f]).mean()) if len(logs[f]) else 0.0
            if mean > 0:
                self.weights[f] = 1.0 / mean

    def combine(self, logs: dict[str, np.ndarray]) -> np.ndarray:
        """The priority values: sum_f w_f log I_f (a single factor: its log ratio)."""
        if len(self.factors) == 1:
            return logs[self.factors[0]]
        return sum((self.weights[f] * logs[f] for f in self.factors), np.zeros(len(logs[self.factors[0]])))

    def factor_logs(self, payloads: Sequence[Any]) -> dict[str, float]:
        """log I_f of one candidate from its payloads (one per inlinking page), for each active factor."""
        return {f: float(v[0]) for f, v in self.factor_matrix([payloads]).items()}

    def factor_matrix(self, entries: Sequence[Sequence[Any]]) -> dict[str, np.ndarray]:
        """log I_f of many candidates (each given by its payloads), one array per active factor."""
        self._refresh()
        n = len(entries)
        crawled: list[list[int]] = []
        for payloads in entries:
            parents = {int(p[0]) for p in payloads}
            crawled.append([p for p in parents if p in self.satisfies])
        out: dict[str, np.ndarray] = {}
        if "content" in self.factors:
            out["content"] = np.fromiter((self._content(c) for c in crawled), dtype=np.float64, count=n)
        if "url" in self.factors:
            ids = [entry[0][1] for entry in entries]
            lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=n)
            flat = np.fromiter((i for x in ids for i in x), dtype=np.int64, count=int(lengths.sum()))
            values = self._token_logr[flat].astype(np.float64)
            out["url"] = np.bincount(np.repeat(np.arange(n), lengths), weights=values, minlength=n)
        if "link" in self.factors:
            k = np.fromiter((len(c) for c in crawled), dtype=np.float64, count=n)
            m = np.fromiter((sum(self.satisfies[p] for p in c) for c in crawled), dtype=np.float64, count=n)
            log_p, log_q = self._link_logr
            out["link"] = m * log_p + (k - m) * log_q
        if "sibling" in self.factors:
            visited = self.visited_children
            good = self.satisfying_children
            p_c = self.k.p_c
            out["sibling"] = np.fromiter(
                (
                    math.log(sibling_ratio(sum(good.get(p, 0) for p in c), sum(visited.get(p, 0) for p in c), p_c))
                    for c in crawled
                ),
                dtype=np.float64,
                count=n,
            )
        return out

    def _content(self, crawled: list[int]) -> float:
        """log I_c: the significant words' log ratios summed over the union of the inlinking pages' words."""
        if not crawled:
            return 0.0
        if len(crawled) == 1:
            return self._significant_words(crawled[0])[1]
        # only significant words count: the union of each parent's (few) significant words
        union = np.unique(np.concatenate([self._significant_words(p)[0] for p in crawled]))
        return float(self._word_logr[union].sum())

    def _significant_words(self, pid: int) -> tuple[np.ndarray, float]:
        """A crawled page's significant word ids and their log ratios' sum (cached until the ratios change)."""
        cached = self._content_of.get(pid)
        if cached is None:
            ids = self.words[pid]
            values = self._word_logr[ids]
            keep = values != 0
            cached = self._content_of[pid] = (ids[keep], float(values[keep].sum()))
        return cached

    def _refresh(self, force: bool = False) -> None:
        """Recompute the cached ratios when K has changed.

        The word and token ratios (a pass over every word seen) are recomputed when K has
        grown by :data:`REFRESH_GROWTH` of its pages since the last time, and at every re-scoring
        (``force``); the link and sibling ratios whenever K changed (they cost nothing).
        """
        if self._version == self.k.version:
            return
        self._version = self.k.version
        self._link_logr = self.k.link_log_ratios()
        if not force and self.k.n_t < self._vocab_at * (1.0 + REFRESH_GROWTH) and self._vocab_at > 0:
            return
        self._vocab_at = max(self.k.n_t, 1)
        if "content" in self.factors:
            self._word_logr = self.k.word_log_ratios(self.t)
            self._content_of.clear()
        if "url" in self.factors:
            self._token_logr = self.k.token_log_ratios(self.t)

    def summary(self) -> dict[str, Any]:
        """Figures for the crawl's stats."""
        self._refresh()
        significant = {}
        if "content" in self.factors:
            significant["significant_words"] = int(np.count_nonzero(self._word_logr))
        if "url" in self.factors:
            significant["significant_tokens"] = int(np.count_nonzero(self._token_logr))
        return {
            "pages": self.k.n_t,
            "satisfying": round(self.k.n_c, 2),
            "links": round(self.k.n_links, 2),
            "scored_before_observed": self.scored_before_observed,
            **significant,
            **{f"weight_{f}": round(self.weights[f], 4) for f in self.factors},
        }


def build_intelligent(name: str, ctx: BuildContext) -> IntelligentStrategy:
    """``intelligent`` (the factors of FOCUSED_INTELLIGENT_FACTORS) or ``intelligent:FACTOR[+FACTOR]``."""
    settings = ctx.settings
    _, _, suffix = name.partition(":")
    spec = suffix or setting(settings, "FOCUSED_INTELLIGENT_FACTORS") or ",".join(FACTORS)
    try:
        factors = parse_factors(spec)
    except ValueError as exc:
        where = f"strategy {name!r}" if suffix else f"FOCUSED_INTELLIGENT_FACTORS={spec!r}"
        raise ConfigError(f"{where}: {exc} (e.g. intelligent:content, or intelligent for all four)") from exc
    t = setting(settings, "FOCUSED_INTELLIGENT_SIGNIFICANCE")
    if not t >= 0:
        raise ConfigError(f"FOCUSED_INTELLIGENT_SIGNIFICANCE must be a number >= 0 (standard deviations), not {t}")
    knowledge = None
    path = setting(settings, "FOCUSED_INTELLIGENT_LOAD") or ""
    if path:
        try:
            knowledge = Knowledge.load(project_path(path))
        except KnowledgeError as exc:
            raise ConfigError(str(exc)) from exc
        logger.info("Intelligent crawl starts from %s: %r", path, knowledge)
    strategy = IntelligentStrategy(
        factors,
        knowledge=knowledge,
        significance=t,
        threshold=setting(settings, "FOCUSED_RELEVANCE_THRESHOLD"),
        soft=setting(settings, "FOCUSED_INTELLIGENT_SOFT"),
        name=name,
    )
    strategy.relevance_of = ctx.relevance_of
    return strategy
