"""``make test`` spreads the test files over pytest-xdist's workers as ``tests/conftest.py`` says: the files it names
exist, and the Makefile's command is the one its hook acts on."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import SHARED, SLOW_FIRST

TESTS = Path(__file__).resolve().parent


def test_the_files_that_share_a_worker_or_go_first_exist():
    """A renamed file would silently lose its place (and a shared one its protection): every name is a file."""
    missing = sorted(name for name in {*SHARED, *SLOW_FIRST} if not (TESTS / name).is_file())
    assert missing == []


def test_make_test_hands_out_whole_files_in_the_order_of_conftest():
    """The hook only acts under ``--dist loadgroup``; without ``--no-loadscope-reorder`` xdist would reorder the
    files by their number of tests."""
    makefile = (TESTS.parent / "Makefile").read_text()
    recipe = re.search(r"^test:.*\n\t(.*)$", makefile, re.MULTILINE)
    assert recipe is not None
    command = recipe.group(1).split()
    assert command[:3] == ["$(PYTHON)", "-m", "pytest"]
    assert {"--dist", "loadgroup", "--no-loadscope-reorder", "-n"} <= set(command)
