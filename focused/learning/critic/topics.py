"""Crawl topics over a critic's class taxonomy, and the critic's verdict on a page.

Class names are hierarchical with ``.`` (``rec.sport.hockey``,
``Science.Physics``; WebKB's page types are flat). A crawl topic is a class, a
subtree of the taxonomy (a prefix) or a comma-separated union of them; its
relevance is the posterior mass of the classes it covers. Everything here reads
only the list of class names, so the plain and the cross-fitted critic share it.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["MAX_LISTED_TOPICS", "Topic", "UnknownTopicError", "Verdict", "resolve_topic", "topics_of", "verdict_of"]

#: Topics listed in an :class:`UnknownTopicError` message before abbreviating.
MAX_LISTED_TOPICS = 40


class UnknownTopicError(ValueError):
    """A topic names no class or prefix of the critic's taxonomy."""

    def __init__(self, message: str, *, topic: str = "", valid: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.topic = topic
        self.valid = list(valid)


@dataclass(frozen=True)
class Topic:
    """A crawl topic: a union of classes and subtrees of the critic's taxonomy.

    ``prefixes`` are the normalised parts of the spec (``Science.Physics``);
    ``classes`` the critic classes they cover, in the critic's class order, at
    positions ``indices`` of its posteriors.
    """

    name: str
    prefixes: tuple[str, ...]
    classes: tuple[str, ...]
    indices: np.ndarray = field(compare=False, repr=False)

    def matches(self, label: str) -> bool:
        """Whether a ground-truth ``label`` (several may be joined by ``|``) is in the topic."""
        for part in label.split("|"):
            part = part.strip()
            for prefix in self.prefixes:
                if part == prefix or part.startswith(prefix + "."):
                    return True
        return False


@dataclass(frozen=True)
class Verdict:
    """The critic's judgement of one page for one topic."""

    relevance: float  #: Pr(topic | page), in [0, 1]
    predicted_class: str
    top_classes: tuple[str, ...]  #: the best three classes, best first
    #: Pr(topic | page) as the parent view of the page's links, when it is not ``relevance``: a critic
    #: with a verdict head (:mod:`focused.learning.critic.verdict_head`) keeps its naive Bayes posterior for that
    link_relevance: float | None = None

    @property
    def parent_view(self) -> float:
        """The page's relevance as its links' priors read it: ``link_relevance`` or, without one, ``relevance``."""
        return self.relevance if self.link_relevance is None else self.link_relevance


def verdict_of(
    post: np.ndarray, classes: Sequence[str], indices: np.ndarray, link_post: np.ndarray | None = None
) -> Verdict:
    """The verdict of one page from its posteriors ``post`` over ``classes``: Pr(topic | page) summed over the
    topic's class ``indices``, and the best three classes. ``link_post`` (naive Bayes, beside a verdict head's
    ``post``) gives ``link_relevance``."""
    order = np.argsort(-post, kind="stable")[:3]
    top = tuple(classes[i] for i in order)
    relevance = float(np.clip(post[indices].sum(), 0.0, 1.0))
    link = None if link_post is None else float(np.clip(link_post[indices].sum(), 0.0, 1.0))
    return Verdict(relevance=relevance, predicted_class=top[0], top_classes=top, link_relevance=link)


def topics_of(classes: Sequence[str]) -> list[str]:
    """Every valid topic name: each class and each proper prefix of the hierarchy."""
    names: set[str] = set()
    for cls_name in classes:
        parts = cls_name.split(".")
        names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    names.discard("")
    return sorted(names)


def resolve_topic(classes: Sequence[str], spec: str) -> Topic:
    """Resolve ``spec`` into a :class:`Topic` over ``classes``.

    ``spec`` is a class, a prefix of the hierarchy (a subtree; ``/`` works as
    a separator, as in ``Science/Physics``) or a comma-separated union of
    those. Names match exactly or, failing that, case-insensitively.

    Raises
    ------
    UnknownTopicError
        When a part names nothing; the message lists the valid topics.
    """
    valid = topics_of(classes)
    exact = set(valid)
    folded: dict[str, list[str]] = {}
    for name in valid:
        folded.setdefault(name.casefold(), []).append(name)
    prefixes: list[str] = []
    for raw in str(spec).split(","):
        part = raw.strip().replace("/", ".").strip(".")
        if part in exact:
            prefixes.append(part)
        elif len(folded.get(part.casefold(), [])) == 1:
            prefixes.append(folded[part.casefold()][0])
        else:
            raise UnknownTopicError(_unknown_message(raw.strip(), spec, valid), topic=raw.strip(), valid=valid)
    prefixes = list(dict.fromkeys(prefixes))
    covered = [i for i, c in enumerate(classes) if any(c == p or c.startswith(p + ".") for p in prefixes)]
    indices = np.array(covered, dtype=np.intp)
    indices.setflags(write=False)
    return Topic(
        name=",".join(prefixes),
        prefixes=tuple(prefixes),
        classes=tuple(classes[i] for i in covered),
        indices=indices,
    )


def _unknown_message(part: str, spec: str, valid: Sequence[str]) -> str:
    what = f"unknown topic {part!r}" if part == spec.strip() else f"unknown topic {part!r} in {spec!r}"
    if not part:
        what = f"empty topic in {spec!r}"
    close = difflib.get_close_matches(part.replace("/", "."), valid, n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    listed = ", ".join(valid[:MAX_LISTED_TOPICS])
    if len(valid) > MAX_LISTED_TOPICS:
        listed += f", ... ({len(valid) - MAX_LISTED_TOPICS} more; `focused topics --model PATH` lists all)"
    return f"{what}{hint}. Valid topics: {listed}"
