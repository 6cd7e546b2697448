"""A real pickle whose loading leaves a trace, for the tests that show an old pickle is never loaded."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any


class _Touch:
    """Unpickled, this object is ``Path(marker).touch()``: a visible side effect, and a harmless one."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


def tripwire_pickle(marker: Path) -> bytes:
    """The bytes of a pickle (protocol 4, as older focused wrote) that creates the empty file ``marker`` when loaded."""
    return pickle.dumps({"format": "an older focused's state", "state": _Touch(Path(marker))}, protocol=4)
