"""Seeds as the user gives them: ``-a seeds=`` (comma- or space-separated URLs) and ``-a seeds_file=`` (one a line).

The spiders read them with these, and :mod:`focused.settings.validation` checks them before the crawl starts with
the same functions: a bad seed is one line naming it (and the scheme a bare host name lacks).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from focused.errors import ConfigError
from focused.paths import project_path

__all__ = ["parse_seeds", "read_seeds_file"]


def parse_seeds(text: str) -> list[str]:
    """Split a comma/whitespace-separated seed list and check every URL is http(s)."""
    seeds = [s.strip() for chunk in text.split(",") for s in chunk.split() if s.strip()]
    bad = [s for s in seeds if urlsplit(s).scheme not in ("http", "https") or not urlsplit(s).netloc]
    if bad:
        # a bare host name (www.x.edu, localhost:8000/a) lacks only its scheme
        bare = [
            b for b in bad if "://" not in b and "@" not in b and _looks_like_host(urlsplit(f"http://{b}").hostname)
        ]
        hint = f" (did you mean {', '.join(f'http://{b}' for b in bare)}?)" if bare else ""
        raise ConfigError(f"seeds must be http(s) URLs; not: {', '.join(bad)}{hint}")
    return seeds


def _looks_like_host(host: str | None) -> bool:
    return bool(host) and ("." in str(host) or host == "localhost")


def read_seeds_file(path: str) -> list[str]:
    """Seeds from a file, one URL per line; ``#`` starts a comment."""
    try:
        lines = project_path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read seeds file {path}: {exc}") from exc
    return parse_seeds(",".join(line.split("#", 1)[0] for line in lines))
