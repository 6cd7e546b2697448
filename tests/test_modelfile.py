"""Model files: plain arrays + a JSON header, round trips, clear errors, and no pickle ever loaded."""

from __future__ import annotations

import json
import pickle
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pytest

from focused.bench.runner import PROJECT_ROOT
from focused.cli import main
from focused.learning.apprentice.learner import Apprentice
from focused.learning.apprentice.model import ApprenticeModel
from focused.learning.critic.bundle import ModelError
from focused.learning.critic.crossfit import CrossFitCritic
from focused.learning.critic.load import load_critic
from focused.learning.critic.naive_bayes import Critic
from focused.learning.modelfile import HEADER_KEY, ModelFileError, read_model, save_model
from tests.commands import scrapy_crawl
from tests.sites import COOKING, NEUTRAL, SPORT

N_FEATURES = 2**12
DEFAULT_MODEL = PROJECT_ROOT / "models" / "webkb-pagetype.npz"


# ---------------------------------------------------------------------- small models


def texts_and_labels(n: int = 20) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(0)
    texts, labels = [], []
    for label, vocab in (("sport", SPORT), ("cooking", COOKING), ("misc.neutral", NEUTRAL)):
        for _ in range(n):
            texts.append(" ".join(rng.choice(vocab, 30)) + " " + " ".join(rng.choice(NEUTRAL, 5)))
            labels.append(label)
    return texts, labels


