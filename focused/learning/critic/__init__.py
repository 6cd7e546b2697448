"""The critic: the page classifier that judges a page's relevance to the crawl topic.

The parts:

* :mod:`focused.learning.critic.naive_bayes`: :class:`Critic`, multinomial naive Bayes over hashed words
  (Chakrabarti et al. 2002, §2.1, §3.3);
* :mod:`focused.learning.critic.calibration`: the length calibration that makes its posteriors a usable
  priority signal (with the measurements);
* :mod:`focused.learning.critic.topics`: topics over the class taxonomy, and verdicts;
* :mod:`focused.learning.critic.crossfit`: k fold critics, each blind to one fold of the pages;
* :mod:`focused.learning.critic.load`: :func:`~focused.learning.critic.load.load_critic`, either kind from its file;
* :mod:`focused.learning.critic.bundle`: the naive Bayes critic's model file layout;
* :mod:`focused.learning.critic.verdict_head`, :mod:`focused.learning.critic.urlwords`: the verdict head and the
  URL words a critic may read;
* :mod:`focused.learning.critic.snippet`: the critic reading anchor texts (the apprentice's view of a link);
* :mod:`focused.learning.critic.training`: training a critic on a corpus.

A model file is one ``.npz`` archive of plain arrays plus a JSON header (kind, format
version, metadata), read with ``allow_pickle=False``: loading a model never runs code
from the file. The pickles of earlier versions are refused with a pointer to
``focused convert-model``.
"""
