"""The apprentice's feedback extension: retraining from the critic's verdicts, in one process or shared over Redis.

- ``base``: the apprentice's online relevance feedback in one process (paper §2.2, §3.7), and the base of
- ``shared``: the Scrapy adapter of shared learning (:mod:`focused.learning.apprentice.shared`): workers of one Redis
  frontier.

:class:`ApprenticeFeedback`, the extension ``EXTENSIONS`` names, picks one of them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from focused.core.runtime import CrawlRuntime
from focused.extensions.apprentice.base import RelevanceFeedback
from focused.frontier.settings import uses_redis
from focused.strategies.apprentice import ApprenticeStrategy

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class ApprenticeFeedback:
    """The apprentice's feedback extension (``EXTENSIONS``): the workers of a Redis frontier learn together
    (:class:`~focused.extensions.apprentice.shared.SharedFeedback`), a crawl of one process learns alone
    (:class:`~focused.extensions.apprentice.base.RelevanceFeedback`). Off unless the strategy is the apprentice."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RelevanceFeedback:
        strategy = CrawlRuntime.of(crawler).strategy
        if not isinstance(strategy, ApprenticeStrategy):
            raise NotConfigured
        shared = None
        if uses_redis(crawler.settings):  # imported here: the shared module imports redis, which others never need
            from focused.extensions.apprentice.shared import open_shared

            shared = open_shared(crawler, strategy)
        if shared is not None and strategy.online.siblings is not None:
            # the workers share instances, not the per-source counts the sibling terms read
            logger.info("Shared apprentice: FOCUSED_APPRENTICE_SIBLINGS is off (workers share no sibling counts)")
            strategy.online.siblings = None
        extension = shared or RelevanceFeedback(crawler, strategy)
        extension.connect()
        return extension
