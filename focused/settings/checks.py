"""Reusable checks of setting values for :mod:`focused.settings.validation` (types, ranges, choices, paths).

Each builder returns a :class:`Spec`: a check that raises :class:`Invalid` with
what is valid, and the same text for documentation.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from focused.paths import project_path

#: Fields of the ``FOCUSED_DB`` template (:meth:`focused.pipelines.CriticPipeline.db_path` fills them).
DB_FIELDS = ("topic", "strategy", "time", "job", "unique")


class Invalid(ValueError):
    """A value a check refuses; the message says what is valid."""


@dataclass
class Context:
    """The settings being checked, and what the checks loaded (the critic, for the topic)."""

    settings: Any
    loaded: dict[str, Any] = field(default_factory=dict)


Check = Callable[[Any, Context], None]


@dataclass(frozen=True)
class Spec:
    """How one setting is checked; ``valid`` is what docs/settings.md and the error line say."""

    check: Check
    valid: str
    #: the names a choice accepts, asked when needed (a registry others add to); ``None`` for other kinds
    choices: Callable[[], Sequence[str]] | None = None


def as_text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def whole(low: int | None = None, high: int | None = None, note: str = "") -> Spec:
    span = "a whole number" + (f" >= {low}" if low is not None else "") + (f" <= {high}" if high is not None else "")
    valid = span + (f" ({note})" if note else "")

    def check(value: Any, ctx: Context) -> None:
        try:
            number = value if isinstance(value, int) and not isinstance(value, bool) else int(as_text(value))
        except ValueError:
            raise Invalid(f"expected {valid}") from None
        if (low is not None and number < low) or (high is not None and number > high):
            raise Invalid(f"expected {valid}")

    return Spec(check, valid)


def number(low: float | None = None, high: float | None = None, *, above: bool = False, note: str = "") -> Spec:
    parts = []
    if low is not None:
        parts.append(f"{'>' if above else '>='} {low:g}")
    if high is not None:
        parts.append(f"<= {high:g}")
    valid = "a number" + (" " + " and ".join(parts) if parts else "") + (f" ({note})" if note else "")

    def check(value: Any, ctx: Context) -> None:
        try:
            x = (
                float(value)
                if isinstance(value, int | float) and not isinstance(value, bool)
                else float(as_text(value))
            )
        except ValueError:
            raise Invalid(f"expected {valid}") from None
        if x != x or (low is not None and (x <= low if above else x < low)) or (high is not None and x > high):
            raise Invalid(f"expected {valid}")

    return Spec(check, valid)


def boolean() -> Spec:
    valid = "True or False (also 1 or 0)"

    def check(value: Any, ctx: Context) -> None:
        if isinstance(value, bool) or value in (0, 1):
            return
        if as_text(value).lower() not in ("true", "false", "1", "0"):
            raise Invalid(f"expected {valid}")

    return Spec(check, valid)


def choice(values: Sequence[str] | Callable[[], Sequence[str]], what: str, *, empty: str = "") -> Spec:
    """One of ``values`` (a callable is asked at check time: a registry others add to); ``empty`` allows ''."""

    def names() -> list[str]:
        return list(values() if callable(values) else values)

    def check(value: Any, ctx: Context) -> None:
        text = as_text(value)
        if (empty and not text) or text in names():
            return
        raise Invalid(
            f"unknown {what}; expected one of {', '.join(names())}{' (or empty: ' + empty + ')' if empty else ''}"
        )

    static = "one of the registry's names" if callable(values) else f"one of {', '.join(values)}"
    return Spec(check, static + (f", or empty ({empty})" if empty else ""), names)


def text() -> Spec:
    return Spec(lambda value, ctx: None, "any text")


def readable(what: str, *, required: bool = False, extra: Check | None = None) -> Spec:
    valid = f"a readable {what}" + ("" if required else " (or empty)")

    def check(value: Any, ctx: Context) -> None:
        raw = as_text(value)
        if not raw:
            if required:
                raise Invalid(f"expected {valid}")
            return
        path = project_path(raw)
        if not path.is_file():
            raise Invalid(f"expected {valid}; {path} {'is not a file' if path.exists() else 'does not exist'}")
        if not os.access(path, os.R_OK):
            raise Invalid(f"expected {valid}; {path} is not readable")
        if extra is not None:
            extra(raw, ctx)

    return Spec(check, valid)


def _writable_path(path: Path, valid: str) -> None:
    """Probe: open an existing file for appending, or create a scratch file where it would go.

    ``os.access`` is no help when running as root; a probe also catches read-only file systems.
    """
    if path.exists() and not path.is_file():
        raise Invalid(f"expected {valid}; {path} is not a file")
    try:
        if path.exists():
            with path.open("ab"):
                pass
            return
        parent = path.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir():
            raise Invalid(f"expected {valid}; {parent} is not a directory")
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise Invalid(f"expected {valid}; cannot write there ({exc.strerror or exc})") from None


def writable(what: str) -> Spec:
    valid = f"a writable {what} (or empty)"

    def check(value: Any, ctx: Context) -> None:
        if as_text(value):
            _writable_path(project_path(as_text(value)), valid)

    return Spec(check, valid)


def db_template() -> Spec:
    fields = ", ".join("{" + f + "}" for f in DB_FIELDS)
    valid = f"a writable file path, fields {fields} (or empty: no database)"

    def check(value: Any, ctx: Context) -> None:
        raw = as_text(value)
        if not raw:
            return
        try:
            path = raw.format(**{f: "x" for f in DB_FIELDS})
        except (KeyError, IndexError, ValueError):
            raise Invalid(f"expected {valid}") from None
        _writable_path(project_path(path), valid)
        if path == raw:  # one file, no fields: one that holds something else is refused now
            from focused.crawldb import CrawlDBError, check_crawl_db

            try:
                check_crawl_db(project_path(path))
            except CrawlDBError as exc:
                raise Invalid(str(exc)) from None

    return Spec(check, valid)


def url(schemes: Sequence[str], what: str) -> Spec:
    valid = f"{what} ({' or '.join(s + '://' for s in schemes)}HOST[:PORT]), or empty"

    def check(value: Any, ctx: Context) -> None:
        raw = as_text(value)
        if not raw:
            return
        try:
            parts = urlsplit(raw)
            parts.port  # noqa: B018  (raises ValueError for a bad port)
        except ValueError:
            raise Invalid(f"expected {valid}") from None
        if parts.scheme not in schemes or (not parts.hostname and parts.scheme != "unix"):
            raise Invalid(f"expected {valid}")

    return Spec(check, valid)
