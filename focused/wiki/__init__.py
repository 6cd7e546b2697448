"""The Wikipedia benchmark: Wikispeedia rendered as a site, its topic taxonomy and critics.

:mod:`~focused.wiki.taxonomy` cuts the category tree into the critic's classes,
:mod:`~focused.wiki.render` renders articles as pages, :mod:`~focused.wiki.build`
writes the WARC, labels and link graph and trains the (cross-fitted) critics.
"""
