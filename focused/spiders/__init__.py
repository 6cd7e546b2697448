"""Spiders of the focused crawler."""
