"""Read the WebKB "4 Universities" archive (``webkb/<class>/<university>/<file>``).

Each file is a stored HTTP response from 1996-97: usually a header block
(``Date:``, ``Server:``, ``Content-Type:`` ...), a blank line, then the body; a
few files have no header block at all, and some record a redirect the original
crawler did not follow (``WWW Alert: Redirection response ...`` plus a
``Location:`` header). The file name is the original URL with ``/`` written as
``^`` and ``:`` as U+F03A.

The archive is read directly from the ``.tar.gz`` or from an extracted folder.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

CLASSES = ("course", "department", "faculty", "other", "project", "staff", "student")
UNIVERSITIES = ("cornell", "misc", "texas", "washington")

_COLON = "\uf03a"
_HEADER_LINE = re.compile(rb"^([A-Za-z0-9][A-Za-z0-9_-]*)\s*:\s?(.*)$")
_ALERT = b"WWW Alert:"


class ArchiveError(Exception):
    """The archive is missing, unreadable or not in the WebKB layout."""


@dataclass(frozen=True)
class WebKBPage:
    """One stored response of the WebKB archive."""

    url: str
    label: str
    university: str
    status: int
    headers: list[tuple[str, str]] = field(repr=False)
    body: bytes = field(repr=False)

    def header(self, name: str) -> str | None:
        """Return the first header called ``name`` (case-insensitive), if any."""
        lname = name.lower()
        for key, value in self.headers:
            if key.lower() == lname:
                return value
        return None


def filename_to_url(name: str) -> str:
    """Decode a WebKB file name into the page's original URL."""
    return name.replace(_COLON, ":").replace("^", "/")


def parse_stored_response(raw: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    """Split a stored response into ``(status, headers, body)``.

    A header block is recognised only when the first line looks like a header
    (or is the ``WWW Alert:`` line); otherwise the whole file is the body. A
    recorded, unfollowed redirect becomes a 302 with its ``Location``.
    """
    status = 200
    headers: list[tuple[str, str]] = []
    pos = 0
    first = True
    alert = False
    while pos < len(raw):
        end = raw.find(b"\n", pos)
        if end < 0:
            end = len(raw)
        line = raw[pos:end].rstrip(b"\r")
        if not line:  # blank line: end of the header block
            if headers or alert:
                pos = end + 1
            break
        if first and line.startswith(_ALERT):
            alert = b"Redirection" in line
            pos = end + 1
            first = False
            continue
        match = _HEADER_LINE.match(line)
        if not match:
            if first or not headers:
                return status, [], raw  # no header block at all
            break
        headers.append((match[1].decode("latin-1"), match[2].decode("latin-1").strip()))
        first = False
        pos = end + 1
    if not headers and not alert:
        return status, [], raw
    body = raw[pos:]
    if alert and any(k.lower() == "location" for k, _ in headers):
        status = 302
    return status, headers, body


def _page(label: str, university: str, name: str, raw: bytes) -> WebKBPage:
    status, headers, body = parse_stored_response(raw)
    return WebKBPage(filename_to_url(name), label, university, status, headers, body)


def iter_webkb(path: str | Path) -> Iterator[WebKBPage]:
    """Yield every page of a WebKB archive, from a ``.tar.gz`` or a folder.

    A folder may be the extracted archive's root (holding ``webkb/``) or the
    ``webkb`` folder itself.

    Raises
    ------
    ArchiveError
        When the path does not exist, cannot be read, or holds no WebKB pages.
    """
    path = Path(path)
    if not path.exists():
        raise ArchiveError(f"WebKB archive not found: {path}")
    count = 0
    try:
        if path.is_dir():
            root = path / "webkb" if (path / "webkb").is_dir() else path
            for label_dir in sorted(p for p in root.iterdir() if p.is_dir()):
                for uni_dir in sorted(p for p in label_dir.iterdir() if p.is_dir()):
                    for file in sorted(uni_dir.iterdir()):
                        if file.is_file():
                            count += 1
                            yield _page(label_dir.name, uni_dir.name, file.name, file.read_bytes())
        else:
            with tarfile.open(path, "r:*") as tar:
                for member in tar:
                    if not member.isfile():
                        continue
                    parts = member.name.split("/")
                    if len(parts) < 3:
                        continue
                    label, university, name = parts[-3], parts[-2], parts[-1]
                    fh = tar.extractfile(member)
                    if fh is None:
                        continue
                    count += 1
                    yield _page(label, university, name, fh.read())
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise ArchiveError(f"cannot read WebKB archive {path}: {exc}") from exc
    if count == 0:
        raise ArchiveError(f"no WebKB pages in {path} (expected webkb/<class>/<university>/<file>)")


def default_archive() -> Path:
    """The dev archive under the configured corpora folder."""
    from focused.corpora import corpora_dir

    return corpora_dir() / "webkb-dev.tar.gz"
