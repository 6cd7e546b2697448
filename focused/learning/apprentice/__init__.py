"""The apprentice: an online naive Bayes learner of link promise (Chakrabarti et al. 2002, §2.2-2.3).

An instance is the ⟨t, d⟩ feature multiset of a link (u, v) together with the
critic's relevance Pr(c*|v) of the fetched target. Relevances go into two
buckets, LOW and HIGH (the two-bucket case of Torgo and Gama's regression by
classification, §2.3), and a multinomial naive Bayes model estimates
Pr(HIGH | features of (u, v)), the priority of an unfetched v.

Besides the hashed ⟨t, d⟩ features an instance may carry ``n_side`` dense
*side features*: the critic's own views of the link, the logit of Pr(c*|u)
and of Pr(c*|anchor text of (u, v)) (:func:`critic_views`). They do not enter
naive Bayes; they are stacked with its held-out evidence in the logistic
regression that calibrates it, so the data decide how far to trust the critic's
reading of the source page and of the anchor against the learned link context.

:class:`Apprentice` accumulates instances and their sufficient statistics;
:meth:`Apprentice.fit` returns an immutable :class:`ApprenticeModel`, so a
crawler can keep serving one model while the next one trains in another
thread, then swap the reference.

The parts: :mod:`focused.learning.apprentice.model` (the frozen model, the
critic's views, the model files), :mod:`focused.learning.apprentice.learner`
(the learner) and :mod:`focused.learning.apprentice.stats` (the arithmetic). Both
kinds of file are plain arrays and a JSON header (:mod:`focused.learning.modelfile`),
never a pickle.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from focused.learning.apprentice.learner import BINNINGS, NORMALIZATIONS, Apprentice, NotReadyError
from focused.learning.apprentice.model import (
    FORMAT_VERSION,
    LEARNER_KIND,
    LOGIT_CLIP,
    MODEL_KIND,
    READABLE_VERSIONS,
    ApprenticeModel,
    Features,
    critic_views,
)
from focused.learning.modelfile import ModelFileError

__all__ = [
    "BINNINGS",
    "FORMAT_VERSION",
    "LEARNER_KIND",
    "LOGIT_CLIP",
    "MODEL_KIND",
    "NORMALIZATIONS",
    "READABLE_VERSIONS",
    "Apprentice",
    "ApprenticeModel",
    "Features",
    "ModelFileError",
    "NotReadyError",
    "critic_views",
    "train_from_instances",
]


def train_from_instances(
    features_iter: Iterable[Sequence[str]] | Features,
    relevances: Sequence[float] | np.ndarray,
    **params: Any,
) -> ApprenticeModel:
    """Fit a model offline from (link features, target relevance) instances (the paper's §3.5).

    ``params`` are :class:`Apprentice` parameters.
    """
    app = Apprentice(**params)
    if not sp.issparse(features_iter) and not isinstance(features_iter, Sequence):
        features_iter = list(features_iter)
    app.add(features_iter, relevances)
    return app.fit()
