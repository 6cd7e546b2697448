"""The user documentation: links resolve, the README stays one screen, no lab notes leak in.

Pure Python and independent of the ``focused`` package: it reads the Markdown files as text. It checks
README.md, CONTRIBUTING.md, CHANGES.md and docs/*.md:

* every relative link and image points at a file or folder of the repository, and every ``#anchor`` (on the
  same page or another) matches a heading of its target, slugged as GitHub does;
* the README is at most 100 lines;
* no page refers to the development process the reader cannot see (issue numbers, "this round", commit ids)
  or to files outside the repository (``../shared/papers``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 100

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
#: ``[text](target)`` and ``![alt](target)``; the target may be ``<...>`` and may carry a ``"title"``.
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
FORBIDDEN = {
    "an issue number": re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE),
    "a development round": re.compile(
        r"\b(this|last|next|first|second|third|fourth|fifth|sixth|seventh) round\b", re.IGNORECASE
    ),
    "a path to the papers outside the repository": re.compile(r"\.\./shared/papers"),
    "a commit id": re.compile(r"(?<![\w./-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])"),
}


def doc_pages() -> list[Path]:
    pages = [ROOT / name for name in ("README.md", "CONTRIBUTING.md", "CHANGES.md")]
    pages += sorted((ROOT / "docs").glob("*.md"))
    return [page for page in pages if page.is_file()]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def prose_lines(text: str) -> list[tuple[int, str]]:
    """The page's lines outside fenced code blocks, numbered from 1."""
    lines, fenced = [], None
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE.match(line)
        if match:
            if fenced is None:
                fenced = match.group(1)
            elif match.group(1) == fenced:
                fenced = None
            continue
        if fenced is None:
            lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text lowercased, punctuation but ``-`` and ``_`` dropped, spaces to ``-``."""
    text = INLINE_LINK.sub(lambda m: re.sub(r"^!?\[(.*)\]\(.*\)$", r"\1", m.group(0)), heading)
    text = INLINE_CODE.sub(lambda m: m.group(2), text)
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor a page offers: its headings' slugs, numbered ``-1``, ``-2`` when repeated, as GitHub does."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in prose_lines(page.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def links(page: Path) -> list[tuple[int, str]]:
    """``(line, target)`` of every link and image of a page outside code (fenced blocks and code spans)."""
    out = []
    for number, line in prose_lines(page.read_text(encoding="utf-8")):
        definition = REFERENCE_DEF.match(line)
        if definition:
            out.append((number, definition.group(1)))
            continue
        bare = INLINE_CODE.sub("", line)
        out.extend((number, match.group(1)) for match in INLINE_LINK.finditer(bare))
    return out


def broken_links(page: Path) -> list[str]:
    problems = []
    for number, target in links(page):
        where = f"{_rel(page)}:{number}: {target!r}"
        if not target or SCHEME.match(target) or target.startswith("//"):
            continue  # a web address (or an empty link, which Markdown renders as text)
        path_part, _, fragment = target.partition("#")
        if path_part:
            resolved = (page.parent / path_part).resolve()
            if not resolved.is_relative_to(ROOT):
                problems.append(f"{where} leaves the repository")
                continue
            if not resolved.exists():
                problems.append(f"{where}: no such file or folder")
                continue
        else:
            resolved = page
        if fragment:
            if resolved.is_dir() or resolved.suffix.lower() != ".md":
                problems.append(f"{where}: an anchor into something that is not a Markdown page")
            elif fragment.lower() not in anchors(resolved):
                problems.append(f"{where}: {_rel(resolved)} has no heading with the anchor #{fragment}")
    return problems


@pytest.mark.parametrize("page", doc_pages(), ids=_rel)
def test_links_resolve(page: Path) -> None:
    assert broken_links(page) == []


def test_the_settings_page_is_generated_from_the_defaults() -> None:
    """docs/settings.md is what `make docs` writes from focused/settings/defaults.py, every setting on it."""
    from focused.settings import defaults
    from focused.settings.doc import render

    page = ROOT / "docs" / "settings.md"
    text = page.read_text(encoding="utf-8")
    assert text == render(), "docs/settings.md is out of date: run `make docs`"
    assert broken_links(page) == []
    names = [n for n in dir(defaults) if n.startswith("FOCUSED_")]
    assert [n for n in names if f"| `{n}` |" not in text] == []


def test_readme_is_one_screen() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move the rest to docs/"


@pytest.mark.parametrize("page", doc_pages(), ids=_rel)
def test_no_lab_notes(page: Path) -> None:
    found = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        for what, pattern in FORBIDDEN.items():
            match = pattern.search(line)
            if match:
                found.append(f"{_rel(page)}:{number}: {what}: {match.group(0)!r}")
    assert found == []


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """The helpers find what they are for: a broken file link, a missing anchor and GitHub's slugs."""
    assert slug("Pause, resume and crashes") == "pause-resume-and-crashes"
    assert slug("The `replay` profile: strict best-first") == "the-replay-profile-strict-best-first"
    assert slug("Tried and not kept") == "tried-and-not-kept"
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## Title\n\n[a](#title-1) [b](#nowhere) [c](missing.md) `[d](skipped.md)`\n")
    assert anchors(page) == {"title", "title-1"}
    assert [target for _, target in links(page)] == ["#title-1", "#nowhere", "missing.md"]
