"""The critic's classes, cut from the Wikispeedia category tree (after the paper's §3.1 pruning).

A category path such as ``Science.Physics.The_Planets`` becomes a class by cutting it at
``level`` (default 2, ``Science.Physics``):

- a path at least ``level`` deep keeps its first ``level`` parts;
- a shorter path naming an internal node (one with sub-categories) goes to that
  node's ``Other`` leaf (``Science`` -> ``Science.Other``), as in the paper's step 4;
- a shorter path naming a leaf stays as it is (``Countries``, ``Mathematics``: top-level
  subjects without sub-categories).

``min_size`` (the paper's *k*) then merges every class with fewer articles into its
parent's ``Other`` leaf, once (the paper iterates; with one level of cut there is
nothing more to fold). Top-level classes are never merged.

On the real corpus (4,597 categorised articles) level 2 gives 105 classes, from
``Science.Biology`` (698 articles), ``Countries`` (229) and ``Science.Physics`` (222)
down to ``IT.Cryptography`` (6) and ``Art.Artists`` (2); median 26, 6 classes under
10 and 32 under 20. No article is filed directly under an internal subject, so there
is no ``Other`` class at level 2 (level 3 has 129 classes, 6 of them ``Other``;
level 1 the 15 subjects). The default ``min_size`` is 0, no merging: with k = 10
(6 classes merged, 103 left) the 5-fold accuracy was 0.607 against 0.605 (2**18
features, alpha 0.1), and k = 20 merges 32 classes (all of ``Citizenship`` but
``Environment`` and ``Politics_and_government``, three of the four ``Music`` classes)
into coarse ``Other`` leaves, losing topics a user may want.

Several categories: an article trains once per distinct class (590 articles have 2
categories and 8 have 3; 585 of them span 2 or 3 classes, 5,189 training copies in
all), and the ground truth is the full category paths: a page is relevant to a
topic when ANY of its categories falls under it
(:meth:`focused.learning.critic.topics.Topic.matches` on the ``|``-joined paths of the
labels file).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

OTHER = "Other"
DEFAULT_LEVEL = 2
DEFAULT_MIN_SIZE = 0


@dataclass(frozen=True)
class Taxonomy:
    """How category paths map to classes; build it with :func:`build_taxonomy`.

    ``internal`` holds the category nodes that have sub-categories; ``merged`` maps a
    small class to the ``Other`` class its articles moved to; ``sizes`` counts the
    articles of each final class.
    """

    level: int = DEFAULT_LEVEL
    min_size: int = DEFAULT_MIN_SIZE
    internal: frozenset[str] = frozenset()
    merged: Mapping[str, str] = field(default_factory=dict)
    sizes: Mapping[str, int] = field(default_factory=dict)

    @property
    def classes(self) -> list[str]:
        return sorted(self.sizes)

    def cut(self, category: str) -> str:
        """Return the class of one category path, before merging."""
        parts = category.split(".")
        if len(parts) >= self.level:
            return ".".join(parts[: self.level])
        if category in self.internal:
            return f"{category}.{OTHER}"
        return category

    def classes_of(self, categories: Iterable[str]) -> list[str]:
        """Return the distinct classes of an article's categories, in first-seen order."""
        out: list[str] = []
        for category in categories:
            cls = self.cut(category)
            cls = self.merged.get(cls, cls)
            if cls not in out:
                out.append(cls)
        return out


def article_classes(categories: Iterable[str], taxonomy: Taxonomy | None = None) -> list[str]:
    """Return the distinct classes of an article's category paths.

    Without a ``taxonomy`` (which knows the tree) paths are cut at level 2, and a
    shorter path is taken for a leaf; pass :func:`build_taxonomy`'s result to get the
    ``Other`` leaves and the merging of small classes.
    """
    return (taxonomy or Taxonomy()).classes_of(categories)


def build_taxonomy(
    categories: Mapping[str, Iterable[str]],
    *,
    level: int = DEFAULT_LEVEL,
    min_size: int = DEFAULT_MIN_SIZE,
) -> Taxonomy:
    """Build the class taxonomy from ``article -> category paths``.

    Parameters
    ----------
    categories
        Each article's dotted category paths (``Science.Physics.The_Planets``).
    level
        Depth of the classes (1 = the 15 subjects, 2 = ``Science.Physics``).
    min_size
        Merge classes with fewer articles than this into their parent's ``Other``.
    """
    if level < 1:
        raise ValueError("level must be at least 1")
    cats = {article: list(paths) for article, paths in categories.items()}
    internal = frozenset(
        ".".join(parts[:i])
        for paths in cats.values()
        for path in paths
        if (parts := path.split("."))
        for i in range(1, len(parts))
    )
    base = Taxonomy(level=level, min_size=min_size, internal=internal)
    sizes = _sizes(base, cats)
    merged = {
        cls: f"{cls.rsplit('.', 1)[0]}.{OTHER}"
        for cls, n in sizes.items()
        if n < min_size and "." in cls and not cls.endswith(f".{OTHER}")
    }
    base = Taxonomy(level=level, min_size=min_size, internal=internal, merged=merged)
    return Taxonomy(level, min_size, internal, merged, _sizes(base, cats))


def _sizes(taxonomy: Taxonomy, categories: Mapping[str, list[str]]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for paths in categories.values():
        counts.update(taxonomy.classes_of(paths))
    return dict(sorted(counts.items()))
