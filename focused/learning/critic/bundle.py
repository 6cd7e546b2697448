"""The naive Bayes critic's model file: its bundle of plain arrays and JSON, and reading one back.

Split from :mod:`focused.learning.critic.naive_bayes` (whose :class:`~focused.learning.critic.naive_bayes.Critic`
calls :func:`bundle_of` and :func:`critic_args`). A bundle is what
:func:`~focused.learning.modelfile.save_model` writes: arrays and builtins, never a pickle, so a
file is checked (kind, format version, feature scheme, sparse indices in range) before a
critic is built from it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import scipy.sparse as sp

from focused.learning.critic.verdict_head import VerdictHead
from focused.learning.modelfile import ModelFileError, read_model

if TYPE_CHECKING:
    from focused.learning.critic.naive_bayes import Critic

__all__ = [
    "FORMAT_VERSION",
    "KIND",
    "READABLE_VERSIONS",
    "REBUILD_HINT",
    "URL_SCHEME",
    "ModelError",
    "bundle_of",
    "critic_args",
    "read_critic_file",
]

#: The bundle kind of a naive Bayes critic.
KIND = "nb"
#: Version of the ``kind="nb"`` bundle layout written by :meth:`Critic.save` (2: may hold a verdict head).
FORMAT_VERSION = 2
#: The versions this code reads (1: no verdict head).
READABLE_VERSIONS = (1, 2)
#: The tokenizer's name in model files: a format identifier, kept from the module that first defined it
#: (:func:`focused.page.text.tokenize` now), so that existing model files stay readable.
TOKENIZER_NAME = "focused.learning.text.tokenize"
#: How a critic with URL features reads a page's URL (a model file naming another scheme is refused).
URL_SCHEME = (
    "focused.learning.urlwords.url_text/v1"  # a format identifier (:func:`focused.learning.critic.urlwords.url_text`)
)
#: What to do about a bad critic model file (ends every :class:`ModelError` about one).
REBUILD_HINT = (
    "Rebuild the default model with `make models` (or `focused models`), "
    "or train one with `focused train-critic --webkb ARCHIVE -o PATH`."
)
_T = TypeVar("_T")


class ModelError(ModelFileError):
    """A critic model file is missing, corrupt, a pickle, or of another kind or format version."""


def bundle_of(critic: Critic) -> dict[str, Any]:
    """The critic as a plain dict of arrays and builtins (what :meth:`Critic.save` writes)."""
    fc = critic.feature_count_
    if fc is None:
        raise ValueError("this critic's training counts were released (Critic.release_counts): it cannot be saved")
    return {
        "kind": KIND,
        "format_version": FORMAT_VERSION,
        "classes": list(critic.classes),
        "class_count": critic.class_count_.copy(),
        # CSR parts as plain arrays: small, and independent of scipy's pickle layout.
        "feature_count": {
            "data": fc.data.astype(np.float32),
            "indices": fc.indices.astype(np.int32),
            "indptr": fc.indptr.astype(np.int64),
            "shape": tuple(int(n) for n in fc.shape),
        },
        "features": {
            "vectorizer": "sklearn.feature_extraction.text.HashingVectorizer",
            "n_features": critic.n_features,
            "alternate_sign": False,
            "norm": None,
            "lowercase": False,
            "tokenizer": TOKENIZER_NAME,
            **({"url_words": URL_SCHEME} if critic.url_words is not None else {}),
        },
        "url_vocabulary": None if critic.url_words is None else sorted(critic.url_words),
        "alpha": critic.alpha,
        "calibration": None
        if critic.length_scale is None
        else {"method": "length", "length_scale": critic.length_scale},
        "metadata": critic.metadata,
        "examples": critic.examples,
        "verdict_head": None if critic.head is None else critic.head.to_bundle(),
    }


def critic_args(bundle: dict[str, Any]) -> dict[str, Any]:
    """The :class:`Critic` constructor's arguments from :func:`bundle_of` output.

    Raises
    ------
    ModelError
        When the bundle is not a ``kind="nb"`` bundle of this format version and feature scheme.
    """
    if not isinstance(bundle, dict) or bundle.get("kind") != KIND:
        kind = bundle.get("kind") if isinstance(bundle, dict) else type(bundle).__name__
        raise ModelError(f"not a naive Bayes critic bundle (kind={kind!r}). {REBUILD_HINT}")
    version = bundle.get("format_version")
    if version not in READABLE_VERSIONS:
        raise ModelError(
            f"critic model format version {version!r} is not supported (this code reads "
            f"versions {', '.join(map(str, READABLE_VERSIONS))}). {REBUILD_HINT}"
        )
    try:
        features = bundle["features"]
        if features.get("tokenizer") != TOKENIZER_NAME or features.get("alternate_sign") is not False:
            raise ModelError(f"critic model uses different features ({features}). {REBUILD_HINT}")
        parts = bundle["feature_count"]
        feature_count = sp.csr_matrix((parts["data"], parts["indices"], parts["indptr"]), shape=tuple(parts["shape"]))
        feature_count.check_format(full_check=True)  # indices in range: a file is not trusted
        calibration = bundle.get("calibration") or {}
        head = bundle.get("verdict_head") if version >= 2 else None
        n_features = int(features["n_features"])
        return {
            "head": None if head is None else VerdictHead.from_bundle(head, len(bundle["classes"]), n_features),
            "classes": bundle["classes"],
            "class_count": bundle["class_count"],
            "feature_count": feature_count,
            "alpha": bundle["alpha"],
            "n_features": n_features,
            "length_scale": calibration.get("length_scale"),
            "metadata": bundle.get("metadata"),
            "examples": bundle.get("examples"),
            "url_words": _url_words(features, bundle.get("url_vocabulary")),
        }
    except ModelError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ModelError(f"critic model is incomplete or inconsistent ({exc!r}). {REBUILD_HINT}") from exc


def _url_words(features: dict[str, Any], vocabulary: Any) -> list[str] | None:
    """The URL words of a model file's critic (None: no URL features); another scheme or a bad vocabulary raises."""
    if "url_words" not in features:
        return None
    if features["url_words"] != URL_SCHEME:
        raise ModelError(f"critic model reads URLs as {features['url_words']!r}, not {URL_SCHEME!r}. {REBUILD_HINT}")
    if not isinstance(vocabulary, list) or not all(isinstance(w, str) for w in vocabulary):
        raise ModelError(
            f"critic model reads URLs but its URL vocabulary is {type(vocabulary).__name__}. {REBUILD_HINT}"
        )
    return vocabulary


