"""Checkpoints of the online apprentice in a job directory: learner, model and crawl-time state.

Scrapy-free, no pickle: the learner and the model are model files
(:meth:`Apprentice.save`, :meth:`ApprenticeModel.save`), the crawl-time state
(:meth:`OnlineApprentice.state_arrays`) an ``.npz`` of plain arrays read within bounds
(:func:`~focused.learning.modelfile.read_npz`). Each checkpoint is written into a new numbered folder
and only then made current by rewriting ``current.json`` atomically, so a kill
at any moment leaves the previous checkpoint or the new one, never a mix.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.model import ApprenticeModel
from focused.learning.apprentice.online import OnlineApprentice
from focused.learning.modelfile import read_npz

FORMAT = "focused.apprentice-checkpoint"
#: 2: the pending links' payloads tagged, their ids as 2-byte gaps where they fit
#: (:data:`~focused.learning.apprentice.state.PENDING_FORMAT`); 1 is read too.
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
POINTER = "current.json"
LEARNER, MODEL, STATE = "learner.npz", "model.npz", "online.npz"


class CheckpointError(Exception):
    """A checkpoint that cannot be read; the message names the file and what to do."""


def save_checkpoint(folder: str | Path, online: OnlineApprentice, model: ApprenticeModel | None) -> Path:
    """Write the apprentice's learner, ``model`` and state as the new current checkpoint of ``folder``.

    Call it while no training runs (the learner must not change meanwhile).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pointer = _read_pointer(folder)
    n = int(pointer["current"]) + 1 if pointer else 1
    target = folder / f"v{n}"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    arrays = online.state_arrays()
    online.learner.save(target / LEARNER)
    if model is not None:
        model.save(target / MODEL)
    with open(target / STATE, "wb") as fh:
        np.savez(fh, **arrays)  # type: ignore[arg-type]
    info = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "current": n,
        "instances": online.learner.n_instances,
        "model_version": model.version if model is not None else None,
    }
    tmp = folder / (POINTER + ".tmp")
    tmp.write_text(json.dumps(info, indent=1))
    os.replace(tmp, folder / POINTER)
    for old in folder.glob("v*"):
        if old.is_dir() and old != target:
            shutil.rmtree(old, ignore_errors=True)
    return target


def load_checkpoint(folder: str | Path, online: OnlineApprentice) -> ApprenticeModel | None:
    """Restore the current checkpoint of ``folder`` into ``online``; returns its model (``None`` if none yet).

    Returns ``None`` without touching ``online`` when ``folder`` has no
    checkpoint; raises :class:`CheckpointError` for a damaged one.
    """
    folder = Path(folder)
    pointer = _read_pointer(folder)
    if pointer is None:
        return None
    target = folder / f"v{int(pointer['current'])}"
    hint = f"remove {folder} to resume with an untrained apprentice, or start the crawl with a new JOBDIR"
    try:
        learner = Apprentice.load(target / LEARNER)
        model = ApprenticeModel.load(target / MODEL) if (target / MODEL).exists() else None
        arrays: dict[str, Any] = read_npz(target / STATE)  # within FOCUSED_MODEL_MAX_BYTES, no pickle
        learner.limit(online.learner.max_instances)  # the crawl's bound, not the file's
        online.learner = learner
        online.restore_arrays(arrays)
    except CheckpointError:
        raise
    except Exception as exc:  # a damaged file can fail in many ways; none may run code (no pickle)
        raise CheckpointError(f"the apprentice checkpoint in {target} is damaged ({exc}); {hint}") from exc
    if model is not None:
        online.install(model)
    return model


def _read_pointer(folder: Path) -> dict[str, Any] | None:
    path = folder / POINTER
    if not path.exists():
        return None
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{path} is damaged ({exc}); start the crawl with a new JOBDIR") from exc
    if not isinstance(info, dict) or info.get("format") != FORMAT or not isinstance(info.get("current"), int):
        raise CheckpointError(f"{path} is not an apprentice checkpoint; start the crawl with a new JOBDIR")
    if info.get("format_version") not in READABLE_VERSIONS:
        raise CheckpointError(
            f"{path} has format version {info.get('format_version')!r}, this focused reads "
            + " and ".join(map(str, READABLE_VERSIONS))
        )
    return info
