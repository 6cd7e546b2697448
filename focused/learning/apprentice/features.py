"""DOM-offset features ⟨t, d⟩ of the links of a page (Chakrabarti et al. 2002, §2.2).

The page is parsed once and its DOM leaves are numbered once, left to right.
Every link then reads the tokens of the leaves around it, so a page with many
links costs one parse and one pass.

Leaf model
----------
lxml (libxml2) repairs the HTML into a tree; comments and processing
instructions are dropped by the parser (text on both sides of a comment merges
into one text node, as if the comment had never been written), and
``<script>``, ``<style>`` and ``<template>`` subtrees are ignored. Text that is
only whitespace is source formatting, not content, and is not a node. What is
left is a DOM whose leaves are, in document order:

* every text node: an element's ``text`` (before its first child) and each
  child's ``tail`` (after that child, inside the parent);
* every element with no child left in that DOM (``<br>``, ``<img>``, ``<hr>``,
  an empty ``<td>``, ``<a href=x></a>``): an *empty leaf* without tokens, which
  still takes a number and so shifts offsets (the paper numbers "even those DOM
  leaves which have no text").

Tag names are not features (the paper's nameless DOM nodes) and tables flatten
row-major because their cells come in document order. The ``<a>`` element of a
link spans leaves ``l(a) .. r(a)`` (at least one, since an empty anchor is a
leaf itself). A token in leaf ``m`` is at offset ``d = 0`` when ``l(a) <= m <=
r(a)``, ``d = m - l(a) < 0`` left of the anchor and ``d = m - r(a) > 0`` right
of it (the paper's Fig. 3); only ``|d| <= d_max`` is kept.

Feature strings
---------------
* text near the link: ``"{token}@{d}"`` (``"course@-1"``), or just
  ``"{token}"`` with ``offsets=False`` (the "plain text near the link" of the
  paper's Fig. 7); tokens hold only letters and digits, so they never collide
  with the prefixed families below;
* source-page classes (§3.8): ``"cls:"``, ``"cls:Science"``, ...;
* cocitation (§2.2.3): ``"cocite:HIGH@2"``, ``"cocite:LOW@-1"``.

Features are hashed (:func:`hash_features`), so that workers share no
vocabulary, and can be stored compactly as int32 ids (:func:`compact`).
"""

from __future__ import annotations

import bisect
import codecs
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from focused.learning.apprentice.resolve import resolve_links
from focused.page.hashing import feature_ids
from focused.page.parse import parse_page
from focused.page.parsed import ParsedPage

logger = logging.getLogger(__name__)

#: Default DOM window (the paper settles on 4-5, §3.4).
D_MAX = 5
#: Default dimension of the hashed feature space.
N_FEATURES = 2**20

_TOKEN_RE = re.compile(r"[^\W_]+")
_DECLARED_RE = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)|<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""",
    re.IGNORECASE,
)
# WHATWG: a page labelled Latin-1/ASCII is decoded as windows-1252.
_ENCODING_ALIASES = {"latin_1": "cp1252", "iso8859_1": "cp1252", "ascii": "cp1252"}


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens of ``text``: runs of unicode letters/digits, length >= 2, not all digits.

    The one tokenizer of link features, so that training and serving agree.
    """
    return [t for t in _TOKEN_RE.findall(text.lower()) if len(t) >= 2 and not t.isdigit()]


@dataclass
class PageLinks:
    """The http(s) links of one page with their features.

    Lists are parallel and indexed like ``urls`` (unique targets, first-occurrence
    order). A page that links to the same URL several times gets, for that URL,
    the union of the features of all occurrences with counts added (a multiset,
    which is what multinomial naive Bayes expects), the distinct anchor texts
    joined with ``" | "``, and one ``(l, r)`` leaf span per occurrence.
    """

    urls: list[str] = field(default_factory=list)
    features: list[list[str]] = field(default_factory=list)
    anchors: list[str] = field(default_factory=list)
    spans: list[list[tuple[int, int]]] = field(default_factory=list)
    n_leaves: int = 0
    d_max: int = D_MAX
    offsets: bool = True

    def __len__(self) -> int:
        return len(self.urls)

    def cocitation_features(
        self, relevance: Mapping[str, float], *, threshold: float = 0.5, d_max: int | None = None
    ) -> list[list[str]]:
        """Cocitation features of every link; see :func:`cocitation_features`."""
        return cocitation_features(self, relevance, threshold=threshold, d_max=d_max)


