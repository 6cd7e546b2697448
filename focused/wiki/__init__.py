"""The Wikipedia benchmark: Wikispeedia rendered as a site, its topic taxonomy and critics.

:mod:`~focused.wiki.taxonomy` cuts the category tree into the critic's classes,
:mod:`~focused.wiki.render` renders articles as pages, :mod:`~focused.wiki.web`
writes the WARC, labels and link graph, :mod:`~focused.wiki.graph` holds the link
graph and the seed rule, :mod:`~focused.wiki.critic` trains the (cross-fitted)
critics and :mod:`~focused.wiki.build` prepares the benchmark track from them.
"""
