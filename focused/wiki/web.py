"""The rendered Wikispeedia site and its files.

:func:`build_wiki_web` renders the corpus (see :mod:`focused.wiki.render`) into
``out_dir``:

- ``wiki.warc.gz``: one ``response`` record per page (articles, main page, portals,
  about page) plus ``/robots.txt`` (allow all), ``Content-Type: text/html;
  charset=utf-8``, ``Date`` fixed at 1 July 2007;
- ``wiki.labels.tsv``: ``url, label, group``; an article's label is its full
  category paths joined by ``|`` (``Science.Physics.The_Planets``), so that any
  prefix topic can be checked with :meth:`~focused.learning.critic.topics.Topic.matches`;
  group = the top-level subject of its first category. Navigation pages are
  labelled ``Navigation``, the 7 articles without a category ``Uncategorised``:
  both are relevant to no topic;
- ``wiki.links.tsv``: the article link graph as ``source URL<TAB>target URL`` (the
  navigation adds no article edges, so this is the site's article graph), for
  :func:`reachable_from`;
- ``wiki.web.json``: page and link counts.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from focused.corpora import corpora_dir
from focused.corpora.wikispeedia import Wikispeedia, load_wikispeedia
from focused.replay.files import atomic_output
from focused.replay.labels import write_labels
from focused.replay.store import StoredResponse
from focused.replay.warc import write_warc
from focused.wiki import render
from focused.wiki.graph import link_graph

logger = logging.getLogger(__name__)

#: Where generated data goes by default (relative to the working directory; git-ignored).
DEFAULT_OUT = Path("results/cache/wiki")
ARCHIVE_NAME = "wikispeedia.tar.gz"
NAV_LABEL = "Navigation"
NO_CATEGORY_LABEL = "Uncategorised"
CAPTURE_DATE = "Sun, 01 Jul 2007 00:00:00 GMT"

#: Bump when the rendering changes: cached outputs of another version are rebuilt.
SITE_VERSION = 1

WARC_NAME = "wiki.warc.gz"
LABELS_NAME = "wiki.labels.tsv"
LINKS_NAME = "wiki.links.tsv"
WEB_MANIFEST = "wiki.web.json"


def default_archive() -> Path:
    return corpora_dir() / ARCHIVE_NAME


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


def read_manifest(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_manifest(path: Path, data: dict[str, Any]) -> None:
    with atomic_output(path) as fh:
        fh.write((json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))


def _web_paths(out: Path) -> list[Path]:
    return [out / WARC_NAME, out / LABELS_NAME, out / LINKS_NAME, out / WEB_MANIFEST]


def web_up_to_date(out: Path, archive: Path) -> bool:
    paths = _web_paths(out)
    return outputs_fresh(paths, archive) and read_manifest(paths[3]).get("version") == SITE_VERSION


def outputs_fresh(outputs: Iterable[Path], source: Path) -> bool:
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
    counts = read_manifest(paths[3])
    if not force and web_up_to_date(out, archive):
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
    write_manifest(paths[3], counts)
    logger.info("built the wiki web in %s: %d pages, %d article links", out, pages, n_links)
    return WikiWeb(paths[0], paths[1], paths[2], pages, len(wiki.articles), n_links, True)
