"""A page's URL as words the critic can read beside its text: what the URL tells of a page before it is fetched.

An anchor often names its target badly ("webs" in "course list and webs"), while the
target's URL names it well (``/education/course-webs.html``); and the text of a student's
hobby page reads like the student's home page, while their URLs differ
(``/homes/kayee/`` against ``/homes/kayee/myself.html``). Craven et al.'s WebKB
classifiers and Aggarwal et al.'s URL-token predicate use the URL for the same reasons.

A critic trained with URL features (``Critic.train(..., urls=...)``) reads each page's text
followed by :func:`url_text` of its URL, so it learns what URL words and shapes say about a
page's class from the pages themselves; the anchor view then reads an anchor followed by
the *target's* :func:`url_text`, which is the same evidence about the same page, before
fetching it, less the path words the anchor already has (an encyclopedia's anchor is its
target's title, whose words would otherwise count twice). The words are prefixed (``urlw…``,
``urls…``) so that they are features of their own: "course" in a URL is not "course" in a page's text.

What is read of a URL: the path (percent-decoded; not the host, the query or the fragment),
split into words by the critic's tokenizer, the last segment's file extension dropped, at most
:data:`MAX_URL_WORDS` words; and its shape: the number of path segments, whether it names a
directory (ends with ``/``) or a file, a ``~user`` segment, an index page, a query. A critic
keeps the features (:func:`url_vocabulary`) that at least :data:`MIN_PAGES` of its training pages
have and at least as many lack: a word of one article's title says little of its class, and a
feature of every URL says nothing.

Scrapy-free.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Container, Sequence
from urllib.parse import unquote, urlsplit

from focused.page.text import tokenize

__all__ = ["MAX_URL_WORDS", "MIN_PAGES", "path_words", "url_text", "url_tokens", "url_vocabulary"]

#: At most this many words of one URL (a hostile URL may be kilobytes long).
MAX_URL_WORDS = 12
#: A critic reads a URL feature only if at least this many of its training pages have it, and as many lack it.
MIN_PAGES = 10
#: Path segments counted at most (deeper paths count as this many).
_MAX_DEPTH = 6
#: A file extension at the end of the path's last segment (``.html``, ``.shtml``, ``.php3``).
_EXTENSION = re.compile(r"\.[a-z][a-z0-9]{0,4}$", re.IGNORECASE)
_INDEX = re.compile(r"^(?:index|default|home|welcome|main)\b", re.IGNORECASE)


def path_words(url: str) -> list[str]:
    """The distinct words of ``url``'s path, in order, without the last segment's extension.

    >>> path_words("http://www.cs.washington.edu/education/course-webs.html")
    ['education', 'course', 'webs']
    >>> path_words("http://wikischools.test/wiki/Isaac_Newton#Life")
    ['wiki', 'isaac', 'newton']
    """
    try:
        return _words_of_path(urlsplit(url[:4096]).path)
    except ValueError:  # a malformed URL (e.g. a bad IPv6 host) has no words to give
        return []


def _words_of_path(path: str) -> list[str]:
    path = _EXTENSION.sub("", unquote(path[:2048]))
    return list(dict.fromkeys(tokenize(path.replace("_", " "))))[:MAX_URL_WORDS]


def url_tokens(url: str) -> list[str]:
    """``url``'s features: ``urlw`` + each path word, ``urls`` + each shape word.

    >>> url_tokens("http://www.cs.washington.edu/homes/kayee/myself.html")
    ['urlwhomes', 'urlwkayee', 'urlwmyself', 'urlsdepth3', 'urlsfile']
    >>> url_tokens("http://www.cs.cornell.edu/~kim/")
    ['urlwkim', 'urlsdepth1', 'urlsdir', 'urlstilde']
    """
    try:
        parts = urlsplit(url[:4096])
    except ValueError:  # a malformed URL (e.g. a bad IPv6 host) has nothing to give
        return []
    segments = [s for s in parts.path.split("/") if s]
    shape = [f"depth{min(len(segments), _MAX_DEPTH)}", "dir" if not segments or parts.path.endswith("/") else "file"]
    if any(s.startswith(("~", "%7E", "%7e")) for s in segments):
        shape.append("tilde")
    if segments and _INDEX.match(segments[-1]):
        shape.append("index")
    if parts.query:
        shape.append("query")
    return [*(f"urlw{w}" for w in _words_of_path(parts.path)), *(f"urls{s}" for s in shape)]


def url_vocabulary(urls: Sequence[str], min_pages: int = MIN_PAGES) -> frozenset[str]:
    """The URL features (:func:`url_tokens`) that tell ``urls`` apart: in ``min_pages`` of them or more, and
    missing from ``min_pages`` or more (a feature of nearly every URL, ``wiki`` of ``/wiki/<Title>``,
    says nothing of a page's class but would tilt every link toward the classes of short pages)."""
    counts = Counter(t for url in urls for t in url_tokens(url))
    return frozenset(t for t, n in counts.items() if min_pages <= n <= len(urls) - min_pages)


def url_text(url: str, known: Container[str] | None = None, skip: Collection[str] = ()) -> str:
    """:func:`url_tokens` of ``url`` (those in ``known``, if given; no path word of ``skip``) as one text."""
    dropped = {f"urlw{w}" for w in skip}
    return " ".join(t for t in url_tokens(url) if (known is None or t in known) and t not in dropped)
