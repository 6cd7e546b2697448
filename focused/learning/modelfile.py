"""Model files: plain arrays plus a JSON header in one ``.npz``, never a pickle.

A model is saved as a nested *bundle*: dicts, lists, strings, numbers, booleans,
``None`` and numpy arrays (what the models' ``to_bundle()`` return). The file is
one zip archive as :func:`numpy.savez_compressed` writes it (with fixed entry dates, so
that a model rebuilt from the same data is the same file):

* ``__header__``: the bundle as UTF-8 JSON in a ``uint8`` array, with every array
  replaced by a placeholder ``{"__array__": "a0"}``, and three keys added or
  checked at the top: ``"format": "focused.model"``, ``"kind"`` (``"nb"``,
  ``"crossfit"``, ``"apprentice"``, ``"apprentice-model"``) and
  ``"format_version"`` (the layout version of that kind);
* ``a0``, ``a1``, ...: the arrays, numeric or string dtypes only.

Loading reads the archive itself (:func:`read_npz`), never with a pickle, so a model file
can be shared, downloaded or stored anywhere and read without running anyone's
code: object arrays cannot be written and are refused on load. It reads within
bounds: the zip directory's sizes and each array's ``.npy`` header (dtype, shape)
are checked against each other and against a limit (``FOCUSED_MODEL_MAX_BYTES``,
:func:`set_max_bytes`) *before* anything is decompressed or allocated, so a small
file that declares a huge array (a zip bomb, a forged header) is refused in one
line without taking the memory it asks for. A file that is not
a zip archive is refused before any parsing; one that looks like a pickle (the
joblib files of earlier versions) gets a message pointing at ``focused
convert-model``, the one command that still unpickles, and only when told to
trust the file.

Everything here is Scrapy-free and independent of the model classes; they give
:func:`read_model` the kinds and versions they accept and the error class and hint
their users expect.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import IO, Any, BinaryIO

import numpy as np

from focused.settings.defaults import FOCUSED_MODEL_MAX_BYTES

__all__ = [
    "FORMAT",
    "HEADER_KEY",
    "KIND_NAMES",
    "ArchiveError",
    "ModelFileError",
    "convert_hint",
    "decode_bundle",
    "encode_bundle",
    "max_bytes",
    "read_model",
    "read_npz",
    "save_model",
    "set_max_bytes",
]

#: Value of the header's ``"format"`` key.
FORMAT = "focused.model"
#: Name of the header entry in the archive.
HEADER_KEY = "__header__"
#: What each kind is, for messages ("... holds a cross-fitted critic, expected ...").
KIND_NAMES = {
    "nb": "a naive Bayes critic",
    "crossfit": "a cross-fitted critic",
    "apprentice": "an apprentice learner (Apprentice.save)",
    "apprentice-model": "a frozen apprentice model (ApprenticeModel.save)",
    "intelligent": "intelligent-crawl statistics K (-a save_knowledge=FILE)",
    "markines": "Markines classifiers (focused train-markines)",
}
_PLACEHOLDER = "__array__"
_ZIP_MAGIC = b"PK\x03\x04"
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
#: First bytes of pickles and of joblib's compressed pickles (zlib, gzip, bz2, xz, lz4).
_PICKLE_MAGICS = (
    b"\x80",  # pickle protocol 2+
    b"ZF",  # joblib's old zlib files
    *(b"\x78" + level for level in (b"\x01", b"\x5e", b"\x9c", b"\xda")),  # zlib (joblib's default compression)
    b"\x1f\x8b",  # gzip
    b"BZh",  # bz2
    b"\xfd7zXZ",  # xz
    b"\x04\x22\x4d\x18",  # lz4
)


class ModelFileError(ValueError):
    """A model file is missing, corrupt, a pickle, or of another kind or format version.

    The message is one line that names the file and says what to do.
    """


class ArchiveError(ModelFileError):
    """An ``.npz`` archive refused by :func:`read_npz` (one line, without the file's name)."""


# ---------------------------------------------------------------------- bounded reading

#: Array dtype kinds a model file may hold: booleans, numbers, fixed-width byte and text strings.
_PLAIN_KINDS = frozenset("biufcSU")
_limit = [FOCUSED_MODEL_MAX_BYTES]


def set_max_bytes(limit: int) -> None:
    """Set the most array bytes one model or checkpoint file may hold (``FOCUSED_MODEL_MAX_BYTES``).

    Process-wide: the crawl sets it from its settings before any model is read.
    """
    if int(limit) <= 0:
        raise ValueError(f"the model size limit must be positive, got {limit}")
    _limit[0] = int(limit)


def max_bytes() -> int:
    """The limit :func:`set_max_bytes` set (default ``FOCUSED_MODEL_MAX_BYTES``)."""
    return _limit[0]


def _human(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB" if n < 2**30 else f"{n / 2**30:,.1f} GiB"


def read_npz(
    source: str | os.PathLike[str] | BinaryIO,
    names: Collection[str] | None = None,
    *,
    limit: int | None = None,
) -> dict[str, np.ndarray]:
    """The arrays ``names`` (default: all) of an ``.npz`` archive, read within bounds.

    What ``np.load(allow_pickle=False)`` gives for plain arrays, but checked first: the
    zip directory's uncompressed sizes, and each member's ``.npy`` header (parsed here:
    magic, dtype, shape), must agree with each other; the dtype must be a plain one
    (booleans, numbers, fixed-width strings: no objects, no records); and the bytes the
    arrays declare must stay within ``limit`` (default :func:`max_bytes`) in total.
    Only then is each array allocated and its member decompressed, at most the
    declared number of bytes.

    Raises
    ------
    ArchiveError
        One line saying what is wrong (without the file's name: callers add it).
    zipfile.BadZipFile, OSError
        For a file that is not a readable zip archive.
    """
    limit = max_bytes() if limit is None else limit
    with zipfile.ZipFile(source) as archive:
        members = {info.filename: info for info in archive.infolist()}
        wanted = [n.removesuffix(".npy") for n in members if n.endswith(".npy")] if names is None else list(names)
        missing = [n for n in wanted if f"{n}.npy" not in members]
        if missing:
            raise ArchiveError(f"the archive has no array {missing[0]!r}")
        infos = [members[f"{n}.npy"] for n in wanted]
        declared = sum(info.file_size for info in infos)
        if declared > limit + 4096 * len(infos):  # the headers take a few bytes more than the arrays
            raise ArchiveError(
                f"the archive declares {_human(declared)} of arrays, more than the limit of {_human(limit)} "
                "(FOCUSED_MODEL_MAX_BYTES)"
            )
        total = 0
        arrays: dict[str, np.ndarray] = {}
        for name, info in zip(wanted, infos, strict=True):
            with archive.open(info) as member:
                dtype, shape, fortran, offset = _npy_header(member, name)
                nbytes = math.prod(shape) * dtype.itemsize
                total += nbytes
                if total > limit:
                    raise ArchiveError(
                        f"array {name!r} declares shape {shape} of {dtype} ({_human(nbytes)}), past the limit of "
                        f"{_human(limit)} for one file (FOCUSED_MODEL_MAX_BYTES)"
                    )
                if offset + nbytes != info.file_size:
                    raise ArchiveError(
                        f"array {name!r}: its header declares {nbytes} bytes of data, the archive "
                        f"{info.file_size - offset}"
                    )
                buffer = bytearray(nbytes)
                with memoryview(buffer) as view:  # filled in pieces: no second copy of the array
                    filled = 0
                    while filled < nbytes and (piece := member.read(min(nbytes - filled, 1 << 24))):
                        view[filled : filled + len(piece)] = piece
                        filled += len(piece)
                if filled != nbytes or member.read(1):  # read(1) at the end checks the CRC
                    raise ArchiveError(f"array {name!r} is truncated")
            array = np.frombuffer(buffer, dtype=dtype) if nbytes else np.empty(shape, dtype=dtype)
            arrays[name] = array.reshape(shape, order="F" if fortran else "C")
    return arrays


def _npy_header(member: IO[bytes], name: str) -> tuple[np.dtype[Any], tuple[int, ...], bool, int]:
    """Dtype, shape, Fortran order and data offset of an ``.npy`` member, refused unless plain."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(member)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = fmt.read_array_header_2_0(member)
        else:
            raise ValueError(f"unknown .npy format version {version}")
    except ValueError as exc:  # not an .npy header: a pickle, random bytes, a header too long
        raise ArchiveError(f"array {name!r} is not a plain .npy array ({' '.join(str(exc).split())})") from exc
    if dtype.hasobject or dtype.kind not in _PLAIN_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise ArchiveError(f"array {name!r} has dtype {dtype}: a model file holds numbers and strings only")
    if not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ArchiveError(f"array {name!r} has an invalid shape {shape}")
    return dtype, tuple(shape), bool(fortran), member.tell()


def convert_hint(path: str | os.PathLike[str]) -> str:
    """How to convert an old joblib model file (a pickle) at ``path``."""
    return f"convert it once with `focused convert-model {path} -o NEW.npz --trust-pickle` and use the .npz file"


# ---------------------------------------------------------------------- bundle <-> header + arrays


def encode_bundle(bundle: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Split a bundle into a JSON-able tree (arrays replaced by placeholders) and the arrays.

    Tuples become lists and numpy scalars Python numbers. Raises ``TypeError`` for
    anything else that JSON cannot hold (object arrays, sets, non-string keys, ...).
    """
    arrays: dict[str, np.ndarray] = {}

    def walk(value: Any, where: str) -> Any:
        if value is None or isinstance(value, str | bool | int | float):
            return value
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                raise TypeError(f"{where}: object arrays cannot be stored in a model file")
            key = f"a{len(arrays)}"
            arrays[key] = value
            return {_PLACEHOLDER: key}
        if isinstance(value, np.generic):
            return walk(value.item(), where)
        if isinstance(value, Mapping):
            out = {}
            for k, v in value.items():
                if not isinstance(k, str):
                    raise TypeError(f"{where}: key {k!r} is not a string")
                if k == _PLACEHOLDER:
                    raise TypeError(f"{where}: the key {_PLACEHOLDER!r} is reserved")
                out[k] = walk(v, f"{where}.{k}")
            return out
        if isinstance(value, list | tuple):
            return [walk(v, f"{where}[{i}]") for i, v in enumerate(value)]
        raise TypeError(f"{where}: a {type(value).__name__} cannot be stored in a model file")

    tree = walk(bundle, "bundle")
    return tree, arrays


def decode_bundle(tree: Any, arrays: Mapping[str, np.ndarray]) -> Any:
    """Reverse :func:`encode_bundle`: put the arrays back in place of their placeholders."""
    if isinstance(tree, dict):
        if set(tree) == {_PLACEHOLDER}:
            return arrays[tree[_PLACEHOLDER]]
        return {k: decode_bundle(v, arrays) for k, v in tree.items()}
    if isinstance(tree, list):
        return [decode_bundle(v, arrays) for v in tree]
    return tree


def _placeholders(tree: Any) -> list[str]:
    if isinstance(tree, dict):
        if set(tree) == {_PLACEHOLDER}:
            return [str(tree[_PLACEHOLDER])]
        return [key for v in tree.values() for key in _placeholders(v)]
    if isinstance(tree, list):
        return [key for v in tree for key in _placeholders(v)]
    return []


# ---------------------------------------------------------------------- files


def save_model(bundle: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``bundle`` (with ``kind`` and ``format_version``) to ``path``; return the path.

    The name is kept as given (no ``.npz`` is appended). The file is written to a
    temporary file in the same folder, flushed to disk and renamed over ``path``,
    so a reader never sees half a model and a crash leaves the old file intact.
    """
    if not isinstance(bundle.get("kind"), str) or not isinstance(bundle.get("format_version"), int):
        raise ValueError("a model bundle needs a string 'kind' and an integer 'format_version'")
    if bundle.get("format", FORMAT) != FORMAT:
        raise ValueError(f"a model bundle's 'format' key is reserved (got {bundle['format']!r})")
    tree, arrays = encode_bundle({**bundle, "format": FORMAT})
    header = json.dumps(tree, ensure_ascii=False, sort_keys=True).encode("utf-8")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            _write_npz(fh, {HEADER_KEY: np.frombuffer(header, dtype=np.uint8), **arrays})
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _write_npz(fh: BinaryIO, arrays: Mapping[str, np.ndarray]) -> None:
    """What ``np.savez_compressed`` writes, with fixed entry dates so that equal models give equal bytes.

    Written to the open file ``fh`` (numpy would append ``.npz`` to a file name without it);
    ``allow_pickle=False`` refuses object arrays a second time.
    """
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with archive.open(info, "w", force_zip64=True) as entry:
                np.lib.format.write_array(entry, np.asanyarray(array), allow_pickle=False)


def read_model(
    path: str | os.PathLike[str],
    kinds: Mapping[str, Collection[int]],
    *,
    what: str,
    hint: str = "",
    error: type[ModelFileError] = ModelFileError,
) -> dict[str, Any]:
    """Read a model file written by :func:`save_model`; return its bundle.

    Parameters
    ----------
    kinds
        The kinds the caller accepts, each with the format versions it reads.
    what
        What the caller expects, for messages ("critic model", "apprentice").
    hint
        What to do about a bad file, appended to messages ("Rebuild ... with ...").
    error
        The :class:`ModelFileError` subclass to raise.

    Raises
    ------
    ModelFileError
        (as ``error``) for a missing, unreadable, truncated or corrupt file, a
        pickle, a file of another kind or of an unsupported format version. The
        message is one line naming the file.
    """
    path = Path(path)
    tail = f". {hint}" if hint else ""

    def fail(problem: str) -> ModelFileError:
        return error(" ".join(f"{problem}{tail}".split()))  # one line, whatever the causes say

    if not path.is_file():
        raise fail(f"{what} {'not found' if not path.exists() else 'is not a file'}: {path}")
    try:
        with path.open("rb") as fh:
            start = fh.read(len(_ZIP_MAGIC))
    except OSError as exc:
        raise fail(f"cannot read {what} {path} ({exc.strerror or exc})") from exc
    if not start.startswith(_ZIP_MAGIC):
        if start.startswith(_PICKLE_MAGICS):
            raise fail(
                f"{path} looks like a pickle (a joblib model file of an earlier version); focused never unpickles "
                f"a model file, because that can run code. If you trust it, {convert_hint(path)}"
            )
        kind = "an empty file" if not start else "not a model file (not an .npz archive)"
        raise fail(f"{path} is {kind}")
    try:
        with path.open("rb") as fh:
            with zipfile.ZipFile(fh) as archive:
                if f"{HEADER_KEY}.npy" not in archive.namelist():
                    raise fail(f"{path} is an .npz archive but not a focused model file (no {HEADER_KEY})")
            raw = read_npz(fh, [HEADER_KEY])[HEADER_KEY]
            if raw.dtype != np.uint8 or raw.ndim != 1:
                raise ValueError(f"bad header array ({raw.dtype}, {raw.ndim}-d)")
            header = json.loads(raw.tobytes().decode("utf-8"))
            if not isinstance(header, dict):
                raise ValueError("the header is not a JSON object")
            if header.get("format") != FORMAT:
                raise fail(f"{path} is not a focused model file (format {header.get('format')!r})")
            _check_kind(header, path, kinds, what, fail)
            arrays = read_npz(fh, [str(key) for key in _placeholders(header)])
    except ArchiveError as exc:
        raise fail(f"{what} {path} refused: {exc}") from exc
    except ModelFileError:
        raise
    except (
        OSError,
        EOFError,
        ValueError,
        KeyError,
        TypeError,
        zipfile.BadZipFile,
        zlib.error,
        UnicodeDecodeError,
        RecursionError,
    ) as exc:  # ValueError covers numpy's refusal of pickled (object) arrays
        raise fail(f"{what} {path} is corrupt or truncated ({type(exc).__name__}: {exc})") from exc
    return decode_bundle(header, arrays)


def _check_kind(
    header: dict[str, Any],
    path: Path,
    kinds: Mapping[str, Collection[int]],
    what: str,
    fail: Callable[[str], ModelFileError],
) -> None:
    kind, version = header.get("kind"), header.get("format_version")
    if not isinstance(kind, str) or kind not in kinds:
        found = KIND_NAMES.get(kind, f"a model of unknown kind {kind!r}") if isinstance(kind, str) else "no kind"
        wanted = " or ".join(KIND_NAMES.get(k, k) for k in kinds)
        raise fail(f"{path} holds {found}, not {wanted}: pass the right file as the {what}")
    readable = sorted(kinds[kind])
    if version not in readable:
        newer = " (written by a newer focused)" if isinstance(version, int) and version > max(readable) else ""
        raise fail(
            f"{path}: {KIND_NAMES.get(kind, kind)} in format version {version!r}{newer}; "
            f"this code reads version {', '.join(map(str, readable))}"
        )
