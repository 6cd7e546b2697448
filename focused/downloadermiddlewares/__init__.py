"""Downloader middlewares, one per module (enabled in :mod:`focused.settings`).

- ``binarybody``: Downloader middleware that skips binary bodies served as text (``text/html`` full of random bytes).
- ``httpcompression``: Scrapy's HTTP decompression, with decompression bombs counted.
- ``internal``: Downloader middleware that refuses requests to internal addresses (SSRF).
- ``replayproxy``: Downloader middleware that routes every request through an offline replay.
- ``trapguard``: Downloader middleware: a per-host page budget, and no fetches of URL patterns found to be traps.
"""
