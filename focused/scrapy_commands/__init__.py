"""Scrapy commands of the project (``COMMANDS_MODULE``): ``crawl`` reports configuration errors in one line."""
