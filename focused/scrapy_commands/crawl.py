"""``scrapy crawl``, reporting a configuration error as one line instead of a traceback.

A bad topic, seed list, model file or apprentice file raises
:class:`~focused.errors.ConfigError` (or a
:class:`~focused.learning.modelfile.ModelFileError`) while Scrapy builds the
spider and its components. Scrapy's own command lets the error escape the crawl
task, and asyncio logs it with a full traceback. This command retrieves the
error from the task itself and logs its message, which already names the file
or argument and says what to do; the exit code stays 1. Any other error keeps
its traceback. A crawl stopped because its shared frontier became unreachable
(Redis gone) or because its crawl database writer failed also exits with 1.

Before any of that, every spider argument and ``FOCUSED_*`` setting is checked
(:func:`focused.settings.validation.validate`): a bad one is one line on stderr and exit 1,
before Scrapy logs anything.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from focused.errors import ConfigError
from focused.learning.modelfile import ModelFileError
from focused.settings.validation import validate

if TYPE_CHECKING:
    import argparse

logger = logging.getLogger("focused")

#: Errors whose message is the whole story.
USER_ERRORS = (ConfigError, ModelFileError)
#: Why a crawl that started may have stopped early for a reason already logged (the exit code is then 1).
FAILED_REASONS = ("frontier_unavailable", "crawldb_failed")


class Command(ScrapyCrawlCommand):
    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        """Check every argument and setting before Scrapy starts: a bad one is one line on stderr, exit 1."""
        super().process_options(args, opts)
        if args[:1] != ["focused"] or not self.settings:
            return
        from focused.settings.scrapyd import SCRAPYD_ARGUMENTS

        try:
            validate(self.settings, opts.spargs, ignore_args=tuple(SCRAPYD_ARGUMENTS))
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            _to_log_file(self.settings.get("LOG_FILE"), str(exc))
            sys.exit(1)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give one spider name: scrapy crawl focused -a topic=...")
        assert self.crawler_process
        crawler = self._create_crawler(args[0])
        started = self.crawler_process.crawl(crawler, **opts.spargs)
        report_user_errors(started)
        self.crawler_process.start()
        stats = crawler.stats
        stopped = bool(stats) and (
            stats.get_value("finish_reason") in FAILED_REASONS or bool(stats.get_value("focused/db/error"))
        )
        if self.crawler_process.bootstrap_failed or stopped:
            self.exitcode = 1


def report_user_errors(started: Any) -> None:
    """Log a :data:`USER_ERRORS` error of a starting crawl as one line (asyncio task or Deferred)."""
    if isinstance(started, asyncio.Future):
        started.add_done_callback(_log_task_error)
    elif isinstance(started, Deferred):
        started.addErrback(_log_failure)


def _log_task_error(task: asyncio.Future[Any]) -> None:
    if task.cancelled():
        return
    exc = task.exception()  # retrieved here, so asyncio does not log it again
    if isinstance(exc, USER_ERRORS):
        logger.error("%s", exc)
    elif exc is not None:
        logger.error("the crawl failed to start", exc_info=exc)


def _log_failure(failure: Failure) -> Failure | None:
    if failure.check(*USER_ERRORS):
        logger.error("%s", failure.value)
        return None
    return failure


def _to_log_file(path: str | None, message: str) -> None:
    """Also write the error where the crawl's log was to go (Scrapyd shows the job's log file, not stderr)."""
    if not path:
        return
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{stamp} [focused] ERROR: {message}\n")
    except OSError:
        pass  # stderr has it
