"""The critic: the page classifier that judges a page's relevance to the crawl topic.

This module gathers the public names; the parts live in

* :mod:`focused.learning.critic.naive_bayes`: :class:`Critic`, multinomial naive Bayes over hashed words
  (Chakrabarti et al. 2002, §2.1, §3.3);
* :mod:`focused.learning.critic.calibration`: the length calibration that makes its posteriors a usable
  priority signal (with the measurements);
* :mod:`focused.learning.critic.topics`: topics over the class taxonomy (:class:`Topic`) and verdicts;
* :mod:`focused.learning.critic.crossfit`: k fold critics, each blind to one fold of the pages;
* :mod:`focused.learning.modelfile`: model files.

A model file is one ``.npz`` archive of plain arrays plus a JSON header (kind, format
version, metadata), read with ``allow_pickle=False``: loading a model never runs code
from the file. The pickles of earlier versions are refused with a pointer to
``focused convert-model``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from focused.learning.critic.crossfit import FORMAT_VERSION as CROSSFIT_FORMAT_VERSION
from focused.learning.critic.crossfit import CrossFitCritic
from focused.learning.critic.naive_bayes import (
    DEFAULT_ALPHA,
    FORMAT_VERSION,
    READABLE_VERSIONS,
    REBUILD_HINT,
    Critic,
    ModelError,
    read_critic_file,
)
from focused.learning.critic.topics import Topic, UnknownTopicError, Verdict
from focused.learning.modelfile import ModelFileError, save_model

__all__ = [
    "DEFAULT_ALPHA",
    "FORMAT_VERSION",
    "READABLE_VERSIONS",
    "REBUILD_HINT",
    "Critic",
    "CrossFitCritic",
    "ModelError",
    "ModelFileError",
    "Topic",
    "UnknownTopicError",
    "Verdict",
    "load_critic",
    "save_bundle",
]

#: The critic kinds :func:`load_critic` reads, with their readable format versions.
CRITIC_KINDS = {Critic.kind: READABLE_VERSIONS, CrossFitCritic.kind: (CROSSFIT_FORMAT_VERSION,)}


def load_critic(path: str | Path) -> Critic | CrossFitCritic:
    """Load a critic model file written by :meth:`Critic.save` or :meth:`CrossFitCritic.save`.

    Dispatches on the file's ``kind``: ``"nb"`` gives a :class:`Critic`,
    ``"crossfit"`` a :class:`CrossFitCritic`.

    Raises
    ------
    ModelError
        For a missing, unreadable, truncated or corrupt file, a pickle (a model
        file of an earlier version: the message says how to convert it), another kind of model
        file or an unsupported format version; one line that names the file and
        says what to do.
    """

    def build(bundle: dict[str, Any]) -> Critic | CrossFitCritic:
        if bundle["kind"] == CrossFitCritic.kind:
            return CrossFitCritic.from_bundle(bundle)
        return Critic.from_bundle(bundle)

    return read_critic_file(path, CRITIC_KINDS, build)


def save_bundle(bundle: dict[str, Any], path: str | Path) -> Path:
    """Write a critic bundle (``to_bundle()`` output) as a model file (:func:`.modelfile.save_model`)."""
    return save_model(bundle, path)
