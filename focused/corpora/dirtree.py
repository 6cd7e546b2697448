"""Read a labelled text collection laid out as a directory tree (``class/.../doc``).

The class of a document is the path of folders between the root (or the
chosen subset folder) and the file, joined with ``.``: ``rec.sport.hockey/52550``
is labelled ``rec.sport.hockey`` (20 Newsgroups already dots its group names),
``Science/Physics/doc.txt`` is labelled ``Science.Physics``. The tree is read
from a folder or straight from a tar archive (``.tar.gz``, ``.tgz``, ``.tar``).
Files are decoded as UTF-8, falling back to Latin-1. Hidden files and files
directly under the root (no class folder) are skipped.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from focused.corpora.webkb import ArchiveError

__all__ = ["DirTreeError", "decode_text", "iter_dirtree"]


class DirTreeError(ArchiveError):
    """The tree is missing, unreadable, lacks the subset, or holds no documents."""


def decode_text(data: bytes) -> str:
    """UTF-8 if the bytes are valid UTF-8, else Latin-1 (which never fails)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _split(relative: str, subset: str | None) -> tuple[str, str] | None:
    """``(doc_id, label)`` of a member path relative to the root, or ``None`` to skip it."""
    parts = [p for p in PurePosixPath(relative).parts if p not in ("", ".")]
    if subset is not None:
        if not parts or parts[0] != subset:
            return None
        parts = parts[1:]
    if len(parts) < 2 or any(p.startswith(".") for p in parts):
        return None
    return "/".join(parts), ".".join(parts[:-1])


def iter_dirtree(path: str | Path, subset: str | None = None) -> Iterator[tuple[str, str, str]]:
    """Yield ``(doc_id, label, raw_text)`` for every document of a class tree.

    Parameters
    ----------
    path
        A folder, or a tar archive, holding ``[subset/]class/.../doc``.
    subset
        A top folder to read, such as ``20news-bydate-train``; labels and ids
        are then relative to it.

    Raises
    ------
    DirTreeError
        When ``path`` does not exist or cannot be read, when ``subset`` is not
        one of its top folders (the message lists them), or when no document
        is found.
    """
    path = Path(path)
    if not path.exists():
        raise DirTreeError(f"document tree not found: {path}")
    count = 0
    tops: set[str] = set()
    try:
        if path.is_dir():
            for file in sorted(path.rglob("*")):
                if not file.is_file():
                    continue
                relative = file.relative_to(path).as_posix()
                tops.add(relative.split("/", 1)[0])
                split = _split(relative, subset)
                if split is None:
                    continue
                count += 1
                yield split[0], split[1], decode_text(file.read_bytes())
        else:
            if not tarfile.is_tarfile(path):
                raise DirTreeError(f"{path} is neither a folder nor a tar archive")
            with tarfile.open(path, "r:*") as tar:
                for member in tar:
                    if not member.isfile():
                        continue
                    relative = member.name.removeprefix("./").lstrip("/")
                    tops.add(relative.split("/", 1)[0])
                    split = _split(relative, subset)
                    if split is None:
                        continue
                    fh = tar.extractfile(member)
                    if fh is None:
                        continue
                    count += 1
                    yield split[0], split[1], decode_text(fh.read())
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise DirTreeError(f"cannot read document tree {path}: {exc}") from exc
    if count == 0:
        if subset is not None and subset not in tops:
            listed = ", ".join(sorted(tops)) or "none"
            raise DirTreeError(f"no folder {subset!r} at the top of {path} (top folders: {listed})")
        raise DirTreeError(f"no documents in {path} (expected [subset/]class/.../document files)")
