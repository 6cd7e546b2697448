"""docs/commands.md has a row for every command of the ``focused`` command line and names every spider argument in
the crawl's row, as the code defines them: a command or an argument added without its mention fails here."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from focused.cli import build_parser
from focused.settings.validation import ARGUMENT_SETTINGS

PAGE = Path(__file__).resolve().parents[1] / "docs" / "commands.md"


def _commands() -> list[str]:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def _rows(text: str) -> list[list[str]]:
    rows = [line.strip().strip("|").split(" | ") for line in text.splitlines() if line.startswith("| `")]
    return [[cell.strip() for cell in row] for row in rows]


def documented_commands(text: str) -> set[str]:
    """The commands a row's first cell names: `focused NAME ...`, and `NAME` after a slash (`train-critic` /
    `eval-critic`)."""
    names: set[str] = set()
    for row in _rows(text):
        for span in re.findall(r"`([^`]+)`", row[0]):
            words = span.split()
            names.add(words[1] if words[0] == "focused" and len(words) > 1 else words[0])
    return names


def documented_arguments(text: str) -> set[str]:
    """The spider arguments the ``scrapy crawl focused`` row names (`-a NAME=...` or `NAME`)."""
    (row,) = (row for row in _rows(text) if row[0].startswith("`scrapy crawl focused"))
    return {m for span in re.findall(r"`([^`]+)`", " | ".join(row)) for m in re.findall(r"(?:-a )?(\w+)(?:=|$)", span)}


@pytest.mark.parametrize("command", _commands())
def test_every_focused_command_has_a_row(command: str) -> None:
    assert command in documented_commands(PAGE.read_text(encoding="utf-8")), f"docs/commands.md: no row for {command}"


def test_every_spider_argument_is_named_in_the_crawls_row() -> None:
    missing = sorted(set(ARGUMENT_SETTINGS) - documented_arguments(PAGE.read_text(encoding="utf-8")))
    assert not missing, f"docs/commands.md does not name the spider arguments {missing}"


def test_a_row_or_an_argument_taken_out_is_missed() -> None:
    text = PAGE.read_text(encoding="utf-8")
    without = "\n".join(line for line in text.splitlines() if "focused quarantine" not in line)
    assert "quarantine" in documented_commands(text) and "quarantine" not in documented_commands(without)
    assert "jobdir" in documented_arguments(text)
    assert "jobdir" not in documented_arguments(text.replace("`jobdir`", "`job`"))
