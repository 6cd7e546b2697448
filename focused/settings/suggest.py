"""Nearest valid names for a mistyped one: setting and argument names, and topics.

A topic is suggested by its name (a close spelling of a class, of a prefix of
the class hierarchy, or of a class's last part: ``physic`` -> ``Science.Physics``)
and by what the critic read: the classes whose training text uses the topic's
words most (``Birds`` -> ``Science.Biology``). The critic's features are hashed,
so a word the model never saw may collide with one it did; these are hints.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any

#: A class must use the topic's words at least this many times to be suggested by them...
MIN_WORD_COUNT = 20
#: ...and at least this many times more often (per word of its text) than the whole training text does.
MIN_LIFT = 2.0


def nearest(name: str, valid: Iterable[str], n: int = 3) -> list[str]:
    """The closest spellings of ``name`` among ``valid`` (case-insensitive)."""
    by_fold: dict[str, str] = {}
    for v in valid:
        by_fold.setdefault(v.casefold(), v)
    close = difflib.get_close_matches(name.casefold(), list(by_fold), n=n, cutoff=0.6)
    return [by_fold[c] for c in close]


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    """`` (did you mean X?)`` or an empty string."""
    close = nearest(name, valid)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def topic_suggestions(critic: Any, spec: str, n: int = 5) -> list[str]:
    """Valid topics close to ``spec``: by name first, then by the classes that use its words."""
    topics: list[str] = critic.topics()
    wanted = spec.replace("/", ".").strip()
    out = nearest(wanted, topics, n)
    last_parts: dict[str, str] = {}
    for cls_name in critic.classes:
        last_parts.setdefault(cls_name.rsplit(".", 1)[-1], cls_name)
    out += [last_parts[p] for p in nearest(wanted.rsplit(".", 1)[-1], last_parts, n)]
    out += classes_using_words(critic, wanted.replace(".", " ").replace("_", " "), n)
    return list(dict.fromkeys(out))[:n]


def classes_using_words(critic: Any, text: str, n: int = 3) -> list[str]:
    """The classes whose training text uses the words of ``text`` most, relative to their length.

    Works on a :class:`~focused.learning.critic.naive_bayes.Critic` or the fold models of a
    cross-fitted critic (their counts are summed); any other model gives no suggestion.
    """
    import numpy as np  # here: a crawl's settings check imports this module, and suggests only on a bad topic

    models = list(getattr(critic, "folds", None) or [critic])
    counts: dict[str, float] = {}
    totals: dict[str, float] = {}
    for model in models:
        fc = getattr(model, "feature_count_", None)
        if fc is None or not hasattr(model, "transform"):
            return []
        cols = model.transform([text]).indices
        if len(cols) == 0:
            return []
        used = np.asarray(fc[:, cols].sum(axis=1)).ravel()
        total = np.asarray(fc.sum(axis=1)).ravel()
        for cls_name, u, t in zip(model.classes, used, total, strict=True):
            counts[cls_name] = counts.get(cls_name, 0.0) + float(u)
            totals[cls_name] = totals.get(cls_name, 0.0) + float(t)
    overall = sum(counts.values()) / max(sum(totals.values()), 1.0)
    if overall <= 0:
        return []
    lift = {c: (counts[c] / totals[c]) / overall for c in counts if totals[c] > 0 and counts[c] >= MIN_WORD_COUNT}
    ranked = sorted((c for c in lift if lift[c] >= MIN_LIFT), key=lambda c: -lift[c])
    return ranked[:n]


def listed(values: Sequence[str], limit: int = 40) -> str:
    """``a, b, c`` (at most ``limit``, then how many more)."""
    text = ", ".join(values[:limit])
    if len(values) > limit:
        text += f", ... ({len(values) - limit} more)"
    return text
