"""Model and checkpoint files are read within bounds: a file declaring more than ``FOCUSED_MODEL_MAX_BYTES``
is refused from its zip directory and array headers, before anything is decompressed or allocated.

Each hostile file gives one line and exit status 1 from ``focused topics`` and from ``scrapy crawl``,
never a traceback; the zip bomb is refused with a peak memory that reading it would exceed tenfold.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from focused.learning.apprentice.checkpoint import CheckpointError, load_checkpoint
from focused.learning.critic.bundle import ModelError
from focused.learning.critic.load import load_critic
from focused.learning.modelfile import HEADER_KEY, ArchiveError, read_npz

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = PROJECT_ROOT / "models" / "webkb-pagetype.npz"
BOMB_BYTES = 2**31  # 2 GiB of zeros, about 2 MB compressed
_CHUNK = bytes(1 << 24)


def _header_bytes() -> bytes:
    header = {"format": "focused.model", "kind": "nb", "format_version": 1, "x": {"__array__": "a0"}}
    return json.dumps(header).encode()


class _Zeros:
    """Stands in for zipfile's deflate compressor: the deflate stream of a chunk of zeros after a full flush is
    the same block every time, so 2 GiB of zeros are written in seconds (the CRC is still computed on them)."""

    def __init__(self, real: zlib._Compress) -> None:
        self.pending = real.flush(zlib.Z_FULL_FLUSH)  # what the real compressor holds (the .npy header)
        fresh = zlib.compressobj(9, zlib.DEFLATED, -15)
        self.block = fresh.compress(_CHUNK) + fresh.flush(zlib.Z_FULL_FLUSH)

    def compress(self, data: bytes) -> bytes:
        assert data == _CHUNK
        out, self.pending = self.pending, b""
        return out + self.block

    def flush(self) -> bytes:
        return zlib.compressobj(9, zlib.DEFLATED, -15).flush()


def write_bomb(path: Path) -> Path:
    """A model file whose array ``a0`` is 2 GiB of zeros, deflated to about 2 MB: a real one, which
    ``np.load`` reads (and fills 2 GiB of memory with)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open(f"{HEADER_KEY}.npy", "w") as entry:
            np.lib.format.write_array(entry, np.frombuffer(_header_bytes(), dtype=np.uint8))
        with archive.open("a0.npy", "w", force_zip64=True) as entry:
            np.lib.format.write_array_header_2_0(
                entry, {"descr": "|u1", "fortran_order": False, "shape": (BOMB_BYTES,)}
            )
            entry._compressor = _Zeros(entry._compressor)  # type: ignore[attr-defined]
            for _ in range(BOMB_BYTES // len(_CHUNK)):
                entry.write(_CHUNK)
    return path


def write_members(path: Path, members: dict[str, bytes]) -> Path:
    """An .npz archive with these raw members (``name.npy`` -> bytes)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def npy_header(descr: str, shape: tuple[int, ...]) -> bytes:
    """The bytes of an .npy header (version 1.0) declaring ``descr`` and ``shape``, without the data."""
    import io

    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": descr, "fortran_order": False, "shape": shape})
    return out.getvalue()


def header_member() -> bytes:
    import io

    out = io.BytesIO()
    np.lib.format.write_array(out, np.frombuffer(_header_bytes(), dtype=np.uint8))
    return out.getvalue()


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bomb(tmp_path_factory.mktemp("bomb") / "bomb.npz")


@pytest.fixture
def hostile(tmp_path: Path) -> dict[str, Path]:
    """The hostile files other than the bomb, each a model file a crawl could be given."""

    class Evil:
        def __reduce__(self) -> tuple[object, ...]:
            return (os.system, ("true",))

    return {
        # an array header declaring 10**12 float64 (8 TB), and a few bytes of data
        "huge-header": write_members(
            tmp_path / "huge.npz",
            {f"{HEADER_KEY}.npy": header_member(), "a0.npy": npy_header("<f8", (10**12,)) + bytes(64)},
        ),
        # the header member is a raw pickle, not an .npy array
        "pickle-header": write_members(tmp_path / "pickled.npz", {f"{HEADER_KEY}.npy": pickle.dumps(Evil())}),
        # an object array: an .npy header with dtype object, then a pickle
        "object-array": write_members(
            tmp_path / "object.npz",
            {f"{HEADER_KEY}.npy": header_member(), "a0.npy": npy_header("|O", (1,)) + pickle.dumps([Evil()])},
        ),
        # declared sizes that disagree with the header (a member shorter than its array)
        "short-member": write_members(
            tmp_path / "short.npz",
            {f"{HEADER_KEY}.npy": header_member(), "a0.npy": npy_header("<f8", (1000,)) + bytes(80)},
        ),
    }


EXPECTED = {
    "huge-header": "past the limit",
    "pickle-header": "not a plain .npy array",
    "object-array": "has dtype object",
    "short-member": "declares 8000 bytes of data",
}


def run(*args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run a command; return it and its peak resident memory in KiB (measured by a wrapper process)."""
    wrapper = (
        "import resource, subprocess, sys\n"
        "proc = subprocess.run(sys.argv[1:])\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(proc.returncode)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", wrapper, *args],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    *rest, peak = proc.stderr.rstrip("\n").split("\n")
    proc.stderr = "\n".join(rest)
    return proc, int(peak)


def crawl(model: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], int]:
    return run(
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "focused",
        "-a",
        "topic=course",
        "-a",
        "seeds=http://127.0.0.1:9/",
        "-a",
        f"model={model}",
        "-s",
        "FOCUSED_DB=",
        *extra,
    )


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr[-3000:]
    return lines[0]


