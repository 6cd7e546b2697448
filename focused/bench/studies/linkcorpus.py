"""The link corpus of the feature studies: every link between two stored HTML pages, with its ⟨t, d⟩ features.

Instances are the links (u, v) between two stored HTML pages of an archive (v
found as the replay answers it: ``dir`` → ``dir/`` → ``dir/index.html``, stored
redirects followed), features from u's HTML. Each page is parsed once with the
largest ``d_max``; the features of a smaller window are the ones with
``|d| <= d_max`` (the same multiset
:func:`~focused.learning.apprentice.features.extract_link_features` gives for that
window), and plain text is the same tokens without ``@d``. Every distinct
feature string is hashed once.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from urllib.parse import urljoin

import numpy as np

from focused.learning.apprentice.features import N_FEATURES, extract_link_features, hash_features
from focused.page.text import content_type_charset, html_to_text
from focused.replay.store import ReplayStore, StoredResponse
from focused.replay.urlnorm import normalize_url

__all__ = ["LinkCorpus", "link_corpus"]

logger = logging.getLogger(__name__)

_MAX_REDIRECTS = 3


@dataclass
class LinkCorpus:
    """Every link between stored HTML pages, with its features at every offset.

    Pages are indexed ``0 .. n_pages-1`` (``urls``, ``groups``, ``labels``,
    ``texts``); link ``i`` goes from ``src[i]`` to ``dst[i]``. Its features are
    ``off_ids[indptr[i]:indptr[i+1]]`` (hashed ``t@d``), aligned with
    ``plain_ids`` (hashed ``t``) and ``dist`` (``|d|``).
    """

    urls: list[str]
    groups: list[str]
    labels: list[str | None]
    texts: list[str]
    src: np.ndarray
    dst: np.ndarray
    indptr: np.ndarray
    off_ids: np.ndarray
    plain_ids: np.ndarray
    dist: np.ndarray
    d_max: int
    n_features: int
    seconds: float

    def __len__(self) -> int:
        return len(self.src)

    def features(self, d_max: int, variant: str = "offsets") -> list[np.ndarray]:
        """Compact feature ids of every link for a window ``d_max`` (``variant``: offsets or plain)."""
        if d_max > self.d_max:
            raise ValueError(f"features were extracted up to d_max={self.d_max}, not {d_max}")
        ids = self.off_ids if variant == "offsets" else self.plain_ids
        keep = self.dist <= d_max
        link_of = np.repeat(np.arange(len(self)), np.diff(self.indptr))
        lengths = np.bincount(link_of[keep], minlength=len(self))
        return np.split(ids[keep], np.cumsum(lengths)[:-1])


def _is_html(resp: StoredResponse) -> bool:
    content_type = (resp.header("Content-Type") or "").split(";")[0].strip().lower()
    return resp.status == 200 and (not content_type or "html" in content_type)


def _target(store: ReplayStore, url: str) -> StoredResponse | None:
    """The stored response a crawler ends on when following ``url`` (redirects followed)."""
    for _ in range(_MAX_REDIRECTS + 1):
        try:
            lookup = store.resolve(url)
        except ValueError:
            return None
        resp = lookup.response
        if resp is None:
            if lookup.redirect is None:
                return None
            url = lookup.redirect
            continue
        location = resp.header("Location") if 300 <= resp.status < 400 else None
        if location is None:
            return resp
        url = urljoin(resp.url, location.strip())
    return None


def link_corpus(store: ReplayStore, *, d_max: int = 7, n_features: int = N_FEATURES) -> LinkCorpus:
    """Parse every stored HTML page once and collect the links between stored HTML pages."""
    start = time.perf_counter()
    page_id: dict[str, int] = {}
    pages: list[StoredResponse] = []
    for resp in store.responses():
        if _is_html(resp):
            page_id[normalize_url(resp.url)] = len(pages)
            pages.append(resp)
    off_vocab: dict[str, int] = {}
    plain_vocab: dict[str, int] = {}
    parsed: dict[str, tuple[int, int, int]] = {}  # "t@d" -> (offset id, plain id, |d|)
    src: list[int] = []
    dst: list[int] = []
    lengths: list[int] = []
    chunks: list[list[tuple[int, int, int]]] = []
    texts: list[str] = []
    for u, resp in enumerate(pages):
        charset = content_type_charset(resp.header("Content-Type"))
        texts.append(html_to_text(resp.body, charset))
        links = extract_link_features(resp.body, resp.url, d_max=d_max, encoding=charset)
        merged: dict[int, list[tuple[int, int, int]]] = {}
        for url, feats in zip(links.urls, links.features, strict=True):
            target = _target(store, url)
            if target is None:
                continue
            v = page_id.get(normalize_url(target.url))
            if v is None or v == u:
                continue
            rows = merged.setdefault(v, [])
            for feat in feats:
                row = parsed.get(feat)
                if row is None:
                    token, _, d = feat.rpartition("@")
                    oid = off_vocab.setdefault(feat, len(off_vocab))
                    pid = plain_vocab.setdefault(token, len(plain_vocab))
                    row = parsed[feat] = (oid, pid, abs(int(d)))
                rows.append(row)
        for v, rows in merged.items():
            src.append(u)
            dst.append(v)
            lengths.append(len(rows))
            chunks.append(rows)
    flat = np.array([r for rows in chunks for r in rows], dtype=np.int64).reshape(-1, 3)
    off_hash = _hash_vocab(off_vocab, n_features)
    plain_hash = _hash_vocab(plain_vocab, n_features)
    indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    corpus = LinkCorpus(
        urls=[p.url for p in pages],
        groups=[store.group_of(p.url) or "" for p in pages],
        labels=[store.label_of(p.url) for p in pages],
        texts=texts,
        src=np.asarray(src, dtype=np.int64),
        dst=np.asarray(dst, dtype=np.int64),
        indptr=indptr,
        off_ids=off_hash[flat[:, 0]],
        plain_ids=plain_hash[flat[:, 1]],
        dist=flat[:, 2].astype(np.int16),
        d_max=d_max,
        n_features=n_features,
        seconds=time.perf_counter() - start,
    )
    logger.info(
        "%d links between %d stored HTML pages (%d distinct <t,d> features) in %.1f s",
        len(corpus), len(pages), len(off_vocab), corpus.seconds,
    )  # fmt: skip
    return corpus


def _hash_vocab(vocab: dict[str, int], n_features: int) -> np.ndarray:
    """Hashed id of each vocabulary entry, indexed by its local id (one hashing call)."""
    if not vocab:
        return np.zeros(0, dtype=np.int32)
    X = hash_features([[s] for s in vocab], n_features)  # dicts keep insertion order = local id
    return X.indices.astype(np.int32)
