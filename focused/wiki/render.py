"""Render the Wikispeedia corpus as a small encyclopedia site ("Wikipedia for Schools").

Wikispeedia has text and a link list but no HTML, so the site is an assumption; it is
deterministic (same corpus, same bytes) and deliberately plain:

URLs, all under one reserved ``.test`` host, root-relative in the pages:

- ``http://wikischools.test/wiki/<name>``: one page per article, the decoded name
  percent-encoded except for letters, digits, ``_.-~`` and ``()'!,`` (``Mercury_(planet)``,
  ``%C3%85land``): a form that Scrapy's link extraction and the replay's
  ``normalize_url`` leave unchanged;
- ``http://wikischools.test/``: the main page, linking the subject portals;
- ``http://wikischools.test/portal/<Subject>``: one portal per top-level subject
  (15 on the real corpus), listing its categories with article counts as plain
  text; portals link to no article;
- ``http://wikischools.test/about``: about the site, linking the corpus's unlisted
  pages (the SOS Children donation forms).

Every page has the same header navigation bar (Main page, the portals, About) and
footer (About, Licence -> the GFDL text page, Donate -> the donation page, Main
page, each when that page exists). This is the "distracting navigation" of the
paper's setting: on every page, never topical. As no navigation page links an
article, the article-to-article links of the site are exactly the Wikispeedia
graph, and navigation costs a crawler at most 23 fetches on the real corpus (main,
15 portals, about, licence, donate and the 4 other charity pages). On the real
corpus 81% of the 119,769 links land inline, 19% (22,769) in "See also".

An article page holds the title in ``<h1>`` (and ``<title>``), one ``<p>`` per
paragraph of the text (blank-line separated blocks, whitespace collapsed), and its
outgoing links: each link is placed around the first occurrence of its anchor text
in the paragraphs, the rest are listed under "See also" in ``links.tsv`` order. The
anchor text is the target's title without a trailing disambiguation in parentheses
("Mercury (planet)" -> "Mercury"), matched case-insensitively between word
boundaries (on lowercased text). Occurrences are taken left to right, the longest at
a position, so links never nest or overlap; when several targets share an anchor the
occurrences go to them in order. Text is HTML-escaped.
"""

from __future__ import annotations

import bisect
import html
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from focused.corpora.wikispeedia import Article, Wikispeedia

HOST = "wikischools.test"
BASE_URL = f"http://{HOST}"
SITE_NAME = "Wikipedia for Schools"
#: Articles the footer links when present (the GFDL text and the donation form).
LICENCE_ARTICLE = "Wikipedia_Text_of_the_GNU_Free_Documentation_License"
DONATE_ARTICLE = "Donation"

_DISAMBIGUATION = re.compile(r"\s+\([^()]*\)$")


#: Characters left unencoded in page paths besides the unreserved ones (as Wikipedia does).
_PATH_SAFE = "()'!,"


def article_path(name: str) -> str:
    return "/wiki/" + quote(name, safe=_PATH_SAFE)


def article_url(name: str) -> str:
    """Return the absolute URL of an article page from its decoded name."""
    return BASE_URL + article_path(name)


def portal_path(subject: str) -> str:
    return "/portal/" + quote(subject, safe=_PATH_SAFE)


def portal_url(subject: str) -> str:
    return BASE_URL + portal_path(subject)


MAIN_URL = BASE_URL + "/"
ABOUT_URL = BASE_URL + "/about"


def anchor_text(title: str) -> str:
    """Return the text a link to an article with this title is placed on."""
    return _DISAMBIGUATION.sub("", title).strip() or title


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


def _link(href: str, text: str) -> str:
    return f'<a href="{html.escape(href)}">{_esc(text)}</a>'


def _label(subject: str) -> str:
    return subject.replace("_", " ")


