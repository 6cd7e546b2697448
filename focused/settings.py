"""Scrapy settings of the focused crawler (polite defaults for the live web).

Every ``FOCUSED_*`` default comes from :mod:`focused.defaults`. For crawls of
a loopback replay use ``-s FOCUSED_PROFILE=replay`` (see :mod:`focused.profiles`).
"""

from focused.defaults import *  # noqa: F403  (all FOCUSED_* defaults, one place)

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
SCHEDULER = "focused.scheduler.FocusedScheduler"
DEPTH_PRIORITY = 0

SPIDER_MIDDLEWARES = {
    # ignored responses (404s...) logged at DEBUG and counted, not one INFO line each
    "scrapy.spidermiddlewares.httperror.HttpErrorMiddleware": None,
    "focused.httperror.QuietHttpErrorMiddleware": 50,
    # Crawler traps, before the links are scored: canonical URLs, then near-duplicate pages feed no
    # links, then depth and repeated-path limits.
    "focused.canonical.CanonicalUrlMiddleware": 980,
    "focused.neardup.NearDuplicateMiddleware": 975,
    "focused.linkguard.LinkGuardMiddleware": 970,
    "focused.scoring.LinkScoringMiddleware": 950,
    "focused.restrict.RestrictToCrawlMiddleware": 960,
}
DOWNLOADER_MIDDLEWARES = {
    "focused.proxy.ReplayProxyMiddleware": 740,
    # After the proxy middlewares (a proxied request is checked by its target's name), before the
    # redirect middlewares in process_response (a redirect from an internal address is refused).
    "focused.internal.RefuseInternalMiddleware": 760,
    "focused.trapguard.TrapGuardMiddleware": 770,
    # Decompression as Scrapy does it, with the bombs counted; then binary bodies served as text are skipped.
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
    "focused.compression.CountingHttpCompressionMiddleware": 590,
    "focused.content.BinaryBodyMiddleware": 570,
}
# Internal addresses are refused at connection time too (DNS rebinding): see focused.resolver.
TWISTED_DNS_RESOLVER = "focused.resolver.PolicyResolver"
ITEM_PIPELINES = {
    "focused.pipelines.CriticPipeline": 300,
}
EXTENSIONS = {
    "focused.extensions.JobDirCheck": 100,
    "focused.extensions.HarvestMonitor": 500,
    "focused.extensions.StatsFile": 510,
    "focused.feedback.RelevanceFeedback": 520,
    "focused.choices.ChoiceLog": 530,
    "focused.reactorlag.ReactorLag": 540,
    "focused.intelligent_feedback.IntelligentFeedback": 550,
    "focused.gctuning.GarbageCollection": 560,
}

# Spider output is processed by CONCURRENT_ITEMS asyncio workers created per
# response; our items and requests are cheap, and 100 workers per page cost
# ~20% of a replay crawl's CPU in task creation alone.
CONCURRENT_ITEMS = 8

TELNETCONSOLE_ENABLED = False
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"

# `scrapy crawl` reports a configuration error (bad topic, seeds, model file) in one line.
COMMANDS_MODULE = "focused.scrapy_commands"