def extract_link_features(
    html: str | bytes,
    base_url: str,
    *,
    d_max: int = D_MAX,
    encoding: str | None = None,
    offsets: bool = True,
    parsed: ParsedPage | None = None,
) -> PageLinks:
    """Parse ``html`` once and return every http(s) link with its ⟨t, d⟩ features.

    Parameters
    ----------
    html
        The page; ``bytes`` are decoded with ``encoding`` if given, else with the
        BOM or the charset declared in the page, else UTF-8 if valid, else
        windows-1252.
    base_url
        URL of the page; ``<base href>`` overrides it. Fragments are dropped and
        only http/https targets are kept.
    d_max
        Tokens at ``|d| > d_max`` are ignored.
    offsets
        ``False`` gives plain tokens near the link, without offsets.
    parsed
        The page as :func:`~focused.page.parse.parse_page` read it
        (the spider's one parse), instead of parsing ``html`` again.

    Links to the same URL are merged as :class:`PageLinks` describes; an empty
    or ``#fragment`` href is a link to the page itself. A document that is
    empty or cannot be parsed yields an empty result; this function does not
    raise on bad input. The page is read by
    :func:`~focused.page.parse.parse_page` (libxml2's HTML parser, the
    text prepared as for the critic, a streaming fallback for deep nesting).
    """
    if d_max < 0:
        raise ValueError(f"d_max must be >= 0, got {d_max}")
    page = PageLinks(d_max=d_max, offsets=offsets)
    if parsed is None:
        try:
            parsed = parse_page(html if isinstance(html, str) else decode_html(html, encoding))
        except Exception:  # libxml2 and the decoders have many ways to fail
            logger.debug("Could not parse %s", base_url, exc_info=True)
            return page
    leaves = parsed.leaves
    page.n_leaves = len(leaves)
    index: dict[str, int] = {}
    tokens: list[list[str] | None] = [None] * len(leaves)
    for (_, left, right), url in zip(parsed.links, resolve_links(parsed, base_url), strict=True):
        if url is None:
            continue
        i = index.get(url)
        if i is None:
            i = index[url] = len(page.urls)
            page.urls.append(url)
            page.features.append([])
            page.anchors.append("")
            page.spans.append([])
        page.spans[i].append((left, right))
        _window_features(page.features[i], leaves, tokens, left, right, d_max, offsets)
        text = " ".join(" ".join(leaves[left : right + 1]).split())
        if text and text not in page.anchors[i].split(" | "):
            page.anchors[i] = f"{page.anchors[i]} | {text}" if page.anchors[i] else text
    return page


def decode_html(data: bytes, encoding: str | None) -> str:
    """Bytes to text: given encoding, else BOM, else declared charset, else UTF-8, else windows-1252."""
    candidates: list[str] = []
    if encoding:
        candidates.append(encoding)
    if data.startswith(codecs.BOM_UTF8):
        return data[3:].decode("utf-8", "replace")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", "replace")
    match = _DECLARED_RE.search(data, 0, 4096)
    if match:
        candidates.append((match.group(1) or match.group(2)).decode("ascii"))
    for name in candidates:
        try:
            codec = codecs.lookup(name).name
        except LookupError:
            continue
        codec = _ENCODING_ALIASES.get(codec.replace("-", "_"), codec)
        if codec.startswith("utf_16") or codec.startswith("utf-16"):
            continue  # a declared UTF-16 in a page read as ASCII is a lie
        return data.decode(codec, "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", "replace")


