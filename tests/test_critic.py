"""The naive Bayes critic, topics, model files, the dirtree reader and the critic commands."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest
from sklearn.naive_bayes import MultinomialNB

from focused.cli import main
from focused.corpora.dirtree import DirTreeError, iter_dirtree
from focused.learning.critic.bundle import ModelError
from focused.learning.critic.crossfit import CrossFitCritic
from focused.learning.critic.load import load_critic, save_bundle
from focused.learning.critic.naive_bayes import Critic
from focused.learning.critic.topics import Topic, UnknownTopicError, Verdict

VOCAB = {
    "sci.space": ["orbit", "rocket", "launch", "nasa", "satellite", "shuttle", "moon", "mars", "payload"],
    "sci.med": [
        "patient",
        "doctor",
        "disease",
        "treatment",
        "symptom",
        "clinical",
        "drug",
        "therapy",
        "dose",
    ],
    "rec.autos": ["engine", "car", "dealer", "tire", "brake", "sedan", "mileage", "ford", "honda", "clutch"],
}
COMMON = ["the", "and", "of", "to", "in", "is", "for", "with", "on", "this", "that", "have", "from", "are"]
CLASSES = sorted(VOCAB)


def make_doc(rng: np.random.Generator, label: str, length: int) -> str:
    """Mostly common words, a third from the class vocabulary, a little from the others."""
    others = [w for c, words in VOCAB.items() if c != label for w in words]
    pools = (COMMON, VOCAB[label], others)
    choice = rng.choice(3, size=length, p=(0.6, 0.33, 0.07))
    return " ".join(pools[k][rng.integers(len(pools[k]))] for k in choice)


def make_corpus(seed: int, per_class: int) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for label in CLASSES:
        for _ in range(per_class):
            texts.append(make_doc(rng, label, int(rng.integers(20, 200))))
            labels.append(label)
    return texts, labels


@pytest.fixture(scope="module")
def corpus() -> dict[str, list[str]]:
    train_texts, train_labels = make_corpus(0, 30)
    test_texts, test_labels = make_corpus(1, 10)
    return {
        "train": train_texts,
        "train_labels": train_labels,
        "test": test_texts,
        "test_labels": test_labels,
    }


@pytest.fixture(scope="module")
def critic(corpus: dict[str, list[str]]) -> Critic:
    return Critic.train(
        corpus["train"],
        corpus["train_labels"],
        metadata={"corpus": "synthetic"},
        examples={"sci.space": ["http://nasa.example/"]},
    )


# ---------------------------------------------------------------------- classification


def test_classifies_held_out_documents(critic: Critic, corpus: dict[str, list[str]]) -> None:
    assert critic.classes == CLASSES
    assert critic.predict(corpus["test"]) == corpus["test_labels"]
    assert critic.length_scale is not None
    assert critic.metadata["corpus"] == "synthetic"
    assert critic.metadata["critic"]["calibration"]["holdout"] == 18


def test_raw_posteriors_are_textbook_multinomial_nb(critic: Critic, corpus: dict[str, list[str]]) -> None:
    mnb = MultinomialNB(alpha=critic.alpha).fit(critic.transform(corpus["train"]), corpus["train_labels"])
    assert list(mnb.classes_) == critic.classes
    expected = mnb.predict_proba(critic.transform(corpus["test"]))
    np.testing.assert_allclose(critic.raw_posteriors(corpus["test"]), expected, rtol=1e-6, atol=1e-12)


def test_posteriors_sum_to_one_and_relevance_in_unit_interval(critic: Critic, corpus: dict[str, list[str]]) -> None:
    post = critic.posteriors(corpus["test"] + ["", "unseen words only"])
    assert post.shape == (len(corpus["test"]) + 2, 3)
    np.testing.assert_allclose(post.sum(axis=1), 1.0)
    relevance = critic.relevance(corpus["test"], critic.resolve_topic("sci"))
    assert ((relevance >= 0) & (relevance <= 1)).all()
    np.testing.assert_allclose(relevance, post[:-2, [CLASSES.index("sci.med"), CLASSES.index("sci.space")]].sum(1))
    # An empty page carries no evidence: its posterior is the class prior.
    np.testing.assert_allclose(post[-2], np.exp(critic.class_log_prior_))


def test_calibrated_posteriors_do_not_saturate_on_long_documents(critic: Critic) -> None:
    rng = np.random.default_rng(7)
    long_docs = [make_doc(rng, label, 3000) for label in CLASSES]
    raw = critic.raw_posteriors(long_docs)
    assert (raw.max(axis=1) == 1.0).all()  # the problem: textbook NB saturates in float64
    calibrated = critic.posteriors(long_docs)
    assert ((calibrated > 0) & (calibrated < 1)).all()
    assert list(calibrated.argmax(axis=1)) == [0, 1, 2]


def test_snippet_posteriors_are_raw_for_short_texts_and_flattened_for_long_ones(critic: Critic) -> None:
    assert critic.length_scale is not None and critic.length_scale > 2
    short = ["rocket", "patient doctor"]  # shorter than L_eff: the page calibration would sharpen them
    np.testing.assert_allclose(critic.snippet_posteriors(short), critic.raw_posteriors(short))
    assert (critic.posteriors(short).max(axis=1) > critic.snippet_posteriors(short).max(axis=1)).all()
    long_docs = [make_doc(np.random.default_rng(3), label, 3000) for label in CLASSES]
    np.testing.assert_allclose(critic.snippet_posteriors(long_docs), critic.posteriors(long_docs))
    np.testing.assert_allclose(critic.snippet_posteriors([""])[0], np.exp(critic.class_log_prior_))
    space = critic.snippet_relevance(["nasa launch", "car dealer"], critic.resolve_topic("sci.space"))
    assert space[0] > 0.5 > space[1]


def test_calibrated_posteriors_rank_like_raw_ones(critic: Critic, corpus: dict[str, list[str]]) -> None:
    topic = critic.resolve_topic("sci.space")
    raw = critic.raw_posteriors(corpus["test"])[:, topic.indices].sum(axis=1)
    calibrated = critic.relevance(corpus["test"], topic)
    positive = np.array([topic.matches(label) for label in corpus["test_labels"]])
    # Both rank every sci.space page above every other page ...
    assert raw[positive].min() > raw[~positive].max()
    assert calibrated[positive].min() > calibrated[~positive].max()
    # ... and agree on the best class of every page; only the calibrated scores are free of ties.
    assert (critic.posteriors(corpus["test"]).argmax(1) == critic.raw_posteriors(corpus["test"]).argmax(1)).all()
    assert len(np.unique(calibrated)) == len(calibrated)


def test_calibrated_posteriors_do_not_depend_on_repetition(critic: Critic, corpus: dict[str, list[str]]) -> None:
    doc = corpus["test"][0]
    calibrated = critic.posteriors([doc, " ".join([doc] * 5)])
    np.testing.assert_allclose(calibrated[0], calibrated[1], rtol=1e-9)
    raw = critic.raw_posteriors([doc, " ".join([doc] * 5)])
    assert raw[1].min() < raw[0].min()  # raw NB grows more confident with every repetition


def test_uncalibrated_critic_returns_raw_posteriors(corpus: dict[str, list[str]]) -> None:
    plain = Critic.train(corpus["train"], corpus["train_labels"], calibrate=False)
    assert plain.length_scale is None
    np.testing.assert_array_equal(plain.posteriors(corpus["test"]), plain.raw_posteriors(corpus["test"]))


def test_too_few_documents_to_hold_out_leaves_critic_uncalibrated() -> None:
    critic = Critic.train(["orbit rocket", "engine car"], ["sci.space", "rec.autos"])
    assert critic.length_scale is None
    assert critic.predict(["rocket orbit launch"]) == ["sci.space"]


def test_training_input_errors() -> None:
    with pytest.raises(ValueError, match="two classes"):
        Critic.train(["a b", "c d"], ["x", "x"])
    with pytest.raises(ValueError, match="labels"):
        Critic.train(["a b"], ["x", "y"])
    with pytest.raises(TypeError):
        Critic.train("not a list", ["x"])


def test_empty_batch(critic: Critic) -> None:
    assert critic.posteriors([]).shape == (0, 3)
    assert critic.relevance([], critic.resolve_topic("sci")).shape == (0,)
    assert critic.predict([]) == []


def test_posteriors_reject_a_bare_string(critic: Critic) -> None:
    with pytest.raises(TypeError):
        critic.posteriors("orbit rocket")


# ---------------------------------------------------------------------- topics


def test_topics_lists_classes_and_prefixes(critic: Critic) -> None:
    assert critic.topics() == ["rec", "rec.autos", "sci", "sci.med", "sci.space"]


@pytest.mark.parametrize(
    ("spec", "name", "classes"),
    [
        ("sci.space", "sci.space", ("sci.space",)),
        ("sci", "sci", ("sci.med", "sci.space")),
        ("sci/space", "sci.space", ("sci.space",)),
        ("/SCI/Space/", "sci.space", ("sci.space",)),
        ("sci.space, rec.autos", "sci.space,rec.autos", ("rec.autos", "sci.space")),
        ("sci,sci.med", "sci,sci.med", ("sci.med", "sci.space")),
    ],
)
def test_resolve_topic(critic: Critic, spec: str, name: str, classes: tuple[str, ...]) -> None:
    topic = critic.resolve_topic(spec)
    assert topic.name == name
    assert topic.classes == classes
    assert [critic.classes[i] for i in topic.indices] == list(classes)


@pytest.mark.parametrize("spec", ["astronomy", "sci.spac", "sci,talk", "", "sci,"])
def test_unknown_topic_lists_valid_topics(critic: Critic, spec: str) -> None:
    with pytest.raises(UnknownTopicError) as info:
        critic.resolve_topic(spec)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert "rec.autos" in message and "sci.med" in message
    assert info.value.valid == critic.topics()


def test_unknown_topic_suggests_close_names(critic: Critic) -> None:
    with pytest.raises(UnknownTopicError, match=r"did you mean sci\.space"):
        critic.resolve_topic("sci.spac")


def test_unknown_topic_message_is_abbreviated_for_big_taxonomies() -> None:
    labels = [f"topic{i:03d}.sub" for i in range(60)]
    big = Critic.train([f"word{i} common" for i in range(60)], labels, calibrate=False)
    with pytest.raises(UnknownTopicError, match=r"\(80 more; `focused topics") as info:
        big.resolve_topic("nothing")
    assert len(str(info.value)) < 1200


def test_topic_matches_ground_truth_labels() -> None:
    topic = Topic("Science.Physics,Music", ("Science.Physics", "Music"), (), np.array([], dtype=np.intp))
    assert topic.matches("Science.Physics")
    assert topic.matches("Science.Physics.Optics")
    assert topic.matches("History|Science.Physics.Optics")
    assert topic.matches("Music")
    assert not topic.matches("Science.Physical_sciences")
    assert not topic.matches("Science")
    assert not topic.matches("History|Musicals")


def test_topic_is_hashable_and_compares_by_name(critic: Critic) -> None:
    assert critic.resolve_topic("sci") == critic.resolve_topic("SCI")
    assert len({critic.resolve_topic("sci"), critic.resolve_topic("sci/")}) == 1


def test_judge(critic: Critic, corpus: dict[str, list[str]]) -> None:
    topic = critic.resolve_topic("sci")
    doc = corpus["test"][corpus["test_labels"].index("sci.med")]
    verdict = critic.judge(doc, topic, url="http://example.org/")
    assert isinstance(verdict, Verdict)
    assert verdict.predicted_class == "sci.med"
    assert verdict.top_classes[0] == "sci.med" and sorted(verdict.top_classes) == CLASSES
    assert verdict.relevance == pytest.approx(critic.relevance([doc], topic)[0])
    assert 0.5 < verdict.relevance < 1.0


# ---------------------------------------------------------------------- model files


def test_save_load_round_trip(critic: Critic, corpus: dict[str, list[str]], tmp_path: Path) -> None:
    path = critic.save(tmp_path / "sub" / "model.npz")
    assert path.stat().st_size < 200_000
    assert not [p for p in path.parent.iterdir() if p.name != "model.npz"]  # no temp file left
    loaded = load_critic(path)
    assert isinstance(loaded, Critic)
    assert loaded.classes == critic.classes
    assert loaded.length_scale == critic.length_scale
    assert loaded.metadata == critic.metadata
    assert loaded.examples == {"sci.space": ["http://nasa.example/"]}
    np.testing.assert_array_equal(loaded.posteriors(corpus["test"]), critic.posteriors(corpus["test"]))
    assert Critic.load(path).topics() == critic.topics()


def test_saved_counts_are_sparse_float32(critic: Critic) -> None:
    bundle = critic.to_bundle()
    assert bundle["kind"] == "nb" and bundle["format_version"] == 2 and bundle["verdict_head"] is None
    assert bundle["feature_count"]["data"].dtype == np.float32
    assert len(bundle["feature_count"]["data"]) < 200  # ~50 words per class, not 2**18


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"not found.*focused train-topic"):
        load_critic(tmp_path / "nope.npz")


@pytest.mark.parametrize("content", [b"", b"garbage, not a pickle", b"\x80\x04K\x01."])
def test_load_garbage_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.npz"
    path.write_bytes(content)
    with pytest.raises(ModelError, match="make models"):
        load_critic(path)


@pytest.mark.parametrize(
    "change",
    [
        {"format_version": 3},
        {"kind": "svm"},
        {"classes": ["only", "two"]},
        {"features": {"tokenizer": "other"}},
    ],
)
def test_load_incompatible_bundle(critic: Critic, tmp_path: Path, change: dict) -> None:
    path = save_bundle({**critic.to_bundle(), **change}, tmp_path / "model.npz")
    with pytest.raises(ModelError, match="make models"):
        load_critic(path)


def test_load_dispatches_on_the_kind(corpus: dict[str, list[str]], tmp_path: Path) -> None:
    urls = [f"http://site.example/{i}" for i in range(len(corpus["train"]))]
    crossfit = CrossFitCritic.train(corpus["train"], corpus["train_labels"], urls, k=2)
    path = crossfit.save(tmp_path / "cf.npz")
    loaded = load_critic(path)
    assert isinstance(loaded, CrossFitCritic) and loaded.k == 2
    np.testing.assert_array_equal(loaded.posteriors(corpus["test"]), crossfit.posteriors(corpus["test"]))
    with pytest.raises(ModelError, match="holds a cross-fitted critic, not a naive Bayes critic"):
        Critic.load(path)  # Critic.load reads plain critics only


# ---------------------------------------------------------------------- dirtree


TREE = {
    "train/sci.space/1": b"orbit rocket launch",
    "train/sci.space/2": b"caf\xe9 moon",  # Latin-1
    "train/Science/Physics/3.txt": "quantum électron".encode(),
    "train/.hidden/4": b"skipped",
    "train/toplevel.txt": b"no class folder: skipped",
    "test/sci.space/9": b"telescope",
}


def test_iter_dirtree_folder(tmp_path: Path) -> None:
    for name, data in TREE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    assert list(iter_dirtree(tmp_path, "train")) == [
        ("Science/Physics/3.txt", "Science.Physics", "quantum électron"),
        ("sci.space/1", "sci.space", "orbit rocket launch"),
        ("sci.space/2", "sci.space", "café moon"),
    ]
    # Without a subset the top folder is part of the label; a file right under it is labelled by it.
    assert {label for _, label, _ in iter_dirtree(tmp_path)} == {
        "test.sci.space",
        "train",
        "train.Science.Physics",
        "train.sci.space",
    }


def test_iter_dirtree_tar_gz(tmp_path: Path) -> None:
    path = tmp_path / "tree.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, data in TREE.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    docs = list(iter_dirtree(path, subset="train"))
    assert sorted(docs) == [
        ("Science/Physics/3.txt", "Science.Physics", "quantum électron"),
        ("sci.space/1", "sci.space", "orbit rocket launch"),
        ("sci.space/2", "sci.space", "café moon"),
    ]
    assert list(iter_dirtree(path, subset="test")) == [("sci.space/9", "sci.space", "telescope")]
    with pytest.raises(DirTreeError, match=r"no folder 'valid'.*test, train"):
        list(iter_dirtree(path, subset="valid"))


def test_iter_dirtree_errors(tmp_path: Path) -> None:
    with pytest.raises(DirTreeError, match="not found"):
        list(iter_dirtree(tmp_path / "missing"))
    (tmp_path / "file.txt").write_text("not a tar")
    with pytest.raises(DirTreeError, match="neither a folder nor a tar"):
        list(iter_dirtree(tmp_path / "file.txt"))
    (tmp_path / "broken.tar.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(DirTreeError):
        list(iter_dirtree(tmp_path / "broken.tar.gz"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DirTreeError, match="no documents"):
        list(iter_dirtree(tmp_path / "empty"))


# ---------------------------------------------------------------------- WebKB training and commands


def _webkb_tree(root: Path) -> Path:
    """A tiny WebKB-layout archive: department, course and student pages of three universities."""
    rng = np.random.default_rng(3)
    words = {
        "department": ["department", "computer", "science", "welcome", "graduate", "admissions"],
        "course": ["course", "homework", "lecture", "syllabus", "exam", "assignment"],
        "student": ["student", "phd", "advisor", "resume", "hobbies", "interests"],
    }
    hosts = {"cornell": "www.cs.cornell.edu", "texas": "www.cs.utexas.edu", "misc": "www.cs.example.edu"}
    for label, vocab in words.items():
        for university, host in hosts.items():
            for i in range(4):
                url = f"http://{host}/" if label == "department" and i == 0 else f"http://{host}/{label}/p{i}.html"
                name = url.replace(":", "\uf03a").replace("/", "^")
                body = " ".join(rng.choice(vocab, size=40))
                raw = f"Content-Type: text/html\n\n<html><title>{label}</title><p>{body}</p></html>"
                folder = root / "webkb" / label / university
                folder.mkdir(parents=True, exist_ok=True)
                (folder / name).write_text(raw, encoding="latin-1")
    return root


def test_train_webkb_critic(tmp_path: Path) -> None:
    from focused.learning.critic.training import train_webkb_critic, webkb_documents

    archive = _webkb_tree(tmp_path)
    texts, labels, urls = webkb_documents(archive, universities=["cornell"])
    assert len(texts) == len(labels) == len(urls) == 12
    critic = train_webkb_critic(archive, exclude=["texas"])
    assert critic.metadata["universities"] == ["cornell", "misc"]
    assert critic.classes == ["course", "department", "student"]
    assert critic.examples["department"][:2] == ["http://www.cs.cornell.edu/", "http://www.cs.example.edu/"]
    assert all(len(v) <= 5 for v in critic.examples.values())
    assert critic.predict(["lecture syllabus homework"]) == ["course"]
    with pytest.raises(ValueError, match="unknown WebKB universities"):
        train_webkb_critic(archive, universities=["oxford"])


def test_commands_train_and_list_topics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = tmp_path / "tree"
    for label, words in VOCAB.items():
        for i in range(5):
            (tree / label).mkdir(parents=True, exist_ok=True)
            (tree / label / str(i)).write_text(" ".join(words[i : i + 6]))
    out = tmp_path / "m.npz"
    assert main(["train-critic", "--dirtree", str(tree), "-o", str(out), "--alpha", "0.5"]) == 0
    trained = load_critic(out)
    assert isinstance(trained, Critic) and trained.alpha == 0.5 and trained.head is not None
    plain = tmp_path / "plain.npz"
    assert main(["train-critic", "--dirtree", str(tree), "-o", str(plain), "--verdict-head", "off"]) == 0
    assert load_critic(plain).head is None
    assert main(["topics", "--model", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[-5:] == ["rec", "rec.autos", "sci", "sci.med", "sci.space"]


def test_commands_report_missing_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval-critic", "--20news", str(tmp_path / "none.tar.gz")]) == 1
    assert "20 Newsgroups archive not found" in capsys.readouterr().err
    assert main(["train-critic", "--webkb", str(tmp_path / "none"), "-o", str(tmp_path / "x")]) == 1
    assert "WebKB archive not found" in capsys.readouterr().err
    assert main(["topics", "--model", str(tmp_path / "none.npz")]) == 1
    assert "focused train-topic" in capsys.readouterr().err  # a missing file of ones own: no rebuild hint


def test_default_model_path_matches_training_module() -> None:
    from focused.commands.critic import DEFAULT_MODEL
    from focused.learning.critic.training import DEFAULT_MODEL_NAME

    assert Path(DEFAULT_MODEL) == Path("models") / DEFAULT_MODEL_NAME


def test_committed_default_model() -> None:
    path = Path(__file__).resolve().parents[1] / "models" / "webkb-pagetype.npz"
    assert path.is_file(), "models/webkb-pagetype.npz is missing: run `make models` (focused models)"
    assert path.stat().st_size <= 3 * 2**20
    critic = load_critic(path)
    assert critic.classes == ["course", "department", "faculty", "other", "project", "staff", "student"]
    assert critic.metadata["universities"] == ["cornell", "misc", "texas", "washington"]
    assert critic.examples["department"][:3] == [
        "http://www.cs.cornell.edu/",
        "http://www.cs.utexas.edu/",
        "http://www.cs.washington.edu/",
    ]
    page = "CS 415 Operating Systems. Lectures, homework assignments, syllabus, midterm exam, TA office hours."
    verdict = critic.judge(page, critic.resolve_topic("course"))
    assert verdict.predicted_class == "course" and 0.5 < verdict.relevance < 1.0
