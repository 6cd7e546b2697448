"""Files of the replay: the error every reader raises, and output that appears only once complete."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

__all__ = ["StoreError", "atomic_output"]


class StoreError(Exception):
    """An archive, WARC or labels file is missing, unreadable or malformed."""


@contextmanager
def atomic_output(path: str | Path) -> Iterator[BinaryIO]:
    """Open ``path`` for binary writing so that it appears only once complete.

    Writes to a temporary file in the same folder, then renames it over
    ``path``; on any error the temporary file is removed and ``path`` is untouched.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
