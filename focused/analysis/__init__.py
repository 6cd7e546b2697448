"""Page analysis off the reactor thread: a worker process parses pages, the spider's client hands them over.

- ``client``: The spider's side of the page-analysis worker (:mod:`focused.analysis.worker`): what to ask of it, and
  what to do when it fails.
- ``outlinks``: A parsed page's outlinks as Scrapy's link extractor would request them (Scrapy-free but for its list
  of ignored extensions), for the spider and for the page-analysis worker (:mod:`focused.analysis.worker`).
- ``worker``: Page analysis in a worker process, on the second core, while the crawl process does the I/O.
"""
