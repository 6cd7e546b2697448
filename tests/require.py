"""What a test needs from outside the Python environment: a program, a Python package, a corpus.

Missing, it is a skip whose reason says what to install, or under CI (``CI`` set,
as ``.ci/run`` runs) a failure naming what is missing: CI installs everything
(``make install``), so a piece missing there is a broken install, not a reason to
test less.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from focused.corpora import corpora_dir


def under_ci() -> bool:
    """True when ``CI`` is set to anything but an empty, ``0`` or ``false`` value."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(present: object, message: str) -> None:
    """Skip (fail under CI) with ``message`` unless ``present``; ``message`` says what is missing and how to get it."""
    if present:
        return
    if under_ci():
        pytest.fail(f"{message} (required under CI)", pytrace=False)
    pytest.skip(message)


def require_program(*names: str, install: str) -> str:
    """The path of the first of ``names`` on ``PATH``; ``install`` says how to get it."""
    found = next((path for path in map(shutil.which, names) if path), None)
    require(found, f"{names[0]} is not installed: {install}")
    assert found is not None
    return found


def require_package(name: str) -> None:
    """A Python package of ``requirements.txt``."""
    require(importlib.util.find_spec(name) is not None, f"the Python package {name} is not installed: make install")


def require_corpus(name: str) -> Path:
    """``name`` in the corpora folder (``$FOCUSED_CORPORA``, else ``../shared/corpora``)."""
    path = corpora_dir() / name
    require(path.is_file(), f"the corpus {path} is absent: put it there, or set FOCUSED_CORPORA to its folder")
    return path
