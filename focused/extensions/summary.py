"""The closing summary of a crawl: the few lines a person reads when ``scrapy crawl`` ends.

Scrapy's own closing stats are some seventy lines of counters (kept out of the
INFO log: ``STATS_DUMP`` is off; ``FOCUSED_STATS_FILE`` writes them, the crawl
database keeps them, and the log has them at DEBUG). This extension ends the
crawl with a short block instead: why it stopped, the pages stored and how
long it took, the harvest (the critic's mean Pr(topic|page)), the relevant
pages by a rule that makes sense for the critic (:class:`RelevantRule`), the
true harvest when ground-truth labels are given (``FOCUSED_LABELS``), the crawl
database, the command that writes its report and, with ``JOBDIR``, the command
that resumes the crawl.

The figures come from the crawl database once the pipeline has closed it (so
"pages stored" is what the file holds, over every run of a resumed crawl);
without a database, from the pages labelled in this process. The block is
logged at INFO when the engine stops, after everything else, and also printed
to stderr when the log does not show INFO lines there (``LOG_FILE``, a higher
``LOG_LEVEL``, ``--nolog``).
"""

from __future__ import annotations

import logging
import pprint
import shlex
import sqlite3
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy import signals as scrapy_signals
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.job import job_dir
from twisted.internet.threads import deferToThread

from focused import signals
from focused.core.background import BACKGROUNDS
from focused.core.runtime import CrawlRuntime
from focused.crawldb import CrawlDBError, open_readonly
from focused.learning.critic.examples import examples_metadata
from focused.paths import project_path
from focused.replay.files import StoreError
from focused.replay.labels import first_fetches_on_topic, read_labels
from focused.settings.access import setting
from focused.settings.scrapyd import resume_hint

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler

    from focused.learning.critic.topics import Topic
    from focused.signals import LabelledPage

logger = logging.getLogger(__name__)

#: A critic with more classes than this spreads Pr(topic|page) too thin for a fixed threshold (the 105-class
#: Wikipedia critic gives a page squarely on its topic 0.2-0.4): a page is relevant when the topic is its
#: most probable class, unless FOCUSED_RELEVANCE_THRESHOLD is set explicitly.
MANY_CLASSES = 10

#: A critic from examples trained on the shipped corpora alone that judges this share of at least
#: FORM_HINT_PAGES pages relevant gets a hint in the summary: examples unlike the corpora (forum posts, product
#: pages) make a critic that judges the kind of page rather than its topic; the bench's crawls from examples stay
#: below it (docs/topic.md, "Examples unlike the background").
FORM_HINT_SHARE = 0.75
FORM_HINT_PAGES = 200

#: Why a crawl stopped, in words (Scrapy's and focused's finish reasons; others are shown as they are).
REASONS = {
    "finished": "the frontier is empty",
    "focused_max_pages": "the page budget was reached",
    "shutdown": "stopped by a signal (Ctrl-C)",
    "cancelled": "cancelled",
    "closespider_timeout": "CLOSESPIDER_TIMEOUT was reached",
    "closespider_pagecount": "CLOSESPIDER_PAGECOUNT was reached",
    "closespider_itemcount": "CLOSESPIDER_ITEMCOUNT was reached",
    "closespider_errorcount": "CLOSESPIDER_ERRORCOUNT was reached",
    "frontier_unavailable": "the shared frontier became unreachable",
    "crawldb_failed": "the crawl database writer failed",
}


