"""Loading a critic model file of either kind (naive Bayes or cross-fitted), and writing a bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from focused.learning.critic.bundle import READABLE_VERSIONS, read_critic_file
from focused.learning.critic.crossfit import FORMAT_VERSION as CROSSFIT_FORMAT_VERSION
from focused.learning.critic.crossfit import CrossFitCritic
from focused.learning.critic.naive_bayes import Critic
from focused.learning.modelfile import save_model

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
