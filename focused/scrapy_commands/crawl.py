"""``scrapy crawl``, reporting a configuration error as one line instead of a traceback.

A bad topic, seed list, model file or apprentice file raises
:class:`~focused.errors.ConfigError` (or a
:class:`~focused.learning.modelfile.ModelFileError`) while Scrapy builds the
spider and its components. Scrapy's own command lets the error escape the crawl
task, and asyncio logs it with a full traceback. This command retrieves the
error from the task itself and logs its message, which already names the file
or argument and says what to do; the exit code stays 1. Any other error keeps
its traceback. A crawl stopped because its shared frontier became unreachable
(Redis gone) or because its crawl database writer failed also exits with 1, and
so does a crawl that stored no page because none of its seeds could be fetched
(refused, unreachable, an HTTP error): it ends with one line naming each seed,
why, and the setting to change
(:class:`~focused.spiders.seedreport.SeedReport`).

Before any of that, every spider argument and ``FOCUSED_*`` setting is checked
(:func:`focused.settings.validation.validate`): a bad one is one line on stderr and exit 1,
before Scrapy logs anything.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from focused.errors import ConfigError
from focused.settings.validation import ARGUMENT_SETTINGS, validate

if TYPE_CHECKING:
    import argparse

    from scrapy.settings import Settings

logger = logging.getLogger("focused")

#: Why a crawl that started may have stopped early for a reason already logged (the exit code is then 1).
FAILED_REASONS = ("frontier_unavailable", "crawldb_failed", "warc_failed")
#: Scrapy's remote control extension (its module imports aiohttp's web server).
REMOTE_CONTROL = "scrapy.extensions.remote_control.RemoteControl"


class Command(ScrapyCrawlCommand):
    def long_desc(self) -> str:
        """``scrapy crawl -h``: how to run the focused spider and how to read its log (docs/troubleshooting.md)."""
        return (
            "Run a spider. The focused crawler: scrapy crawl focused -a topic=NAME -a seeds=URL[,URL...] "
            "[-a strategy=apprentice|baseline|bfs] [-a max_pages=N] [-a db=FILE] [-s JOBDIR=DIR]; every -a is a "
            "FOCUSED_* setting (docs/settings.md). Every FOCUSED_LOG_EVERY pages the log has a progress line: "
            "pages= pages labelled so far; harvest= the critic's mean Pr(topic|page) over them; "
            "loss= one minus the harvest; recent_harvest= the same over the pages since the last line; "
            "relevant= pages with Pr(topic|page) >= "
            "FOCUSED_RELEVANCE_THRESHOLD; frontier= URLs waiting. The crawl ends with a summary: why it stopped, "
            "pages stored, harvest, relevant pages (and by which rule), the crawl database, the command that "
            "writes its report and, with JOBDIR, the command that resumes it (docs/troubleshooting.md, The log)."
        )

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        """Check every argument and setting before Scrapy starts: a bad one is one line on stderr, exit 1."""
        super().process_options(args, opts)
        if self.settings:
            leave_out_remote_control(self.settings)
        if args[:1] != ["focused"] or not self.settings:
            return
        from focused.settings.scrapyd import SCRAPYD_ARGUMENTS, for_scrapyd

        try:
            validate(self.settings, opts.spargs, ignore_args=tuple(SCRAPYD_ARGUMENTS))
        except ConfigError as exc:
            message = for_scrapyd(str(exc)) if "_job" in opts.spargs else str(exc)  # Scrapyd's user typed -d
            print(f"error: {message}", file=sys.stderr)
            _to_log_file(self.settings.get("LOG_FILE"), message)
            sys.exit(1)
        if opts.spargs.get("examples"):
            self._topic_from_examples(opts)

    def _topic_from_examples(self, opts: argparse.Namespace) -> None:
        """``-a examples=...``: train the topic's critic (or find it cached) before the crawl starts, and crawl
        with it: the spider then gets ``-a model=<the cached file> -a topic=<its name>``."""
        from focused.core.examples import prepare_crawl

        assert self.settings is not None
        settings = self.settings.copy()
        for arg, value in opts.spargs.items():
            if arg in ARGUMENT_SETTINGS:
                settings.set(ARGUMENT_SETTINGS[arg], value, priority="cmdline")
        handler = _training_log(self.settings)
        try:
            path, topic, _ = prepare_crawl(settings)
        except ConfigError as exc:
            print(f"error: -a examples={opts.spargs['examples']}: {exc}", file=sys.stderr)
            _to_log_file(self.settings.get("LOG_FILE"), str(exc))
            sys.exit(1)
        finally:
            for name in _TRAINING_LOGGERS:
                logging.getLogger(name).removeHandler(handler)
            handler.close()
        del opts.spargs["examples"]
        opts.spargs["model"], opts.spargs["topic"] = str(path), topic

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give one spider name: scrapy crawl focused -a topic=...")
        assert self.crawler_process
        import_tls_early()
        crawler = self._create_crawler(args[0])
        started = self.crawler_process.crawl(crawler, **opts.spargs)
        report_user_errors(started, scrapyd="_job" in opts.spargs)
        self.crawler_process.start()
        try:
            stats = crawler.stats
        except RuntimeError:  # the crawl failed to start (its one error line is logged): no stats
            stats = None
        stopped = stats is not None and (
            stats.get_value("finish_reason") in FAILED_REASONS or bool(stats.get_value("focused/db/error"))
        )
        if self.crawler_process.bootstrap_failed or stopped or stats is None:
            self.exitcode = 1
        elif (line := _nothing_fetched(crawler)) is not None:
            if "_job" in opts.spargs:  # Scrapyd's user typed -d
                from focused.settings.scrapyd import for_scrapyd

                line = for_scrapyd(line)
            print(f"error: {line}", file=sys.stderr)
            _to_log_file(crawler.settings.get("LOG_FILE"), line)
            self.exitcode = 1


def leave_out_remote_control(settings: Settings) -> None:
    """With ``REMOTE_CONTROL_ENABLED`` off (the project's default), take Scrapy's remote control out of its
    built-in extensions (``EXTENSIONS_BASE``): Scrapy would import it, and with it aiohttp's web server, only
    to be told it is not configured. The crawl is the same and starts sooner; ``-s REMOTE_CONTROL_ENABLED=True``
    keeps it. (``EXTENSIONS = {...: None}`` would not do: Scrapy imports every key of ``EXTENSIONS``.)"""
    if settings.getbool("REMOTE_CONTROL_ENABLED"):
        return
    base = settings.getdict("EXTENSIONS_BASE")
    if base.pop(REMOTE_CONTROL, None) is not None:
        settings.set("EXTENSIONS_BASE", base, priority=settings.getpriority("EXTENSIONS_BASE") or "default")


def import_tls_early() -> None:
    """Import Scrapy's TLS context factory now, on a short stack, rather than let the HTTP download handler
    import it deep in the engine's start. The module makes deprecated aliases with
    :func:`scrapy.utils.deprecate.create_deprecated_class`, which calls :func:`inspect.stack`: that looks up
    the module of every frame on the stack, going through all loaded modules for each frame of the import
    machinery, so its cost grows with the stack. Same module, same objects: the crawl does not change."""
    import scrapy.core.downloader.contextfactory  # noqa: F401


#: The loggers of the examples' training (its report, the background's sample) before Scrapy logs anything.
_TRAINING_LOGGERS = ("focused.core.examples", "focused.core.background")


def _training_log(settings: Settings) -> logging.Handler:
    """Before Scrapy's own logging is set up: where the examples' training logs its report (at INFO): the crawl's
    ``LOG_FILE`` when it has one that Scrapy will append to (a Scrapyd job's log, which is all its user sees),
    else stderr."""
    log_file = settings.get("LOG_FILE")
    handler: logging.Handler
    if log_file and settings.getbool("LOG_FILE_APPEND", True):
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(log_file, encoding=settings.get("LOG_ENCODING") or "utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s [%(name)s] %(levelname)s: %(message)s"))
    for name in _TRAINING_LOGGERS:
        logging.getLogger(name).addHandler(handler)
        logging.getLogger(name).setLevel(logging.INFO)
    return handler


def user_errors() -> tuple[type[Exception], ...]:
    """Errors whose message is the whole story. Imported when needed: the model file module imports numpy,
    which ``scrapy crawl -h``, ``scrapy list`` and a crawl refused by its settings' check need not."""
    from focused.learning.modelfile import ModelFileError

    return (ConfigError, ModelFileError)


def report_user_errors(started: Any, *, scrapyd: bool = False) -> None:
    """Log a :func:`user_errors` error of a starting crawl as one line (asyncio task or Deferred);
    ``scrapyd``: in the words of a Scrapyd user (``-d NAME=VALUE``)."""
    if isinstance(started, asyncio.Future):
        started.add_done_callback(partial(_log_task_error, scrapyd=scrapyd))
    elif isinstance(started, Deferred):
        started.addErrback(_log_failure, scrapyd=scrapyd)


def _user_line(exc: BaseException | None, scrapyd: bool) -> str:
    from focused.settings.scrapyd import for_scrapyd

    return for_scrapyd(str(exc)) if scrapyd else str(exc)


def _log_task_error(task: asyncio.Future[Any], *, scrapyd: bool = False) -> None:
    if task.cancelled():
        return
    exc = task.exception()  # retrieved here, so asyncio does not log it again
    if isinstance(exc, user_errors()):
        logger.error("%s", _user_line(exc, scrapyd))
    elif exc is not None:
        logger.error("the crawl failed to start", exc_info=exc)


def _log_failure(failure: Failure, *, scrapyd: bool = False) -> Failure | None:
    if failure.check(*user_errors()):
        logger.error("%s", _user_line(failure.value, scrapyd))
        return None
    return failure


def _nothing_fetched(crawler: Any) -> str | None:
    """The error line of a crawl that stored no page because none of its seeds could be fetched, else None
    (:class:`~focused.spiders.seedreport.SeedReport`)."""
    report = getattr(getattr(crawler, "spider", None), "seed_report", None)
    if report is None:
        return None
    line: str | None = report.failure_line(int(crawler.stats.get_value("focused/pages", 0)))
    return line


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
