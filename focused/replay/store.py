"""The replay store: stored HTTP responses looked up by their original URL.

Responses are keyed by :func:`~focused.replay.urlnorm.normalize_url`. On top of
exact matches, :meth:`ReplayStore.resolve` answers the way a 1990s web server
with ``DirectoryIndex index.html index.htm`` would: ``dir/`` and
``dir/index.html`` name the same page, and ``dir`` (no slash) is redirected to
``dir/`` so that the page's relative links resolve against the right base.
Nothing else is guessed: paths stay case-sensitive and ``//`` is not merged.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field

from focused.replay.urlnorm import normalize_url

__all__ = ["Lookup", "ReplayStore", "StoredResponse", "merge_labels"]

logger = logging.getLogger(__name__)

#: Names a directory URL is also served under, in the order they are tried.
INDEX_NAMES = ("index.html", "index.htm")
#: Joins the labels of a page that carries several.
LABEL_SEPARATOR = "|"


@dataclass
class StoredResponse:
    """One stored HTTP response, under the URL it was fetched from."""

    url: str
    status: int
    headers: list[tuple[str, str]] = field(repr=False)
    body: bytes = field(repr=False)

    def header(self, name: str) -> str | None:
        """Return the first header called ``name`` (case-insensitive), if any."""
        lname = name.lower()
        return next((value for key, value in self.headers if key.lower() == lname), None)


@dataclass(frozen=True)
class Lookup:
    """What a request for a URL gets: a stored response, a redirect, or neither (404)."""

    response: StoredResponse | None
    redirect: str | None = None


def merge_labels(old: str | None, new: str | None) -> str | None:
    """Join two ``|``-separated label sets, keeping order and dropping repeats."""
    parts = [p for value in (old, new) if value for p in value.split(LABEL_SEPARATOR) if p]
    return LABEL_SEPARATOR.join(dict.fromkeys(parts)) or None


class ReplayStore:
    """An in-memory map from normalized URL to :class:`StoredResponse`.

    ``labels`` and ``groups`` map normalized URLs to a page's label(s) (``|``
    joined) and group (for WebKB, the university). When two stored responses
    share a normalized URL the first is kept and their labels are merged.
    """

    def __init__(self) -> None:
        self._responses: dict[str, StoredResponse] = {}
        self.labels: dict[str, str] = {}
        self.groups: dict[str, str] = {}

    def add(self, resp: StoredResponse, label: str | None = None, group: str | None = None) -> None:
        """Store ``resp`` under its URL (``ValueError`` if not an absolute URL)."""
        key = normalize_url(resp.url)
        kept = self._responses.setdefault(key, resp)
        if kept is not resp:
            logger.debug("%s already stored (as %s); keeping the first response", resp.url, kept.url)
        merged = merge_labels(self.labels.get(key), label)
        if merged:
            self.labels[key] = merged
        if group:
            self.groups.setdefault(key, group)

    def __len__(self) -> int:
        return len(self._responses)

    def __contains__(self, url: object) -> bool:
        """Whether a request for ``url`` is answered by a page or a redirect (not a 404)."""
        if not isinstance(url, str):
            return False
        try:
            lookup = self.resolve(url)
        except ValueError:
            return False
        return lookup.response is not None or lookup.redirect is not None

    def urls(self) -> list[str]:
        """The stored responses' original URLs, in the order they were added."""
        return [resp.url for resp in self._responses.values()]

    def responses(self) -> Iterator[StoredResponse]:
        """The stored responses, in the order they were added."""
        return iter(list(self._responses.values()))

    def resolve(self, url: str) -> Lookup:
        """Look ``url`` up as the replay server answers it.

        Exact match first; ``dir/`` is served from a stored ``dir/index.html``
        (or ``.htm``) and vice versa, and from a stored ``dir`` that is not a
        redirect (some 1996 servers answered ``dir`` with the page itself);
        ``dir`` is redirected to ``dir/`` when ``dir/`` or its index is stored;
        anything else is ``Lookup(None, None)``, a 404.
        Raises ``ValueError`` if ``url`` is not an absolute URL.
        """
        key, redirect = self._resolve_key(normalize_url(url))
        return Lookup(self._responses[key] if key else None, redirect)

    def label_of(self, url: str) -> str | None:
        """The label(s) of the page a request for ``url`` ends up on, if labelled."""
        return self.labels.get(self._label_key(url))

    def group_of(self, url: str) -> str | None:
        """The group (e.g. WebKB university) of the page ``url`` ends up on, if known."""
        return self.groups.get(self._label_key(url))

    def _label_key(self, url: str) -> str:
        key = normalize_url(url)
        found, redirect = self._resolve_key(key)
        if found is None and redirect is not None:
            found, _ = self._resolve_key(redirect)
        return found or key

    def _resolve_key(self, key: str) -> tuple[str | None, str | None]:
        """Return ``(stored key, None)``, ``(None, redirect URL)`` or ``(None, None)``."""
        if key in self._responses:
            return key, None
        rest, qmark, query = key.partition("?")
        scheme, _, hostpath = rest.partition("://")
        slash = hostpath.find("/")
        origin = f"{scheme}://{hostpath[:slash]}"
        path = hostpath[slash:]
        directory, _, last = path.rpartition("/")
        if not last:
            candidates = [path + name for name in INDEX_NAMES]
            bare = f"{origin}{directory}{qmark}{query}"
            if directory and bare in self._responses and self._responses[bare].status < 300:
                # stored as "dir" (an old server answered it without redirecting): same page
                candidates.append(directory)
        elif last in INDEX_NAMES:
            candidates = [directory + "/"]
        else:
            target = f"{origin}{path}/{qmark}{query}"
            for candidate in (f"{path}/", *(f"{path}/{name}" for name in INDEX_NAMES)):
                if f"{origin}{candidate}{qmark}{query}" in self._responses:
                    return None, target
            return None, None
        for candidate in candidates:
            candidate_key = f"{origin}{candidate}{qmark}{query}"
            if candidate_key in self._responses:
                return candidate_key, None
        return None, None

    def confined(self, groups: Collection[str]) -> ReplayStore:
        """A store serving only the pages of ``groups`` (everything else is a 404).

        The benchmark's confinement: a crawl of a held-out group never gets a
        page of the groups its critic was trained on. The responses are shared,
        not copied; labels and groups are kept for the pages served.
        """
        wanted = _as_set(groups) or set()
        # a labels file may name a page by an alias (dir/ for dir/index.html): resolve to the stored key
        stored_group = {self._label_key(k): g for k, g in self.groups.items()}
        view = ReplayStore()
        view._responses = {k: r for k, r in self._responses.items() if stored_group.get(k) in wanted}
        view.labels = {k: v for k, v in self.labels.items() if self._label_key(k) in view._responses}
        view.groups = {k: v for k, v in self.groups.items() if self._label_key(k) in view._responses}
        return view

    def restrict_to_groups(self, groups: Collection[str]) -> None:
        """Drop every response whose group is not in ``groups``."""
        wanted = _as_set(groups) or set()
        for key in [k for k in self._responses if self.groups.get(k) not in wanted]:
            del self._responses[key]


def _as_set(values: Collection[str] | None) -> set[str] | None:
    if values is None:
        return None
    return {values} if isinstance(values, str) else set(values)
