"""The extension that refuses a job directory that cannot be resumed, before the crawl starts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured
from scrapy.utils.job import job_dir

from focused.crawldb.jobfile import read_job
from focused.frontier.settings import check_jobdir

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


class JobDirCheck:
    """Refuse a job directory that cannot be resumed before anything starts: one clear line, exit 1.

    The scheduler and the pipeline open the job's files only once Scrapy's
    engine is starting, where an error would come with a cascade of
    tracebacks; this extension is built with the crawler, so their checks run
    first (the apprentice's checkpoint is checked by its own extension).
    """

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        check_jobdir(crawler.settings, crawler.spidercls.name)
        jobdir = job_dir(crawler.settings)
        if jobdir:
            read_job(jobdir)
        raise NotConfigured  # nothing more to do once the crawl runs
