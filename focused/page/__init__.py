"""Page reading, free of Scrapy: parse a page once, its text, word table, hashed ids and SimHash.

- ``hashing``: Hashed features, with scikit-learn's ids, at the cost of a dict look-up per known string.
- ``parse``: One parse of an HTML page for everything the crawler reads from it.
- ``parsed``: What one parse of a page gives (:class:`ParsedPage`), and the element classes both parsers share.
- ``simhash``: Near-duplicate pages: 64-bit SimHash of the visible text, and an index that finds close ones.
- ``stream``: The streaming reader of pages too deeply nested for libxml2 (see :mod:`focused.page.parse`).
- ``text``: Visible text of HTML pages, and the one tokenizer the critic uses.
- ``words``: The words of a page, numbered once per process, and what the page readers take from each word.
"""