def paragraphs(text: str) -> list[str]:
    """Split article text into paragraphs: blank-line separated, whitespace collapsed."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        para = " ".join(block.split())
        if para:
            out.append(para)
    return out


def _fold(text: str) -> str:
    """Lowercase without changing the length (offsets stay valid); ``İ`` is the one exception."""
    lower = text.lower()
    if len(lower) == len(text):
        return lower
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _find(text: str, anchor: str, start: int) -> int:
    """Return the first occurrence of ``anchor`` at or after ``start`` between word boundaries, or -1."""
    size = len(anchor)
    pos = text.find(anchor, start)
    while pos >= 0:
        end = pos + size
        if not (pos and _is_word(text[pos - 1])) and not (end < len(text) and _is_word(text[end])):
            return pos
        pos = text.find(anchor, pos + 1)
    return -1


def place_links(
    paras: Sequence[str], targets: Sequence[str], titles: Mapping[str, str]
) -> tuple[list[list[tuple[int, int, str]]], list[str]]:
    """Place links on their anchor text.

    Returns, for each paragraph, the ``(start, end, target)`` spans in order, and the
    targets left for "See also" (in ``targets`` order).
    """
    by_anchor: dict[str, list[str]] = {}
    for target in targets:
        by_anchor.setdefault(_fold(anchor_text(titles[target])), []).append(target)
    # Search the lowercased paragraphs joined by newlines (anchors hold none), then
    # take occurrences left to right, the longest at a position, skipping overlaps.
    whole = "\n".join(_fold(para) for para in paras)
    starts = list(itertools.accumulate((len(para) + 1 for para in paras), initial=0))
    found = []
    for anchor in by_anchor:
        pos = _find(whole, anchor, 0)
        while pos >= 0:
            found.append((pos, -len(anchor), anchor))
            pos = _find(whole, anchor, pos + 1)
    found.sort()
    spans: list[list[tuple[int, int, str]]] = [[] for _ in paras]
    placed: set[str] = set()
    covered = 0
    for pos, neg_size, anchor in found:
        if pos < covered:
            continue
        covered = pos - neg_size
        waiting = [t for t in by_anchor[anchor] if t not in placed]
        if waiting:
            placed.add(waiting[0])
            i = bisect.bisect_right(starts, pos) - 1
            spans[i].append((pos - starts[i], covered - starts[i], waiting[0]))
    return spans, [t for t in targets if t not in placed]


@dataclass(frozen=True)
class Site:
    """What every page needs: titles, subjects, and the navigation/footer links."""

    titles: Mapping[str, str]
    subjects: Sequence[str]
    nav: str
    footer: str

    @classmethod
    def from_corpus(cls, wiki: Wikispeedia) -> Site:
        subjects = sorted({c.split(".")[0] for cats in wiki.categories.values() for c in cats})
        nav_links = [("/", "Main page")]
        nav_links += [(portal_path(s), _label(s)) for s in subjects]
        nav_links.append(("/about", "About"))
        foot = [("/about", "About")]
        if LICENCE_ARTICLE in wiki.articles:
            foot.append((article_path(LICENCE_ARTICLE), "Licence"))
        if DONATE_ARTICLE in wiki.articles:
            foot.append((article_path(DONATE_ARTICLE), "Donate"))
        foot.append(("/", "Main page"))
        nav = "\n".join(f"<li>{_link(h, t)}</li>" for h, t in nav_links)
        footer = " | ".join(_link(h, t) for h, t in foot)
        titles = {name: article.title for name, article in wiki.articles.items()}
        return cls(titles, subjects, f'<ul id="nav">\n{nav}\n</ul>', footer)

    def page(self, title: str, content: str) -> bytes:
        """Wrap content in the site's page template."""
        return (
            "<!DOCTYPE html>\n"
            '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{_esc(title)} - {SITE_NAME}</title>\n</head>\n<body>\n"
            f'<div id="header">\n<p class="site">{_esc(SITE_NAME)}</p>\n{self.nav}\n</div>\n'
            f'<div id="content">\n{content}\n</div>\n'
            f'<div id="footer">\n<p>Text from the English Wikipedia, available under the GNU Free '
            f"Documentation License.</p>\n<p>{self.footer}</p>\n</div>\n</body>\n</html>\n"
        ).encode()


def render_article(site: Site, article: Article, targets: Sequence[str]) -> bytes:
    """Render one article page (see the module docstring for the layout)."""
    paras = paragraphs(article.text)
    spans, rest = place_links(paras, targets, site.titles)
    body = [f"<h1>{_esc(article.title)}</h1>"]
    for para, para_spans in zip(paras, spans, strict=True):
        pieces, pos = [], 0
        for start, end, target in para_spans:
            pieces.append(_esc(para[pos:start]))
            pieces.append(_link(article_path(target), para[start:end]))
            pos = end
        pieces.append(_esc(para[pos:]))
        body.append(f"<p>{''.join(pieces)}</p>")
    if rest:
        items = "\n".join(f"<li>{_link(article_path(t), site.titles[t])}</li>" for t in rest)
        body.append(f'<h2>See also</h2>\n<ul class="see-also">\n{items}\n</ul>')
    return site.page(article.title, "\n".join(body))


def render_main(site: Site, n_articles: int) -> bytes:
    items = "\n".join(f"<li>{_link(portal_path(s), _label(s))}</li>" for s in site.subjects)
    return site.page(
        "Main page",
        f"<h1>{SITE_NAME}</h1>\n<p>A free encyclopedia for schools: {n_articles} articles "
        f"selected from the English Wikipedia, arranged by subject.</p>\n"
        f'<h2>Subjects</h2>\n<ul class="portals">\n{items}\n</ul>',
    )


def render_portal(site: Site, subject: str, counts: Mapping[str, int]) -> bytes:
    """A subject portal: its categories with article counts, as plain text."""
    rows = [
        f"<li>{_esc(_label(cat.partition('.')[2]).replace('.', ' / '))}: {n} articles</li>"
        for cat, n in sorted(counts.items())
        if cat.startswith(subject + ".")
    ]
    total = counts.get(subject, 0)
    content = f"<h1>{_esc(_label(subject))}</h1>\n<p>{total} articles on {_esc(_label(subject))}.</p>"
    if rows:
        content += "\n<h2>Categories</h2>\n<ul>\n" + "\n".join(rows) + "\n</ul>"
    return site.page(_label(subject), content)


def render_about(site: Site, extra: Sequence[Article]) -> bytes:
    items = "\n".join(f"<li>{_link(article_path(a.name), a.title)}</li>" for a in extra)
    content = (
        f"<h1>About {SITE_NAME}</h1>\n<p>This selection of Wikipedia articles was made for "
        "schools by a children's charity, checked for suitability and arranged by subject. "
        "Each article links to related articles of the selection.</p>"
    )
    if items:
        content += f"\n<h2>Support the charity</h2>\n<ul>\n{items}\n</ul>"
    return site.page("About", content)
