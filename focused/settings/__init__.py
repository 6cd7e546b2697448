"""Scrapy settings of the focused crawler (polite defaults for the live web).

Every ``FOCUSED_*`` default comes from :mod:`focused.settings.defaults`. For crawls of
a loopback replay use ``-s FOCUSED_PROFILE=replay`` (see :mod:`focused.settings.profiles`).
"""

from focused.settings.defaults import *  # noqa: F403  (all FOCUSED_* defaults, one place)

BOT_NAME = "focused"
SPIDER_MODULES = ["focused.spiders"]
NEWSPIDER_MODULE = "focused.spiders"

USER_AGENT = "focused/0.1 (+a research focused crawler)"
ROBOTSTXT_OBEY = True

# Politeness on the live web: few parallel requests per site, adaptive delays.
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 2
DOWNLOAD_DELAY = 0.5
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 1.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 1.0
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 5 * 1024 * 1024

# The frontier is ours: global best-first, parent merging, re-scoring, JOBDIR.
SCHEDULER = "focused.core.scheduler.FocusedScheduler"
DEPTH_PRIORITY = 0

SPIDER_MIDDLEWARES = {
    # ignored responses (404s...) logged at DEBUG and counted, not one INFO line each
    "scrapy.spidermiddlewares.httperror.HttpErrorMiddleware": None,
    "focused.spidermiddlewares.httperror.QuietHttpErrorMiddleware": 50,
    # Crawler traps, before the links are scored: canonical URLs, then near-duplicate pages feed no
    # links, then depth and repeated-path limits.
    "focused.spidermiddlewares.canonical.CanonicalUrlMiddleware": 980,
    "focused.spidermiddlewares.neardup.NearDuplicateMiddleware": 975,
    "focused.spidermiddlewares.linkguard.LinkGuardMiddleware": 970,
    "focused.spidermiddlewares.scoring.LinkScoringMiddleware": 950,
    "focused.spidermiddlewares.restrict.RestrictToCrawlMiddleware": 960,
}
DOWNLOADER_MIDDLEWARES = {
    # Scrapy's, with a robots.txt whose host does not answer said in one line, not a traceback
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "focused.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": 100,
    "focused.downloadermiddlewares.replayproxy.ReplayProxyMiddleware": 740,
    # After the proxy middlewares (a proxied request is checked by its target's name), before the
    # redirect middlewares in process_response (a redirect from an internal address is refused).
    "focused.downloadermiddlewares.internal.RefuseInternalMiddleware": 760,
    "focused.downloadermiddlewares.trapguard.TrapGuardMiddleware": 770,
    # Decompression as Scrapy does it, with the bombs counted; then binary bodies served as text are skipped.
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
    "focused.downloadermiddlewares.httpcompression.CountingHttpCompressionMiddleware": 590,
    "focused.downloadermiddlewares.binarybody.BinaryBodyMiddleware": 570,
}
# Internal addresses are refused at connection time too (DNS rebinding): see focused.resolver.
TWISTED_DNS_RESOLVER = "focused.resolver.PolicyResolver"
ITEM_PIPELINES = {
    "focused.pipelines.CriticPipeline": 300,
}
EXTENSIONS = {
    "focused.extensions.malloc.MallocTuning": 50,  # first: before the other components allocate
    "focused.extensions.jobdir.JobDirCheck": 100,
    "focused.extensions.harvest.HarvestMonitor": 500,
    "focused.extensions.statsfile.StatsFile": 510,
    "focused.extensions.apprentice.ApprenticeFeedback": 520,
    "focused.extensions.choicelog.ChoiceLog": 530,
    "focused.extensions.reactorlag.ReactorLag": 540,
    "focused.extensions.intelligent.IntelligentFeedback": 550,
    "focused.extensions.gctuning.GarbageCollection": 560,
    "focused.extensions.warcwriter.WarcWriter": 570,
    "focused.extensions.summary.CrawlSummary": 580,
}
# The crawl ends with a short summary (focused.extensions.summary), not Scrapy's 70 lines of stats: those are
# in the log at DEBUG, in the crawl database, and in FOCUSED_STATS_FILE (-s STATS_DUMP=True brings them back).
STATS_DUMP = False

# Spider output is processed by CONCURRENT_ITEMS asyncio workers created per
# response; our items and requests are cheap, and 100 workers per page cost
# ~20% of a replay crawl's CPU in task creation alone.
CONCURRENT_ITEMS = 8

TELNETCONSOLE_ENABLED = False
# Scrapy's remote control (an HTTP server on a loopback port in every crawl): nothing here needs it; -s
# REMOTE_CONTROL_ENABLED=True turns it on for a user who does.
REMOTE_CONTROL_ENABLED = False
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"

# `scrapy crawl` reports a configuration error (bad topic, seeds, model file) in one line.
COMMANDS_MODULE = "focused.scrapy_commands"
