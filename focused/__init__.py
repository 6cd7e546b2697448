"""focused: a learning focused crawler built on Scrapy.

The Scrapy components (spider, middlewares, pipeline, scheduler, extensions)
live in this package; the learning code (critic, apprentice, link features)
lives in :mod:`focused.learning` and knows nothing of Scrapy.
"""

__version__ = "0.1.0"
