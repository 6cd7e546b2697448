"""Benchmarks: real Scrapy crawls of replayed webs, strategies side by side."""
