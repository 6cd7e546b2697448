"""The page-analysis worker reads pages without importing Scrapy (24 MB of Scrapy and Twisted it never uses)."""

from __future__ import annotations

import subprocess
import sys

from scrapy.linkextractors import IGNORED_EXTENSIONS

from focused.analysis import outlinks


def test_ignored_extensions_are_scrapys() -> None:
    assert list(outlinks.IGNORED_EXTENSIONS) == list(IGNORED_EXTENSIONS)


def test_the_worker_module_does_not_import_scrapy() -> None:
    code = "import sys, focused.analysis.worker; print('scrapy' in sys.modules, 'twisted' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False", "False"]
