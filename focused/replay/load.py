"""Opening a stored web, whatever holds it: a WebKB archive, WARC files, with or without a labels file;
and converting a WebKB archive to WARC."""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from pathlib import Path

from focused.corpora.webkb import ArchiveError, iter_webkb
from focused.replay.files import StoreError
from focused.replay.labels import read_labels, write_labels
from focused.replay.store import ReplayStore, StoredResponse
from focused.replay.warc import iter_warc, write_warc

__all__ = ["from_warc", "from_webkb", "open_store", "webkb_to_warc"]

logger = logging.getLogger(__name__)

# WebKB file names write a control character c as chr(0xF000 + c), as they do
# ':' (U+F03A); a few URLs end in an encoded carriage return (U+F00D).
_WEBKB_PRIVATE = {c: chr(c - 0xF000) for c in range(0xF000, 0xF080)}


def open_store(
    path: str | Path, labels: str | Path | None = None, universities: Collection[str] | None = None
) -> ReplayStore:
    """Open whatever ``path`` holds: a ``.warc``/``.warc.gz`` file, a folder of
    them, or a WebKB archive (``.tar.gz`` or folder).

    ``labels`` (a TSV, see :mod:`focused.replay.labels`) replaces the labels and
    groups that came with the archive. ``universities`` keeps only those
    groups (for WARC input the groups come from the labels file).
    """
    path = Path(path)
    if not path.exists():
        raise StoreError(f"no such archive: {path}")
    warcs = _warc_files(path)
    if warcs:
        if universities and labels is None:
            raise StoreError("selecting universities from WARC input needs a labels file with groups")
        store = from_warc(warcs, labels)
        if universities:
            store.restrict_to_groups(universities)
            if not store:
                raise StoreError(f"no pages for {', '.join(sorted(universities))} in {path}")
        return store
    store = from_webkb(path, universities)
    if labels is not None:
        store.labels, store.groups = read_labels(labels)
    return store


def _warc_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path] if _is_warc(path) else []
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and _is_warc(p))
    return []


def _is_warc(path: Path) -> bool:
    return path.name.endswith((".warc", ".warc.gz"))


def from_webkb(path: str | Path, universities: Collection[str] | None = None) -> ReplayStore:
    """Load a WebKB archive (``.tar.gz`` or folder): label = class, group = university.

    Stored unfollowed redirects are kept as 302s with their ``Location``.
    ``universities`` restricts the store to those universities.
    """
    wanted = None if universities is None else ({universities} if isinstance(universities, str) else set(universities))
    store = ReplayStore()
    seen: set[str] = set()
    pages = 0
    try:
        for page in iter_webkb(path):
            if wanted is not None and page.university not in wanted:
                continue
            url = page.url.translate(_WEBKB_PRIVATE).strip()
            resp = StoredResponse(url, page.status, list(page.headers), page.body)
            try:
                store.add(resp, label=page.label, group=page.university)
            except ValueError as exc:
                logger.warning("skipping %s: %s", page.url, exc)
                continue
            seen.add(page.university)
            pages += 1
    except ArchiveError as exc:
        raise StoreError(str(exc)) from exc
    missing = sorted((wanted or set()) - seen)
    if missing:
        raise StoreError(f"no pages for {', '.join(missing)} in {path}")
    logger.info("loaded %d WebKB pages (%d distinct URLs) from %s", pages, len(store), path)
    return store


def from_warc(paths: str | Path | Sequence[str | Path], labels: str | Path | None = None) -> ReplayStore:
    """Load the ``response`` records of one or more WARC files, with an optional labels TSV."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise StoreError("no WARC files given")
    store = ReplayStore()
    for path in paths:
        for resp in iter_warc(path):
            try:
                store.add(resp)
            except ValueError as exc:
                logger.warning("skipping record for %r in %s: %s", resp.url, path, exc)
    if labels is not None:
        store.labels, store.groups = read_labels(labels)
    logger.info("loaded %d distinct URLs from %d WARC file(s)", len(store), len(paths))
    return store


def webkb_to_warc(
    archive: str | Path,
    out_warc: str | Path,
    out_labels: str | Path,
    universities: Collection[str] | None = None,
) -> int:
    """Convert a WebKB archive into a WARC plus a labels TSV; return the record count.

    One record per distinct URL (the few pages filed under two classes get one
    record and a ``|``-joined label).
    """
    store = from_webkb(archive, universities)
    count = write_warc(out_warc, store.responses())
    write_labels(
        out_labels,
        ((resp.url, store.label_of(resp.url) or "", store.group_of(resp.url)) for resp in store.responses()),
    )
    return count