def test_the_bomb_is_a_real_one(bomb: Path) -> None:
    """The file is small and holds what it says: 2 GiB of zeros (read here as a stream, not allocated)."""
    assert bomb.stat().st_size < 3_000_000
    with zipfile.ZipFile(bomb) as archive, archive.open("a0.npy") as entry:
        np.lib.format.read_magic(entry)
        shape, _, dtype = np.lib.format.read_array_header_2_0(entry)
        assert shape == (BOMB_BYTES,) and dtype == np.uint8
        seen = 0
        while chunk := entry.read(1 << 24):  # checks the CRC at the end
            seen += len(chunk)
        assert seen == BOMB_BYTES


@pytest.mark.parametrize("command", ["topics", "crawl"])
def test_a_zip_bomb_is_refused_before_it_is_decompressed(bomb: Path, command: str) -> None:
    """2 GiB declared in a 2 MB file: refused in one line; the process never holds more than 400 MB
    (reading the array would take 2,100 MB)."""
    if command == "topics":
        proc, peak_kib = run(sys.executable, "-m", "focused", "topics", "--model", str(bomb))
    else:
        proc, peak_kib = crawl(bomb)
    line = one_line(proc)
    assert str(bomb) in line and "FOCUSED_MODEL_MAX_BYTES" in line and "2.0 GiB" in line, line
    assert peak_kib < 400 * 1024, f"peak memory {peak_kib / 1024:.0f} MB"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hostile_model_files_are_one_line(name: str, hostile: dict[str, Path]) -> None:
    path = hostile[name]
    with pytest.raises(ModelError) as info:
        load_critic(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)
    assert EXPECTED[name] in str(info.value), str(info.value)


@pytest.mark.parametrize("name", ["huge-header", "pickle-header"])  # each crawl starts Scrapy: two of them
def test_hostile_model_files_end_a_crawl_in_one_line(name: str, hostile: dict[str, Path]) -> None:
    proc, _ = crawl(hostile[name])
    line = one_line(proc)
    assert str(hostile[name]) in line and EXPECTED[name] in line, line


def test_the_limit_is_a_setting() -> None:
    """The shipped model (2 MB of arrays) read with a limit of 1 MB: refused, naming the setting."""
    proc, _ = crawl(DEFAULT_MODEL, "-s", "FOCUSED_MODEL_MAX_BYTES=1000000")
    line = one_line(proc)
    assert "FOCUSED_MODEL_MAX_BYTES" in line and "limit of 1.0 MiB" in line, line
    proc, _ = crawl(DEFAULT_MODEL, "-s", "FOCUSED_MODEL_MAX_BYTES=0")
    assert "FOCUSED_MODEL_MAX_BYTES=0: expected a whole number >= 1" in one_line(proc)


def test_read_npz_reads_what_numpy_writes(tmp_path: Path) -> None:
    arrays = {
        "f": np.arange(12, dtype=np.float32).reshape(3, 4),
        "fortran": np.asfortranarray(np.arange(6).reshape(2, 3)),
        "s": np.array(["a", "bc"]),
        "b": np.array([True, False]),
        "empty": np.zeros((0, 3)),
        "scalar": np.int64(7),
    }
    path = tmp_path / "plain.npz"
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]
    read = read_npz(path)
    assert set(read) == set(arrays)
    for name, value in arrays.items():
        np.testing.assert_array_equal(read[name], value)
        assert read[name].dtype == np.asarray(value).dtype and read[name].shape == np.shape(value)
    read["f"][0, 0] = 5.0  # writable, as np.load's arrays are
    with pytest.raises(ArchiveError, match="limit of"):
        read_npz(path, limit=40)


def test_a_checkpoint_is_read_within_bounds(tmp_path: Path, hostile: dict[str, Path]) -> None:
    """The apprentice's checkpoint state (online.npz) goes through the same reader: one line, no allocation."""
    folder = tmp_path / "apprentice"
    (folder / "v1").mkdir(parents=True)
    (folder / "current.json").write_text(
        json.dumps({"format": "focused.apprentice-checkpoint", "format_version": 1, "current": 1})
    )
    from focused.learning.apprentice.learner import Apprentice
    from focused.learning.apprentice.online import OnlineApprentice

    online = OnlineApprentice(Apprentice(n_features=2**10))
    online.learner.save(folder / "v1" / "learner.npz")
    (folder / "v1" / "online.npz").write_bytes(hostile["huge-header"].read_bytes())
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(folder, online)
    assert "\n" not in str(info.value) and "past the limit" in str(info.value)
