"""Where the files a crawl names are: the project root, and the default models.

A relative path in a setting or an option is taken from the project root: the
folder of the closest ``scrapy.cfg``, else the current directory (under Scrapyd,
the directory Scrapyd runs in). The default models (``models/*.npz`` in the
checkout) are also installed as package data of the package ``focused_models``
(see ``setup.py``), so a crawl that runs without the checkout, from an installed
package or from a zipped Scrapyd egg, still finds ``models/webkb-pagetype.npz``:
a relative ``models/NAME`` that is not a file under the project root is read from
the package. Nothing here is found relative to a module's ``__file__``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

#: Folder of the default models, relative to the project root.
MODELS_DIR = "models"
#: The package that carries the default models when focused is installed or deployed.
MODELS_PACKAGE = "focused_models"


def closest_scrapy_cfg(start: str | Path = ".") -> str:
    """The ``scrapy.cfg`` in ``start`` or the closest folder above it, ``""`` if none (as Scrapy finds it)."""
    folder = Path(start).resolve()
    for candidate in (folder, *folder.parents):
        cfg = candidate / "scrapy.cfg"
        if cfg.is_file():
            return str(cfg)
    return ""


def project_path(path: str | Path) -> Path:
    """Resolve a relative path against the project root (the folder of ``scrapy.cfg``).

    Without a ``scrapy.cfg`` (e.g. when running from a Scrapyd egg) the current
    directory is the root.
    """
    path = Path(path).expanduser()
    if path.is_absolute():
        return path
    cfg = closest_scrapy_cfg()
    root = Path(cfg).parent if cfg else Path.cwd()
    return root / path


@dataclass(frozen=True)
class ModelSource:
    """A model file found by :func:`locate_model`."""

    #: The file: a path, or a packaged resource (maybe inside a zip archive).
    resource: Path | Traversable
    #: What to call it in logs and crawl databases; :func:`locate_model` finds the same file from it again.
    name: str
    #: True for a default model read from the installed package.
    packaged: bool


def packaged_model(path: str | Path) -> Traversable | None:
    """The packaged default model ``models/NAME`` stands for, if ``path`` is such a name and the package has it."""
    parts = Path(path).parts
    if len(parts) != 2 or parts[0] != MODELS_DIR:
        return None
    try:
        resource = resources.files(MODELS_PACKAGE) / parts[1]
    except ModuleNotFoundError:  # running from a checkout that was never installed
        return None
    return resource if resource.is_file() else None


def locate_model(path: str | Path, *, base: Path | None = None) -> ModelSource:
    """The model file ``path`` names: under ``base`` (default: the project root), else a packaged default.

    A path that is neither comes back as the path under ``base``, so that loading it
    fails with a message naming the file that was looked for.
    """
    on_disk = project_path(path) if base is None else base / Path(path).expanduser()
    if not on_disk.is_file() and not Path(path).expanduser().is_absolute():
        packaged = packaged_model(path)
        if packaged is not None:
            return ModelSource(packaged, Path(path).as_posix(), packaged=True)
    return ModelSource(on_disk, str(on_disk), packaged=False)


def load_model(path: str | Path, loader: Callable[[Path], T], *, base: Path | None = None) -> tuple[T, ModelSource]:
    """Locate ``path`` (:func:`locate_model`) and read it with ``loader``, which needs a real file.

    A packaged model inside a zip archive (a Scrapyd egg) is copied to a temporary
    file for the loader and deleted afterwards; the loader reads the whole model.
    """
    source = locate_model(path, base=base)
    with resources.as_file(source.resource) as real:
        return loader(real), source


def shipped_models() -> list[str]:
    """The default models focused ships, as ``models/NAME`` (the names a setting gives them)."""
    try:
        names = sorted(entry.name for entry in resources.files(MODELS_PACKAGE).iterdir() if entry.name.endswith(".npz"))
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError):
        names = []
    return [f"{MODELS_DIR}/{name}" for name in names]