@dataclass(frozen=True)
class RelevantRule:
    """When a fetched page counts as relevant in the summary.

    ``threshold``: Pr(topic|page) >= ``threshold`` (``FOCUSED_RELEVANCE_THRESHOLD``); ``top-class``: the
    critic's most probable class is one of the topic's ``classes`` (a critic of more than
    :data:`MANY_CLASSES` classes); ``predicate``: the crawl's predicate holds (its relevance is 1 or 0).
    """

    kind: str
    threshold: float
    classes: frozenset[str] = frozenset()
    n_classes: int = 0

    @classmethod
    def of(cls, n_classes: int, topic_classes: Collection[str], threshold: float, *,
           threshold_given: bool = False, predicate: bool = False) -> RelevantRule:  # fmt: skip
        """The rule for a critic of ``n_classes`` classes; an explicit threshold (``threshold_given``) wins."""
        if predicate:
            return cls("predicate", threshold)
        if n_classes > MANY_CLASSES and not threshold_given:
            return cls("top-class", threshold, frozenset(topic_classes), n_classes)
        return cls("threshold", threshold)

    def relevant(self, relevance: float, predicted_class: str) -> bool:
        if self.kind == "top-class":
            return predicted_class in self.classes
        return relevance >= self.threshold

    def describe(self) -> str:
        if self.kind == "top-class":
            return f"the critic's most probable class, of {self.n_classes}, is in the topic"
        if self.kind == "predicate":
            return "the predicate holds"
        return f"Pr(topic|page) >= {self.threshold:g}"


@dataclass
class Tally:
    """The crawl's pages in figures (from the crawl database, or counted as they were labelled)."""

    pages: int = 0
    relevance_sum: float = 0.0
    relevant: int = 0  #: by the summary's rule
    over_threshold: int = 0  #: Pr >= FOCUSED_RELEVANCE_THRESHOLD (the progress line's ``relevant=``)
    urls: list[str] = field(default_factory=list)  #: in fetch order, kept only for the true harvest

    @property
    def harvest(self) -> float:
        return self.relevance_sum / self.pages if self.pages else 0.0

    def add(self, page: LabelledPage, rule: RelevantRule, keep_url: bool) -> None:
        self.pages += 1
        self.relevance_sum += page.relevance
        self.relevant += rule.relevant(page.relevance, page.predicted_class)
        self.over_threshold += page.relevance >= rule.threshold
        if keep_url:
            self.urls.append(page.url)


@dataclass
class Figures:
    """What the summary reports, read off the reactor thread."""

    tally: Tally
    problem: str = ""  #: why the crawl database could not be read
    true_relevant: int | None = None
    labels_name: str = ""  #: the labels file's name, or why it could not be read


def tally_db(path: str | Path, rule: RelevantRule, *, with_urls: bool = False) -> Tally:
    """The figures of a closed crawl database (:class:`~focused.crawldb.CrawlDBError` if unreadable)."""
    conn = open_readonly(path)
    try:
        pages, total, over = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(relevance), 0.0), COALESCE(SUM(relevance >= ?), 0) FROM pages",
            (rule.threshold,),
        ).fetchone()
        relevant = int(over)
        if rule.kind == "top-class":
            rows = conn.execute("SELECT predicted_class, COUNT(*) FROM pages GROUP BY predicted_class")
            relevant = sum(n for cls_name, n in rows if cls_name in rule.classes)
        urls = [u for (u,) in conn.execute("SELECT url FROM pages ORDER BY fetch_order")] if with_urls else []
    except sqlite3.DatabaseError as exc:
        raise CrawlDBError(f"cannot read the crawl database {path}: {exc}") from exc
    finally:
        conn.close()
    return Tally(int(pages), float(total), relevant, int(over), urls)


def true_harvest(labels_file: str, topic: Topic, urls: Sequence[str]) -> tuple[int, str]:
    """Distinct fetched pages whose ground-truth label is in ``topic`` (:func:`first_fetches_on_topic`),
    and the labels file's name; :class:`~focused.replay.files.StoreError` if it cannot be read."""
    labels, _ = read_labels(project_path(labels_file))
    return sum(first_fetches_on_topic(urls, labels, topic.matches)), Path(labels_file).name


