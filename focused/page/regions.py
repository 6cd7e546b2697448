"""Regions of a page's links: the lists and sections whose links the sibling feedback judges together.

A department page lists its faculty, its students and its courses; a page's sibling term
(:mod:`focused.learning.apprentice.siblings`) averaged over all its links mixes the three. A *region* is
the innermost container (a list, a table, a cell, a paragraph, a division...) that holds two
links or more, divided at headings, so that each list gets its own term. Computed during the
page's one parse (:func:`focused.page.parse.parse_page`); Scrapy-free.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["HEADINGS", "MIN_REGION_LINKS", "REGION_CONTAINERS", "link_regions"]

#: Headings divide a region: the links under one heading of a container are one region.
HEADINGS = frozenset("h1 h2 h3 h4 h5 h6".split())
#: Elements that hold a region of links: the block elements (:data:`focused.page.parsed.BLOCK`)
#: but lines, rules, headings and the document head.
REGION_CONTAINERS = frozenset(
    """
    address article aside blockquote body caption center dd details dialog dir div dl dt fieldset
    figcaption figure footer form frame frameset header html iframe legend li main menu nav ol p pre
    section select summary table tbody td textarea tfoot th thead tr ul
    """.split()
)
#: A region holds at least this many links (a list item of one link belongs to its list).
MIN_REGION_LINKS = 2


def link_regions(places: Sequence[tuple[tuple[int, ...], int]]) -> list[int]:
    """The region of each link: the innermost container around it holding ``MIN_REGION_LINKS`` links
    or more, divided at headings (the links under one heading of that container), numbered 0, 1, ...

    ``places`` gives each link's open containers (serials, outermost first) and the number of
    headings started before it. A ``<ul>`` of names is a region; so are the links of a page's body
    under one heading; a link alone in its container joins the container's parent.
    """
    count: dict[tuple[int, int], int] = {}
    for chain, headings in places:
        for serial in chain:
            count[serial, headings] = count.get((serial, headings), 0) + 1
    numbers: dict[tuple[int, int], int] = {}
    regions = []
    for chain, headings in places:
        key = next(((s, headings) for s in reversed(chain) if count[s, headings] >= MIN_REGION_LINKS), (0, headings))
        regions.append(numbers.setdefault(key, len(numbers)))
    return regions
