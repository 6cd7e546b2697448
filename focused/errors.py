"""Errors a user can fix, raised with a message that says how."""


class ConfigError(ValueError):
    """Bad crawl configuration: unknown topic or strategy, bad seeds, missing files."""
