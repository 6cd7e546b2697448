"""Spider middlewares, one per module (enabled in :mod:`focused.settings`).

- ``canonical``: Spider middleware that canonicalizes outlinks: session-id parameters dropped, URL aliases collapsed.
- ``httperror``: Scrapy's HTTP error middleware, quiet: ignored responses (404s...) are logged at DEBUG and counted.
- ``linkguard``: Spider middleware that drops outlinks too deep or with a path that repeats itself.
- ``neardup``: Spider middleware: a page whose visible text nearly duplicates an earlier page's feeds no links.
- ``restrict``: Spider middleware that keeps a crawl inside the pages an earlier crawl fetched.
- ``scoring``: The spider middleware that turns the frontier policy's scores into priorities.
"""