def resume_command(jobdir: str, argv: Sequence[str]) -> str:
    """The command that resumes this crawl: the user's ``scrapy crawl`` again (with its ``JOBDIR``).

    Scrapy takes the command's name out of ``sys.argv`` (``scrapy focused -a ...`` is left); it is put back.
    """
    program = Path(argv[0]).name if argv else ""
    if program != "scrapy" and not (program == "__main__.py" and Path(argv[0]).parent.name == "scrapy"):
        return f"the same command with -s JOBDIR={shlex.quote(jobdir)}"
    args = list(argv[1:])
    words = ["scrapy", "crawl", *(args[1:] if args[:1] == ["crawl"] else args)]
    if not any(w.lower().startswith("jobdir=") for w in words):  # -s JOBDIR=DIR or -a jobdir=DIR
        words += ["-s", f"JOBDIR={jobdir}"]
    return shlex.join(words)


def shown(path: str | Path) -> str:
    """A path as a person types it: relative to the current folder when inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def from_examples_on_corpora(critic: object) -> bool:
    """Whether ``critic`` is a critic from examples trained against the shipped corpora alone (its model file
    says what its background was)."""
    info = examples_metadata(critic)
    return info is not None and set(info.get("background_sources", ())) <= set(BACKGROUNDS)


def seconds_text(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 90:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class CrawlSummary:
    """Count the labelled pages, read the crawl database at the close, and end the crawl with the summary."""

    def __init__(self, crawler: Crawler, rule: RelevantRule, topic: Topic, *, corpora_only: bool = False) -> None:
        self.crawler = crawler
        self.rule = rule
        self.topic = topic
        #: the critic is from examples, against the shipped corpora alone
        self.corpora_only = corpora_only
        self.labels = setting(crawler.settings, "FOCUSED_LABELS") or ""
        self.run = Tally()  #: the pages labelled by this process
        self.lines: list[str] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = CrawlRuntime.of(crawler)
        settings = crawler.settings
        given = (settings.getpriority("FOCUSED_RELEVANCE_THRESHOLD") or 0) > SETTINGS_PRIORITIES["project"]
        rule = RelevantRule.of(
            len(getattr(runtime.critic, "classes", ())), runtime.topic.classes, runtime.threshold,
            threshold_given=given, predicate=runtime.relevance.predicate is not None,
        )  # fmt: skip
        ext = cls(crawler, rule, runtime.topic, corpora_only=from_examples_on_corpora(runtime.critic))
        crawler.signals.connect(ext.page_labelled, signal=signals.page_labelled)
        crawler.signals.connect(ext.spider_closed, signal=scrapy_signals.spider_closed)
        crawler.signals.connect(ext.engine_stopped, signal=scrapy_signals.engine_stopped)
        return ext

    def page_labelled(self, page: LabelledPage) -> None:
        self.run.add(page, self.rule, keep_url=bool(self.labels))

    async def spider_closed(self, reason: str) -> None:
        """Read the crawl database (closed by the pipeline by now) in a thread; compose the summary."""
        figures = await maybe_deferred_to_future(deferToThread(self.figures))
        self.lines = self.compose(reason, figures)

    def engine_stopped(self) -> None:
        """Last of all: the stats at DEBUG (unless Scrapy dumped them), then the summary."""
        settings = self.crawler.settings
        if not settings.getbool("STATS_DUMP"):
            logger.debug("Scrapy stats:\n%s", pprint.pformat(self.crawler.stats.get_stats()))
        if not self.lines:
            return
        logger.info("%s", "\n".join(self.lines))
        level = logging.getLevelName(str(settings.get("LOG_LEVEL") or "DEBUG").upper())
        logs_here = settings.getbool("LOG_ENABLED") and not settings.get("LOG_FILE")
        if not (logs_here and isinstance(level, int) and level <= logging.INFO):
            print("\n".join(self.lines), file=sys.stderr, flush=True)

    def figures(self) -> Figures:
        """In a thread: the crawl database's figures (this run's count without one) and the true harvest."""
        db = self.crawler.stats.get_value("focused/db")
        figures = Figures(self.run)
        if db:
            try:
                figures.tally = tally_db(db, self.rule, with_urls=bool(self.labels))
            except CrawlDBError as exc:
                figures.problem = str(exc)
        if self.labels and figures.tally.pages:
            try:
                figures.true_relevant, figures.labels_name = true_harvest(self.labels, self.topic, figures.tally.urls)
            except StoreError as exc:
                figures.labels_name = str(exc)
        return figures

    def compose(self, reason: str, figures: Figures) -> list[str]:
        """The summary's lines; its figures also become ``focused/summary/*`` stats."""
        stats = self.crawler.stats
        db = stats.get_value("focused/db")
        tally = figures.tally
        why = REASONS.get(reason, "")
        if reason == "focused_max_pages":
            why = f"the page budget of {setting(self.crawler.settings, 'FOCUSED_MAX_PAGES')} pages was reached"
        lines = [f"Crawl summary: {reason}" + (f" ({why})" if why else "")]
        labelled = int(stats.get_value("focused/pages", 0) or 0)
        seconds = seconds_text(float(stats.get_value("elapsed_time_seconds", 0) or 0))
        if db and not figures.problem:
            notes = [f"{self.run.pages} this run"] if self.run.pages < tally.pages else []
            notes += [f"{labelled} labelled"] if labelled > tally.pages else []  # the writer failed
            note = f" ({'; '.join(notes)})" if notes else ""
            lines.append(f"  {'pages stored:':<16} {tally.pages}{note} in {seconds}")
        else:
            lines.append(f"  {'pages labelled:':<16} {tally.pages} in {seconds} (this run)")
        if not tally.pages:
            lines.append(f"  {'':<16} (no page: the log above says why)")
        else:
            what = "the critic's mean Pr(topic|page)"
            if self.rule.kind == "predicate":
                what = "the share of pages where the predicate holds"
            lines.append(f"  {'harvest:':<16} {tally.harvest:.3f} ({what}; loss {1 - tally.harvest:.3f})")
            relevant = f"{tally.relevant} of {tally.pages} ({self.rule.describe()}"
            if self.rule.kind == "top-class":
                relevant += f"; {tally.over_threshold} have Pr(topic|page) >= {self.rule.threshold:g}"
            lines.append(f"  {'relevant pages:':<16} {relevant})")
            if self.corpora_only and tally.pages >= FORM_HINT_PAGES and tally.relevant >= FORM_HINT_SHARE * tally.pages:
                lines.append(
                    f"  {'':<16} (more than the site holds? A critic from examples judges the kind of page too: give "
                    'it pages of the site as background, docs/topic.md, "Examples unlike the background")'
                )
        if figures.true_relevant is not None:
            share = figures.true_relevant / tally.pages
            lines.append(
                f"  {'true harvest:':<16} {share:.3f} ({figures.true_relevant} of {tally.pages} pages are "
                f"labelled {self.topic.name!r} in {figures.labels_name})"
            )
            stats.set_value("focused/summary/true_harvest", round(share, 4))
        elif figures.labels_name:
            lines.append(f"  {'true harvest:':<16} unavailable ({figures.labels_name})")
        if db:
            problem = f" ({figures.problem})" if figures.problem else ""
            lines.append(f"  {'crawl database:':<16} {shown(db)}{problem}")
            html = shlex.quote(shown(Path(db).with_suffix(".html")))
            lines.append(f"  {'report:':<16} focused report {shlex.quote(shown(db))} -o {html}")
        else:
            lines.append(f"  {'crawl database:':<16} none (FOCUSED_DB is empty)")
        jobdir = job_dir(self.crawler.settings)
        if jobdir:
            scrapyd = bool(setting(self.crawler.settings, "FOCUSED_JOB"))  # a Scrapyd job: schedule it again
            resume = resume_hint(self.crawler.settings) if scrapyd else resume_command(jobdir, sys.argv)
            lines.append(f"  {'resume:':<16} {resume}")
            if reason == "finished":
                lines.append(f"  {'':<16} (the frontier is empty: a resumed crawl has nothing left to fetch)")
            elif reason == "focused_max_pages":
                lines.append(f"  {'':<16} (with a larger -a max_pages: the budget counts the pages of every run)")
        stats.set_value("focused/summary/pages", tally.pages)
        stats.set_value("focused/summary/relevant_pages", tally.relevant)
        stats.set_value("focused/summary/relevant_rule", self.rule.kind)
        return lines