def link_instances(n: int, seed: int) -> tuple[list[list[str]], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    feats, rel = [], []
    for _ in range(n):
        high = rng.random() < 0.4
        feats.append([f"w{rng.integers(30)}@{rng.integers(-3, 4)}" for _ in range(5)] + ["good@0" if high else "bad@0"])
        rel.append(rng.uniform(0.6, 1.0) if high else rng.uniform(0.0, 0.3))
    side = rng.normal(size=(n, 2))
    return feats, np.asarray(rel), side


@pytest.fixture(scope="module")
def models() -> dict[str, Any]:
    texts, labels = texts_and_labels()
    critic = Critic.train(texts, labels, n_features=N_FEATURES, metadata={"note": ("a", "tuple")}, examples={})
    urls = [f"http://site.test/{i}" for i in range(len(texts))]
    crossfit = CrossFitCritic.train(texts, labels, urls, k=3, n_features=N_FEATURES)
    feats, rel, side = link_instances(400, seed=1)
    learner = Apprentice(n_features=N_FEATURES, n_side=2, binning="equal-prob", feature_params={"d_max": 3})
    learner.add(feats, rel, side)
    return {"critic": critic, "crossfit": crossfit, "learner": learner, "model": learner.fit(), "texts": texts}


@pytest.fixture(scope="module")
def files(models: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One valid file of each kind, saved under names without ``.npz``."""
    folder = tmp_path_factory.mktemp("models")
    paths = {}
    for name in ("critic", "crossfit", "learner", "model"):
        paths[name] = folder / f"{name}.model"
        models[name].save(paths[name])
    return paths


#: Every loader of a model file, with the error type it raises.
LOADERS: dict[str, tuple[Callable[[Path], Any], type[Exception]]] = {
    "load_critic": (load_critic, ModelError),
    "Critic.load": (Critic.load, ModelError),
    "CrossFitCritic.load": (CrossFitCritic.load, ModelError),
    "Apprentice.load": (Apprentice.load, ModelFileError),
    "ApprenticeModel.load": (ApprenticeModel.load, ModelFileError),
}
#: A file of the right kind for each loader.
RIGHT_KIND = {
    "load_critic": "critic",
    "Critic.load": "critic",
    "CrossFitCritic.load": "crossfit",
    "Apprentice.load": "learner",
    "ApprenticeModel.load": "model",
}


def assert_one_line_error(loader: str, path: Path, match: str) -> ModelFileError:
    load, error = LOADERS[loader]
    with pytest.raises(error) as info:
        load(path)
    message = str(info.value)
    assert "\n" not in message, message
    assert str(path) in message, message
    assert match in message, message
    return info.value


# ---------------------------------------------------------------------- round trips


def test_critic_round_trip_gives_identical_predictions(models: dict[str, Any], files: dict[str, Path]) -> None:
    critic, texts = models["critic"], models["texts"]
    for loaded in (load_critic(files["critic"]), Critic.load(files["critic"])):
        assert isinstance(loaded, Critic)
        np.testing.assert_array_equal(loaded.posteriors(texts), critic.posteriors(texts))
        np.testing.assert_array_equal(loaded.snippet_posteriors(texts[:5]), critic.snippet_posteriors(texts[:5]))
        assert loaded.classes == critic.classes and loaded.length_scale == critic.length_scale
        assert loaded.metadata["note"] == ["a", "tuple"]  # JSON has no tuples
        assert loaded.resolve_topic("misc").classes == ("misc.neutral",)


def test_crossfit_round_trip_gives_identical_predictions(models: dict[str, Any], files: dict[str, Path]) -> None:
    crossfit, texts = models["crossfit"], models["texts"]
    urls = [f"http://site.test/{i}" for i in range(len(texts))]
    for loaded in (load_critic(files["crossfit"]), CrossFitCritic.load(files["crossfit"])):
        assert isinstance(loaded, CrossFitCritic) and loaded.k == 3
        np.testing.assert_array_equal(loaded.posteriors(texts, urls), crossfit.posteriors(texts, urls))
        assert loaded.metadata == crossfit.metadata


def test_apprentice_model_round_trip_is_identical(models: dict[str, Any], files: dict[str, Path]) -> None:
    model = models["model"]
    feats, _, side = link_instances(100, seed=2)
    loaded = ApprenticeModel.load(files["model"])
    np.testing.assert_array_equal(loaded.predict(feats, side), model.predict(feats, side))
    assert (loaded.version, loaded.n_instances, loaded.threshold, loaded.n_side) == (
        model.version,
        model.n_instances,
        model.threshold,
        2,
    )
    assert loaded.feature_params == {"d_max": 3}


def test_apprentice_learner_round_trip_resumes_identically(models: dict[str, Any], files: dict[str, Path]) -> None:
    learner = models["learner"]
    resumed = Apprentice.load(files["learner"])
    assert resumed.get_params() == learner.get_params() and resumed.n_instances == learner.n_instances
    assert resumed.version == learner.version
    feats, _, side = link_instances(100, seed=2)
    np.testing.assert_allclose(resumed.fit().predict(feats, side), learner.fit().predict(feats, side), rtol=1e-12)


def test_file_layout_is_plain_arrays_and_a_json_header(files: dict[str, Path]) -> None:
    path = files["critic"]
    assert path.name == "critic.model" and not path.with_name("critic.model.npz").exists()  # no suffix added
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    assert names[0] == f"{HEADER_KEY}.npy" and all(n.endswith(".npy") for n in names)
    with np.load(path, allow_pickle=False) as npz:
        header = json.loads(npz[HEADER_KEY].tobytes())
        assert (header["format"], header["kind"], header["format_version"]) == ("focused.model", "nb", 2)
        assert header["class_count"] == {"__array__": "a0"} and npz["a0"].dtype == np.float64
        assert all(npz[name].dtype != object for name in npz.files)


def test_equal_models_give_equal_bytes(models: dict[str, Any], tmp_path: Path) -> None:
    first = models["critic"].save(tmp_path / "one.npz").read_bytes()
    assert models["critic"].save(tmp_path / "two.npz").read_bytes() == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.npz", "two.npz"]  # no temporary file left


def test_object_arrays_and_foreign_values_cannot_be_saved(tmp_path: Path) -> None:
    for bad in (np.array([object()], dtype=object), {1, 2}, {3: "int key"}, {"__array__": "a0"}):
        with pytest.raises(TypeError):
            save_model({"kind": "nb", "format_version": 1, "value": bad}, tmp_path / "bad.npz")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------- bad files


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("keep", [0.0, 0.1, 0.5, 0.99])
def test_truncated_file(loader: str, keep: float, files: dict[str, Path], tmp_path: Path) -> None:
    data = files[RIGHT_KIND[loader]].read_bytes()
    path = tmp_path / "truncated.npz"
    path.write_bytes(data[: int(len(data) * keep)])
    expected = "empty file" if keep == 0 else "corrupt or truncated"
    assert_one_line_error(loader, path, expected)


@pytest.mark.parametrize("loader", LOADERS)
def test_damaged_bytes_inside_the_archive(loader: str, files: dict[str, Path], tmp_path: Path) -> None:
    data = bytearray(files[RIGHT_KIND[loader]].read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)
    path = tmp_path / "damaged.npz"
    path.write_bytes(bytes(data))
    assert_one_line_error(loader, path, "corrupt or truncated")


@pytest.mark.parametrize("loader", LOADERS)
def test_random_bytes_and_missing_file(loader: str, tmp_path: Path) -> None:
    path = tmp_path / "random.npz"
    noise = np.random.default_rng(3).integers(0, 256, 5000, dtype=np.uint8).tobytes()
    path.write_bytes(b"R" + noise)  # "R": neither a zip nor a pickle signature
    assert_one_line_error(loader, path, "not a model file")
    assert_one_line_error(loader, tmp_path / "missing.npz", "not found")


WRONG_KIND = [
    ("load_critic", "learner", "holds an apprentice learner (Apprentice.save), not a naive Bayes critic"),
    ("load_critic", "model", "holds a frozen apprentice model"),
    ("Critic.load", "crossfit", "holds a cross-fitted critic, not a naive Bayes critic"),
    ("CrossFitCritic.load", "critic", "holds a naive Bayes critic, not a cross-fitted critic"),
    ("Apprentice.load", "critic", "holds a naive Bayes critic, not an apprentice learner"),
    ("Apprentice.load", "model", "holds a frozen apprentice model (ApprenticeModel.save), not an apprentice learner"),
    ("ApprenticeModel.load", "learner", "holds an apprentice learner (Apprentice.save), not a frozen apprentice"),
]


@pytest.mark.parametrize(("loader", "kind", "message"), WRONG_KIND)
def test_wrong_kind(loader: str, kind: str, message: str, files: dict[str, Path]) -> None:
    assert_one_line_error(loader, files[kind], message)


@pytest.mark.parametrize("loader", LOADERS)
def test_other_format_version(loader: str, models: dict[str, Any], tmp_path: Path) -> None:
    bundle = models[RIGHT_KIND[loader]].to_bundle()
    path = save_model({**bundle, "format_version": 99}, tmp_path / "future.npz")
    assert_one_line_error(loader, path, "format version 99 (written by a newer focused)")
    path = save_model({**bundle, "format_version": 0}, tmp_path / "old.npz")
    assert_one_line_error(loader, path, "format version 0;")


def test_critic_errors_say_how_to_rebuild(tmp_path: Path) -> None:
    (tmp_path / "bad.npz").write_bytes(b"")
    assert_one_line_error("load_critic", tmp_path / "bad.npz", "make models")


@pytest.mark.parametrize("loader", LOADERS)
def test_npz_without_our_header(loader: str, tmp_path: Path) -> None:
    path = tmp_path / "plain.npz"
    with path.open("wb") as fh:
        np.savez(fh, weights=np.arange(4.0))
    assert_one_line_error(loader, path, "not a focused model file")


def test_inconsistent_critic_arrays_are_refused(models: dict[str, Any], tmp_path: Path) -> None:
    bundle = models["critic"].to_bundle()
    bundle["feature_count"]["indices"] = bundle["feature_count"]["indices"] + N_FEATURES  # out of range
    path = save_model(bundle, tmp_path / "bad.npz")
    assert_one_line_error("load_critic", path, "incomplete or inconsistent")


def test_implausible_apprentice_size_is_refused(models: dict[str, Any], tmp_path: Path) -> None:
    bundle = models["model"].to_bundle()
    bundle["model"]["n_features"] = 2**40  # would allocate 8 TB
    path = save_model(bundle, tmp_path / "huge.npz")
    assert_one_line_error("ApprenticeModel.load", path, "corrupt apprentice model")


# ---------------------------------------------------------------------- pickles are never loaded


class Payload:
    """Unpickling this object creates ``marker``: what a malicious model file would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (exec, (f"open({str(self.marker)!r}, 'w').close()",))


#: The header kind and version of each model of the ``models`` fixture.
KINDS = {
    "critic": ("nb", 1),
    "crossfit": ("crossfit", 1),
    "learner": ("apprentice", 2),
    "model": ("apprentice-model", 2),
}


def crafted(path: Path, marker: Path, how: str, model: str = "critic") -> Path:
    kind, version = KINDS[model]
    bundle = {"kind": kind, "format_version": version, "payload": Payload(marker)}
    if how == "pickle":
        path.write_bytes(pickle.dumps(bundle, protocol=4))
    elif how == "joblib":
        joblib.dump(bundle, path)
    elif how == "joblib-compressed":
        joblib.dump(bundle, path, compress=3)
    elif how == "npz-object-array":  # a valid header, but an object array holding the payload
        header = json.dumps(
            {"format": "focused.model", "kind": kind, "format_version": version, "x": {"__array__": "a0"}}
        )
        with path.open("wb") as fh:
            np.savez(
                fh,
                **{HEADER_KEY: np.frombuffer(header.encode(), dtype=np.uint8)},
                a0=np.array([Payload(marker)], dtype=object),
            )
    return path


PICKLES = ["pickle", "joblib", "joblib-compressed", "npz-object-array"]


@pytest.mark.parametrize("how", PICKLES)
def test_the_crafted_files_do_run_code_when_unpickled(how: str, tmp_path: Path) -> None:
    """The files of the next tests are real attacks: loading them the old way creates the marker."""
    marker = tmp_path / "pwned"
    path = crafted(tmp_path / "evil.joblib", marker, how)
    if how.startswith("npz"):
        with np.load(path, allow_pickle=True) as npz:
            npz["a0"]
    else:
        joblib.load(path)
    assert marker.exists()


@pytest.mark.parametrize("how", PICKLES)
@pytest.mark.parametrize("loader", LOADERS)
def test_crafted_pickles_are_refused_without_running(loader: str, how: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = crafted(tmp_path / "evil.joblib", marker, how, RIGHT_KIND[loader])  # the kind the loader reads
    expected = "has dtype object" if how.startswith("npz") else "focused convert-model"
    error = assert_one_line_error(loader, path, expected)
    if not how.startswith("npz"):
        assert "--trust-pickle" in str(error) and "looks like a pickle" in str(error)
    else:
        assert "numbers and strings only" in str(error)
    assert not marker.exists()


def run_scrapy(*args: str) -> subprocess.CompletedProcess[str]:
    return scrapy_crawl(*args, "-s", "FOCUSED_DB=")


@pytest.mark.parametrize("argument", ["model", "apprentice"])
def test_a_crawl_refuses_a_crafted_pickle_in_one_line(argument: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = crafted(tmp_path / "evil.joblib", marker, "joblib-compressed")
    args = ["-a", "topic=course", "-a", "seeds=http://a.test/", "-a", f"{argument}={evil}"]
    if argument == "apprentice":
        args += ["-a", f"model={DEFAULT_MODEL}"]
    proc = run_scrapy(*args)
    assert proc.returncode == 1, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.strip()]  # start-up validation: one line
    assert len(errors) == 1, proc.stderr[-3000:]
    assert str(evil) in errors[0] and "focused convert-model" in errors[0]
    assert "Traceback" not in proc.stderr
    assert not marker.exists()


def test_a_crawl_reports_a_corrupt_model_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.npz"
    bad.write_bytes(DEFAULT_MODEL.read_bytes()[:5000])
    proc = run_scrapy("-a", "topic=course", "-a", "seeds=http://a.test/", "-a", f"model={bad}")
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.strip()]  # start-up validation: one line
    assert len(errors) == 1 and "corrupt or truncated" in errors[0] and "make models" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------------- focused convert-model


def test_convert_refuses_without_trust(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "pwned"
    evil = crafted(tmp_path / "evil.joblib", marker, "joblib")
    out = tmp_path / "new.npz"
    assert main(["convert-model", str(evil), "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--trust-pickle" in err and str(evil) in err
    assert not out.exists() and not marker.exists()


def old_bundles(models: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The joblib bundles earlier versions wrote (critics as today; apprentices with ``format``)."""
    learner, model = models["learner"].to_bundle(), models["model"].to_bundle()
    v1 = {**models["model"].to_bundle(), "format_version": 1}
    v1["params"] = {k: v for k, v in v1["params"].items() if k != "n_side"}
    v1["model"] = {k: v for k, v in v1["model"].items() if k != "side_weights"}
    return {
        "critic": models["critic"].to_bundle(),
        "crossfit": models["crossfit"].to_bundle(),
        "learner": {**learner, "format": "focused.apprentice", "kind": "apprentice"},
        "model": {**model, "format": "focused.apprentice", "kind": "model"},
        "model-v1": {**v1, "format": "focused.apprentice", "kind": "model"},
    }


@pytest.mark.parametrize("name", ["critic", "crossfit", "learner", "model", "model-v1"])
def test_convert_with_trust_writes_an_equivalent_model_file(
    name: str, models: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old.joblib"
    joblib.dump(old_bundles(models)[name], old, compress=3)
    out = tmp_path / "new.npz"
    assert main(["convert-model", str(old), "-o", str(out), "--trust-pickle"]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert out.read_bytes()[:4] == b"PK\x03\x04"
    texts = models["texts"]
    feats, _, side = link_instances(50, seed=4)
    if name in ("critic", "crossfit"):
        np.testing.assert_array_equal(load_critic(out).posteriors(texts), models[name].posteriors(texts))
    elif name == "learner":
        np.testing.assert_allclose(
            Apprentice.load(out).fit().predict(feats, side), models["model"].predict(feats, side)
        )
    elif name == "model":
        np.testing.assert_array_equal(
            ApprenticeModel.load(out).predict(feats, side), models["model"].predict(feats, side)
        )
    else:  # version 1 had no side features: the converted model ignores them, as the old one did
        converted = ApprenticeModel.load(out)
        assert converted.n_side == 0 and read_model(out, {"apprentice-model": (2,)}, what="x")["format_version"] == 2


def test_convert_rejects_what_is_no_old_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.joblib"
    joblib.dump([1, 2, 3], other)
    assert main(["convert-model", str(other), "-o", str(tmp_path / "x.npz"), "--trust-pickle"]) == 1
    assert "not a focused model bundle" in capsys.readouterr().err
    assert main(["convert-model", str(DEFAULT_MODEL), "-o", str(tmp_path / "x.npz"), "--trust-pickle"]) == 1
    assert "already an .npz model file" in capsys.readouterr().err
    assert not (tmp_path / "x.npz").exists()


def test_shipped_models_are_model_files() -> None:
    for name in ("webkb-pagetype.npz", "wiki-topics.npz"):
        path = PROJECT_ROOT / "models" / name
        assert path.read_bytes()[:4] == b"PK\x03\x04"
        assert isinstance(load_critic(path), Critic)
    assert not list((PROJECT_ROOT / "models").glob("*.joblib"))