def _window_features(
    out: list[str],
    leaves: list[str],
    tokens: list[list[str] | None],
    left: int,
    right: int,
    d_max: int,
    offsets: bool,
) -> None:
    """Append the features of the leaves within ``d_max`` of the span ``left..right``."""
    lo = max(0, left - d_max)
    hi = min(len(leaves) - 1, right + d_max)
    for m in range(lo, hi + 1):
        toks = tokens[m]
        if toks is None:
            toks = tokens[m] = tokenize(leaves[m]) if leaves[m] else []
        if not toks:
            continue
        if not offsets:
            out.extend(toks)
            continue
        d = m - left if m < left else (m - right if m > right else 0)
        suffix = f"@{d}"
        out.extend([t + suffix for t in toks])


def class_features(top_classes: Sequence[str]) -> list[str]:
    """Features naming the critic's top classes of the source page and all their prefixes (§3.8).

    Class names are hierarchical with ``.``: ``Science.Physics`` gives ``cls:``
    (the root), ``cls:Science`` and ``cls:Science.Physics``. A prefix shared by
    several top classes appears once: these describe the page, not a count.
    """
    out = ["cls:"]
    seen = {"cls:"}
    for name in top_classes:
        parts = [p for p in name.strip(".").split(".") if p]
        for k in range(1, len(parts) + 1):
            feat = "cls:" + ".".join(parts[:k])
            if feat not in seen:
                seen.add(feat)
                out.append(feat)
    return out


def cocitation_features(
    page: PageLinks,
    relevance: Mapping[str, float],
    *,
    threshold: float = 0.5,
    d_max: int | None = None,
) -> list[list[str]]:
    """Cocitation features ⟨HIGH|LOW, d⟩ of every link of ``page`` (§2.2.3, §3.8).

    ``relevance`` maps already-fetched URLs (as in ``page.urls``) to their
    Pr(c*|w); a sibling link to such a ``w`` within ``d_max`` leaves of the link
    to ``v`` (``w != v``) gives ``cocite:HIGH@d`` if its relevance is at least
    ``threshold``, else ``cocite:LOW@d``. ``d`` is the offset of the sibling's
    nearest leaf, as for tokens (negative left of the link, 0 if the anchors
    nest). Computed from the stored leaf spans, without reparsing.
    """
    d_max = page.d_max if d_max is None else d_max
    known: list[tuple[int, int, int, str]] = []  # (l, r, url index, label)
    for j, url in enumerate(page.urls):
        rel = relevance.get(url)
        if rel is None:
            continue
        label = "HIGH" if rel >= threshold else "LOW"
        known.extend((left, right, j, label) for left, right in page.spans[j])
    out: list[list[str]] = [[] for _ in page.urls]
    if not known:
        return out
    known.sort()
    starts = [k[0] for k in known]
    widest = max(k[1] - k[0] for k in known)
    for i, spans in enumerate(page.spans):
        feats = out[i]
        for left, right in spans:
            lo = bisect.bisect_left(starts, left - d_max - widest)
            hi = bisect.bisect_right(starts, right + d_max)
            for l2, r2, j, label in known[lo:hi]:
                if j == i:
                    continue
                d = l2 - right if l2 > right else (r2 - left if r2 < left else 0)
                if -d_max <= d <= d_max:
                    feats.append(f"cocite:{label}@{d}")
    return out


def hash_features(feature_lists: Sequence[Sequence[str]], n_features: int = N_FEATURES) -> sp.csr_matrix:
    """Hash lists of feature strings into a CSR count matrix (one row per list).

    MurmurHash3 with a fixed seed, scikit-learn's ``FeatureHasher`` ids
    (:mod:`focused.page.hashing`), so ids are the same in every process and
    workers need no shared vocabulary.
    """
    return feature_ids(n_features).counts(feature_lists)


def compact(features: Sequence[str], n_features: int = N_FEATURES) -> np.ndarray:
    """Hashed ids of one feature list as int32, repeated for counts (small enough for a frontier entry)."""
    return compact_many([features], n_features)[0]


def compact_many(feature_lists: Sequence[Sequence[str]], n_features: int = N_FEATURES) -> list[np.ndarray]:
    """:func:`compact` for many lists at once (one hashing call)."""
    if len(feature_lists) == 0:
        return []
    return feature_ids(n_features).sorted_rows(feature_lists)
