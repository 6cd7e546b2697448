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

Scrapyd with ``jobs_dir`` set gives every job a new ``JOBDIR`` of its own
(replacing one given with ``-d setting=JOBDIR=...``), so a cancelled job could
never be resumed. ``FOCUSED_JOBDIR`` (``-d jobdir=DIR``) wins over ``JOBDIR``:
a job scheduled again with the same value continues the first job's frontier
and crawl database (recorded in ``DIR/focused-crawl.json``).

Scrapyd has no "failed" state: a job that fails exits with status 1, which
Scrapyd's own log records (``Process died: exitstatus=1``), and its one error
line, in the job's log, names arguments as they were given to Scrapyd
(``-d NAME=VALUE``, not ``-a``).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from scrapy.settings import SETTINGS_PRIORITIES

from focused.settings.access import setting

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


def apply_jobdir(settings: BaseSettings) -> None:
    """``FOCUSED_JOBDIR``, when given, is the job directory: it replaces ``JOBDIR`` (Scrapyd's per-job folder)."""
    jobdir = setting(settings, "FOCUSED_JOBDIR")
    if jobdir:
        settings.set(
            "JOBDIR", jobdir, priority=max(settings.getpriority("JOBDIR") or 0, SETTINGS_PRIORITIES["cmdline"])
        )


def resume_hint(settings: BaseSettings) -> str:
    """How to continue this crawl with its job directory, in the words of how it was started."""
    if not setting(settings, "FOCUSED_JOB"):
        return "resume with the same JOBDIR"
    jobdir = setting(settings, "FOCUSED_JOBDIR")
    if jobdir:
        return f"schedule the job again with -d jobdir={jobdir} to resume it"
    return "Scrapyd gives every job a new JOBDIR: schedule with -d jobdir=DIR to make a job resumable"


_ARGUMENT = re.compile(r"(?<!\S)-a (\w+=)")
_SETTING = re.compile(r"(?<!\S)-s (\w+=)")


def for_scrapyd(message: str) -> str:
    """An error line as a Scrapyd user reads it: ``-a NAME=`` is ``-d NAME=``, ``-s NAME=`` is ``-d setting=NAME=``."""
    return _SETTING.sub(r"-d setting=\1", _ARGUMENT.sub(r"-d \1", message))
