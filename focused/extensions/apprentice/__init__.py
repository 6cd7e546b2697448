"""The apprentice's feedback extension: retraining from the critic's verdicts, in one process or shared over Redis.

- ``local``: The extension that drives the apprentice's online relevance feedback (paper §2.2, §3.7).
- ``shared``: The Scrapy adapter of shared learning (:mod:`focused.learning.apprentice.shared`): workers of one Redis
  frontier.
"""
