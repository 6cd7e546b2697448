"""Readers for the research corpora the project crawls and trains on.

The corpora are read at run time from a configurable path (``../shared/corpora``
by default, see :func:`corpora_dir`); nothing extracted from them is committed.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable that overrides where the corpora live.
CORPORA_ENV = "FOCUSED_CORPORA"


def corpora_dir() -> Path:
    """Return the folder holding the corpora archives.

    ``$FOCUSED_CORPORA`` when set, else ``../shared/corpora`` relative to the
    project root (the folder holding ``scrapy.cfg``), else relative to the
    current directory.
    """
    env = os.environ.get(CORPORA_ENV)
    if env:
        return Path(env)
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / "scrapy.cfg").exists():
            return (folder / ".." / "shared" / "corpora").resolve()
    return (here / ".." / "shared" / "corpora").resolve()
