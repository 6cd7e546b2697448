"""The HTML report of a crawl: the figures read from its database, then the page.

- ``data``: What ``focused report`` shows, read from one crawl database (Scrapy-free).
- ``html``: ``focused report``'s page: one self-contained HTML file (plots inlined as base64 PNG, no external
  resources).
"""