#: What to do about a bad model file of the user's own (``make models`` rebuilds only the default ones).
OWN_MODEL_HINT = (
    "Give the path of a critic model file (.npz), or make one with `focused train-topic` (from example pages) "
    "or `focused train-critic`."
)


def _is_shipped(path: str | Path) -> bool:
    """Whether ``path`` names one of the default models (``models/NAME``), which ``make models`` rebuilds."""
    from focused.paths import MODELS_DIR, shipped_models

    path = Path(path)
    return path.parent.name == MODELS_DIR and f"{MODELS_DIR}/{path.name}" in shipped_models()


def read_critic_file(
    path: str | Path, kinds: Mapping[str, Collection[int]], build: Callable[[dict[str, Any]], _T]
) -> _T:
    """Read a critic model file of one of ``kinds`` (kind -> readable versions) and ``build(bundle)`` it.

    Every problem, in the file or in the bundle it holds, is a one-line :class:`ModelError`
    naming the file.
    """
    # a missing file of the user's own is not fixed by rebuilding the default models
    hint = OWN_MODEL_HINT if not Path(path).exists() and not _is_shipped(path) else REBUILD_HINT
    bundle = read_model(path, kinds, what="critic model", hint=hint, error=ModelError)
    try:
        return build(bundle)
    except ModelError as exc:
        hint = "" if REBUILD_HINT in str(exc) else f" {REBUILD_HINT}"
        raise ModelError(f"{path}: {exc}{hint}") from exc
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ModelError(f"{path}: incomplete or inconsistent critic model ({exc!r}). {REBUILD_HINT}") from exc
