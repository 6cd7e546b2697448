"""Page labels as a TSV file: ``url<TAB>label[<TAB>group]``.

Lines starting with ``#`` and blank lines are ignored. A page with several
labels has them joined by ``|`` (``faculty|staff``); a URL listed on several
lines gets the union of its labels. URLs are normalised on read, so the keys
match :class:`~focused.replay.store.ReplayStore`'s.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from pathlib import Path

from focused.replay.files import StoreError, atomic_output
from focused.replay.store import merge_labels
from focused.replay.urlnorm import normalize_url
from focused.urls import collapse_aliases

__all__ = ["first_fetches_on_topic", "label_key_lookup", "label_lookup", "read_labels", "write_labels"]

_HEADER = "# url\tlabel\tgroup\n"


def read_labels(path: str | Path) -> tuple[dict[str, str], dict[str, str]]:
    """Read a labels TSV into ``(labels, groups)``, both keyed by normalized URL.

    Raises
    ------
    StoreError
        When the file cannot be read or a line is malformed (the message gives
        the line number).
    """
    labels: dict[str, str] = {}
    groups: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                line = line.rstrip("\r\n")
                if not line.strip() or line.startswith("#"):
                    continue
                fields = line.split("\t")
                if not 2 <= len(fields) <= 3 or not fields[1].strip():
                    raise StoreError(f"{path}:{lineno}: expected url<TAB>label[<TAB>group], got {line!r}")
                try:
                    key = normalize_url(fields[0])
                except ValueError as exc:
                    raise StoreError(f"{path}:{lineno}: {exc}") from exc
                labels[key] = merge_labels(labels.get(key), fields[1].strip()) or ""
                if len(fields) == 3 and fields[2].strip():
                    groups.setdefault(key, fields[2].strip())
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"cannot read labels file {path}: {exc}") from exc
    return labels, groups


def write_labels(path: str | Path, rows: Iterable[tuple[str, str, str | None]]) -> int:
    """Write ``(url, label, group)`` rows as a labels TSV, atomically; return the row count.

    ``label`` may already hold several labels joined by ``|``; ``group`` may be
    ``None``. Raises ``ValueError`` for a field holding a tab or a newline.
    """
    buf = io.StringIO()
    buf.write(_HEADER)
    count = 0
    for url, label, group in rows:
        fields = [url, label] if not group else [url, label, group]
        for value in fields:
            if not value or any(c in value for c in "\t\r\n"):
                raise ValueError(f"cannot write labels row {fields!r}: empty field, tab or newline")
        buf.write("\t".join(fields) + "\n")
        count += 1
    with atomic_output(path) as fh:
        fh.write(buf.getvalue().encode("utf-8"))
    return count


def label_key_lookup(labels: dict[str, str]) -> Callable[[str], str | None]:
    """The key of ``labels`` that names the page at a URL, or ``None``: ``dir``, ``dir/``,
    ``dir/index.html`` and ``dir//`` name one page (:mod:`focused.urls`)."""

    def key_of(url: str) -> str | None:
        key = normalize_url(url)
        if key in labels:
            return key
        base = collapse_aliases(key)
        for candidate in (base, base.rstrip("/"), base.rstrip("/") + "/", base.rstrip("/") + "/index.html"):
            if candidate in labels:
                return candidate
        return None

    return key_of


def first_fetches_on_topic(urls: Iterable[str], labels: dict[str, str], on_topic: Callable[[str], bool]) -> list[bool]:
    """For each fetched URL in crawl order: a page whose label is on topic, fetched for the first time.

    A page fetched again under another of its names (an alias, :func:`label_key_lookup`) is counted
    as a wasted fetch, as is an unlabelled page: the true harvest counts distinct relevant pages.
    """
    key_of = label_key_lookup(labels)
    seen: set[str] = set()
    out = []
    for url in urls:
        key = key_of(url)
        out.append(key is not None and key not in seen and on_topic(labels[key]))
        if key is not None:
            seen.add(key)
    return out


def label_lookup(labels: dict[str, str]) -> Callable[[str], str | None]:
    """Ground-truth lookup that treats ``dir``, ``dir/``, ``dir/index.html`` and ``dir//`` alike."""
    key_of = label_key_lookup(labels)

    def label_of(url: str) -> str | None:
        key = key_of(url)
        return None if key is None else labels[key]

    return label_of
