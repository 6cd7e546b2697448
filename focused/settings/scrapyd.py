"""Crawls run as Scrapyd jobs.

Scrapyd runs ``scrapy crawl focused`` from the egg it was given, in the folder
Scrapyd itself was started in, with spider arguments of its own next to the
user's (``-a _job=ID`` always, ``-a _version=V`` when a version was asked for),
``-s LOG_FILE=logs/PROJECT/SPIDER/ID.log`` and, with ``items_dir`` set, a feed
``items/PROJECT/SPIDER/ID.jl``. Every ``-d setting=NAME=VALUE`` of
``schedule.json`` arrives as ``-s NAME=VALUE``.

A job's crawl database goes beside Scrapyd's files,
``crawls/PROJECT/SPIDER/ID.sqlite`` under that folder, unless ``FOCUSED_DB`` is
given (``-d setting=FOCUSED_DB=PATH``; ``{job}`` in it is the job id).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from scrapy.settings import SETTINGS_PRIORITIES

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

#: Spider arguments Scrapyd adds to every job (not the user's: never an error).
SCRAPYD_ARGUMENTS = frozenset({"_job", "_version"})
#: A job's crawl database when ``FOCUSED_DB`` is not given, like Scrapyd's ``logs/`` and ``items/`` layout.
JOB_DB = "crawls/{project}/{spider}/{{job}}.sqlite"


def apply_job(settings: BaseSettings, spider: str, job: str) -> None:
    """Record the Scrapyd job id; unless ``FOCUSED_DB`` was given, put the crawl database beside the job's log."""
    settings.set("FOCUSED_JOB", job, priority="cmdline")
    if (settings.getpriority("FOCUSED_DB") or 0) < SETTINGS_PRIORITIES["cmdline"]:
        project = os.environ.get("SCRAPY_PROJECT") or settings.get("BOT_NAME") or spider
        settings.set("FOCUSED_DB", JOB_DB.format(project=project, spider=spider), priority="spider")
