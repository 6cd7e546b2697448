"""``focused settings-doc``: write the settings reference (``docs/settings.md``) from the defaults."""

from __future__ import annotations

import argparse
from pathlib import Path

from focused.cli import CommandError

DEFAULT_OUT = "docs/settings.md"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "settings-doc",
        help="write docs/settings.md from focused/settings/defaults.py",
        description=__doc__,
    )
    parser.add_argument("-o", "--out", default=DEFAULT_OUT, help="the page to write (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the page is out of date")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from focused.settings.doc import render

    out = Path(args.out)
    text = render()
    if args.check:
        if not out.is_file() or out.read_text(encoding="utf-8") != text:
            raise CommandError(f"{out} is out of date: run `make docs`")
        print(f"{out} is up to date")
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({text.count(chr(10))} lines)")
    return 0
