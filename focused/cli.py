"""The ``focused`` command line: ``focused <command> [options]``.

Run ``focused --help`` for the list of commands. Crawls themselves run through
Scrapy (``scrapy crawl focused -a topic=...``); these commands build models,
serve the offline replay and run the benchmark.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import NoReturn

#: Command modules under :mod:`focused.commands`, registered in this order.
COMMAND_MODULES = (
    "replay",
    "critic",
    "demo",
    "bench",
    "bench_frontier",
    "bench_distributed",
    "bench_traps",
    "bench_speed",
    "wiki",
    "apprentice",
    "convert",
    "report",
    "markines",
    "train_topic",
    "settings_doc",
    "export",
    "quarantine",
)


class CommandError(Exception):
    """A user error: printed as one line ``focused: error: ...`` with exit status 1."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line (naming the command and pointing at its --help) and exit status 1."""

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def add_set_option(parser: argparse.ArgumentParser, help: str) -> None:
    """A repeatable ``-s/--set NAME=VALUE`` option (read with :func:`setting_items`)."""
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE", help=help)


def setting_items(items: Sequence[str]) -> dict[str, str]:
    """``--set NAME=VALUE`` items as a dict; :class:`CommandError` (one line) on an item that is not NAME=VALUE."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise CommandError(f"--set takes NAME=VALUE, not {item!r}")
        out[name.strip()] = value
    return out


def positive_int(text: str) -> int:
    """An argparse ``type``: a whole number of at least 1 (else argparse's one-line usage error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def probability(text: str) -> float:
    """An argparse ``type``: a number from 0 to 1 (else argparse's one-line usage error)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="focused", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"focused.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"focused.commands.{name}":
                continue  # that command group is not part of this build
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except CommandError as exc:
        print(f"focused: error: {exc}", file=sys.stderr)
        return 1
    except _user_errors() as exc:  # a message that names the file or value and says what to do
        if args.verbose:
            raise
        print(f"focused: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _user_errors() -> tuple[type[Exception], ...]:
    """Errors whose message is the whole story (``-v`` shows their traceback)."""
    from focused.crawldb import CrawlDBError
    from focused.errors import ConfigError
    from focused.learning.modelfile import ModelFileError

    return (ConfigError, ModelFileError, CrawlDBError)


if __name__ == "__main__":
    sys.exit(main())
