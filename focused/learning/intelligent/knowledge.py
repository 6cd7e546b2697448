"""Intelligent crawling (Aggarwal, Al-Garawi and Yu, WWW10 2001): the learned statistics K and the interest ratios.

Scrapy-free. K holds what the paper lists (§4): the pages crawled so far N_t and
those satisfying the predicate N_c; per word i the pages containing it n_i and
the satisfying ones n_i^C; per URL token i the same, m_i and m_i^C; the crawled
links by type, N_pp, N_pn, N_np, N_nn (source/target satisfying or not). Words
and tokens are hashed (MurmurHash3, scikit-learn's ``FeatureHasher`` ids), so K
needs no vocabulary and two crawls' K add up.

An interest ratio is I(C, E) = P(C|E) / P(C): how much more likely a candidate
satisfies the predicate given the event E. This module computes

* per word, the content ratio n_i^C / (n_i P(C)), and per URL token
  m_i^C / (m_i P(C)), each kept only when its significance
  S = |P(C|E) - P(C)| / sqrt(P(C)(1 - P(C)) / n_E) reaches ``t`` standard
  deviations (the paper's filter, t = 2; the formula's display is missing from our
  copy of the paper: this is the binomial standard error of P(C|E) under "E says
  nothing", which is what its text describes);
* the link ratios p = f1 / P(C)^2 and q = f3 / (P(C)(1 - P(C))) with
  f1 = N_pp / N_l and f3 = N_np / N_l (Table 1): a candidate with k crawled
  inlinking pages, m of them satisfying, gets I_l = p^m q^(k-m);
* the sibling ratio s / e: s satisfying crawled siblings, e = (crawled siblings) P(C).

With ``soft`` relevance (``FOCUSED_INTELLIGENT_SOFT``, our extension) a page counts as
Pr(c*|page) of a satisfying page and 1 - Pr(c*|page) of another in every count.

A zero count would give a ratio of 0 (log = -inf): it is replaced by half a count
(a continuity correction), so that every log ratio is finite. Before K knows
both a satisfying and a non-satisfying page, P(C) is 0 or 1 and every ratio is
1 (no evidence).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from focused.learning.modelfile import ModelFileError, read_model, save_model
from focused.page.hashing import feature_ids

__all__ = [
    "FORMAT_VERSION",
    "KIND",
    "Knowledge",
    "KnowledgeError",
    "hash_tokens",
    "interest_ratios",
    "sibling_ratio",
    "url_tokens",
]

KIND = "intelligent"
FORMAT_VERSION = 1
#: Hash spaces of page words and of URL tokens.
WORD_DIMS = 2**20
TOKEN_DIMS = 2**18
#: The paper's significance threshold (standard deviations).
SIGNIFICANCE = 2.0
#: A zero count becomes this many (continuity correction).
HALF = 0.5
#: How words are cut and hashed; a K file with another scheme is refused.
SCHEME = "focused.text.tokenize+murmur3/v1"

_LINK_TYPES = ("pp", "pn", "np", "nn")


class KnowledgeError(ModelFileError):
    """A K file that cannot be used (missing, corrupt, another kind or version); the message says why."""


def url_tokens(url: str) -> list[str]:
    """The paper's URL tokens: the URL split on ``.`` and ``/`` (scheme and fragment dropped, lowercase, once each).

    >>> url_tokens("http://www.cs.cornell.edu/Courses/cs415/index.html")
    ['www', 'cs', 'cornell', 'edu', 'courses', 'cs415', 'index', 'html']
    """
    rest = url.split("#", 1)[0].lower()
    if "://" in rest:
        rest = rest.split("://", 1)[1]
    parts = rest.replace("/", ".").split(".")
    return list(dict.fromkeys(p for p in parts if p))


def hash_tokens(tokens: Iterable[str], dims: int) -> np.ndarray:
    """Sorted unique hashed ids (int32) of ``tokens``: the presence of each token, not its count."""
    return np.unique(np.asarray(feature_ids(dims).ids(tokens), dtype=np.int32))


def interest_ratios(
    n_c: np.ndarray, n: np.ndarray, p_c: float, t: float = SIGNIFICANCE
) -> tuple[np.ndarray, np.ndarray]:
    """Interest ratios P(C|E)/P(C) = n_c / (n P(C)) of events seen ``n`` times, ``n_c`` of them satisfying,
    and whether each is significant (S >= t).

    An event never seen (``n == 0``) gets ratio 1 and is not significant.
    """
    n = np.asarray(n, dtype=np.float64)
    n_c = np.asarray(n_c, dtype=np.float64)
    ratio = np.ones_like(n)
    significant = np.zeros(n.shape, dtype=bool)
    if not 0.0 < p_c < 1.0:
        return ratio, significant
    seen = n > 0
    cond = np.maximum(n_c[seen], HALF) / n[seen]  # P(C|E), a zero count as half a count
    ratio[seen] = cond / p_c
    s = np.abs(n_c[seen] / n[seen] - p_c) / np.sqrt(p_c * (1.0 - p_c) / n[seen])
    significant[seen] = s >= t
    return ratio, significant


def sibling_ratio(satisfying: float, visited: int, p_c: float) -> float:
    """The sibling ratio s / e with e = visited * P(C); 1 without visited siblings or without P(C).

    No satisfying sibling among ``visited`` counts as half a sibling (never above 1).
    """
    if visited <= 0 or not 0.0 < p_c < 1.0:
        return 1.0
    expected = visited * p_c
    return max(satisfying, min(HALF, expected)) / expected if satisfying < HALF else satisfying / expected


class Knowledge:
    """The statistics K of an intelligent crawl, updated after every fetched page."""

    def __init__(self, word_dims: int = WORD_DIMS, token_dims: int = TOKEN_DIMS) -> None:
        self.word_dims = word_dims
        self.token_dims = token_dims
        self.n_t = 0
        #: satisfying counts are floats: a soft crawl counts a page as Pr(c*|page) of a satisfying one
        self.n_c = 0.0
        self.word_n = np.zeros(word_dims, dtype=np.int64)
        self.word_nc = np.zeros(word_dims, dtype=np.float64)
        self.token_m = np.zeros(token_dims, dtype=np.int64)
        self.token_mc = np.zeros(token_dims, dtype=np.float64)
        self.links = dict.fromkeys(_LINK_TYPES, 0.0)
        #: Bumped by every update: cached ratios compare it.
        self.version = 0

    # -- updates -----------------------------------------------------------------

    def observe_page(self, word_ids: np.ndarray, token_ids: np.ndarray, satisfies: float) -> None:
        """One more crawled page: its (unique) hashed words and URL tokens and whether it satisfies C
        (1 or 0; a soft crawl gives the probability that it does)."""
        self.n_t += 1
        self.word_n[word_ids] += 1
        self.token_m[token_ids] += 1
        if satisfies:
            self.n_c += float(satisfies)
            self.word_nc[word_ids] += float(satisfies)
            self.token_mc[token_ids] += float(satisfies)
        self.version += 1

    def observe_link(self, source_satisfies: float, target_satisfies: float) -> None:
        """One more crawled link (both its pages crawled), by type (soft: split over the types)."""
        a, b = float(source_satisfies), float(target_satisfies)
        for key, share in (("pp", a * b), ("pn", a * (1 - b)), ("np", (1 - a) * b), ("nn", (1 - a) * (1 - b))):
            self.links[key] += share
        self.version += 1

    # -- estimates ---------------------------------------------------------------

    @property
    def p_c(self) -> float:
        """P(C) = N_c / N_t (0 before any page)."""
        return self.n_c / self.n_t if self.n_t else 0.0

    @property
    def n_links(self) -> float:
        return sum(self.links.values())

    def word_log_ratios(self, t: float = SIGNIFICANCE) -> np.ndarray:
        """log I(C, Q_i) per hashed word, 0 where not significant (float32, one per word id).

        The paper's heuristic (§4): P(C|Q_i) is estimated from the words of the
        crawled pages themselves, n_i^C / n_i, and then applied to the words of
        a candidate's inlinking pages.
        """
        return self._log_ratios(self.word_nc, self.word_n, t)

    def token_log_ratios(self, t: float = SIGNIFICANCE) -> np.ndarray:
        """log I(C, R_i) per hashed URL token, 0 where not significant."""
        return self._log_ratios(self.token_mc, self.token_m, t)

    def _log_ratios(self, n_c: np.ndarray, n: np.ndarray, t: float) -> np.ndarray:
        out = np.zeros(n.shape, dtype=np.float32)
        idx = np.flatnonzero(n)
        if len(idx):
            ratio, significant = interest_ratios(n_c[idx], n[idx], self.p_c, t)
            keep = idx[significant]
            out[keep] = np.log(ratio[significant])
        return out

    def significant_counts(self, t: float = SIGNIFICANCE) -> tuple[int, int]:
        """How many hashed words and URL tokens pass the significance filter now."""
        return int(np.count_nonzero(self.word_log_ratios(t))), int(np.count_nonzero(self.token_log_ratios(t)))

    def link_log_ratios(self) -> tuple[float, float]:
        """(log p, log q): a satisfying inlinking page multiplies the link ratio by p, another by q."""
        p_c, n_l = self.p_c, self.n_links
        if n_l == 0 or not 0.0 < p_c < 1.0:
            return 0.0, 0.0
        f1 = max(self.links["pp"], HALF) / n_l
        f3 = max(self.links["np"], HALF) / n_l
        return math.log(f1 / (p_c * p_c)), math.log(f3 / (p_c * (1.0 - p_c)))

    # -- files -------------------------------------------------------------------

    def to_bundle(self, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        def sparse(n: np.ndarray, n_c: np.ndarray) -> dict[str, np.ndarray]:
            idx = np.flatnonzero(n)
            return {"ids": idx.astype(np.int64), "n": n[idx], "n_c": n_c[idx]}

        return {
            "kind": KIND,
            "format_version": FORMAT_VERSION,
            "scheme": SCHEME,
            "word_dims": self.word_dims,
            "token_dims": self.token_dims,
            "n_t": self.n_t,
            "n_c": self.n_c,
            "links": dict(self.links),
            "words": sparse(self.word_n, self.word_nc),
            "tokens": sparse(self.token_m, self.token_mc),
            "metadata": dict(metadata or {}),
        }

    def save(self, path: str | Path, metadata: dict[str, Any] | None = None) -> Path:
        """Write K as one ``.npz`` (plain arrays + JSON header, never a pickle)."""
        return save_model(self.to_bundle(metadata), path)

    @classmethod
    def load(cls, path: str | Path) -> Knowledge:
        """Read a K file written by :meth:`save`; :class:`KnowledgeError` (one line) when it cannot be used."""
        hint = "Save one with -a save_knowledge=FILE at the end of an intelligent crawl"
        bundle = read_model(path, {KIND: (FORMAT_VERSION,)}, what="intelligent-crawl statistics", hint=hint,
                            error=KnowledgeError)  # fmt: skip
        try:
            return cls.from_bundle(bundle)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise KnowledgeError(f"intelligent-crawl statistics {path} are damaged ({exc}); {hint}") from exc

    @classmethod
    def from_bundle(cls, bundle: dict[str, Any]) -> Knowledge:
        if bundle.get("scheme") != SCHEME:
            raise ValueError(f"words hashed by {bundle.get('scheme')!r}, this focused uses {SCHEME!r}")
        k = cls(int(bundle["word_dims"]), int(bundle["token_dims"]))
        k.n_t, k.n_c = int(bundle["n_t"]), float(bundle["n_c"])
        if not 0 <= k.n_c <= k.n_t:
            raise ValueError(f"N_c = {k.n_c} outside [0, N_t = {k.n_t}]")
        k.links = {key: float(bundle["links"][key]) for key in _LINK_TYPES}
        for name, (n, n_c) in (("words", (k.word_n, k.word_nc)), ("tokens", (k.token_m, k.token_mc))):
            part = bundle[name]
            ids = np.asarray(part["ids"], dtype=np.int64)
            n[ids] = np.asarray(part["n"], dtype=np.int64)
            n_c[ids] = np.asarray(part["n_c"], dtype=np.float64)
        if (
            (k.word_nc > k.word_n + 1e-6).any()
            or (k.token_mc > k.token_m + 1e-6).any()
            or k.word_n.max(initial=0) > k.n_t
        ):
            raise ValueError("inconsistent counts")
        return k

    def __repr__(self) -> str:
        return f"Knowledge(N_t={self.n_t}, N_c={self.n_c}, links={self.links})"
