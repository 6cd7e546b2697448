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

The parts: :mod:`~focused.learning.apprentice.model` (the frozen model, the critic's views, the model
files), :mod:`~focused.learning.apprentice.learner` (the learner), :mod:`~focused.learning.apprentice.stats`
(the arithmetic); :mod:`~focused.learning.apprentice.features`, :mod:`~focused.learning.apprentice.linkids` and
:mod:`~focused.learning.apprentice.pagelinks` (the ⟨t,d⟩ features of a page's links);
:mod:`~focused.learning.apprentice.online` with :mod:`~focused.learning.apprentice.state`,
:mod:`~focused.learning.apprentice.payload` and :mod:`~focused.learning.apprentice.linkbatch` (learning during a
crawl); :mod:`~focused.learning.apprentice.siblings` and :mod:`~focused.learning.apprentice.explore` (the sibling
term and the exploration bonus); :mod:`~focused.learning.apprentice.checkpoint` and
:mod:`~focused.learning.apprentice.shared` (state in a job directory or in Redis);
:mod:`~focused.learning.apprentice.data` (instances from crawl databases). Both kinds of file are plain arrays and a
JSON header (:mod:`focused.learning.modelfile`), never a pickle.
"""
