"""A topic from example pages: read them (files, folders, URLs), train or reuse the critic.

Scrapy-free; shared by ``focused train-topic`` and ``scrapy crawl focused -a examples=...``
(:func:`prepare_crawl`). The examples are a folder of ``.html``/``.txt`` pages, comma-separated URLs,
or a file listing URLs or paths one a line (``#`` starts a comment; a path is relative to the file's
folder); any other file is one example page (left out, with a warning, if it is not text or has no word:
:func:`example_texts`). URLs are fetched once, with the crawl's address rules (:mod:`focused.core.exampleurls`:
an internal address is refused unless ``FOCUSED_ALLOW_INTERNAL`` allows it, redirects included); a URL that
gives no page is left out with a warning. The background (WebKB and Wikispeedia by default, from the corpora
folder, ``$FOCUSED_CORPORA``; :mod:`focused.core.background`) is unlabelled data for the positive-unlabelled critic
(:func:`~focused.learning.critic.examples.train_examples_critic`).

A crawl's critic is cached under ``FOCUSED_EXAMPLES_CACHE`` by a hash of the example files' content and the
example URLs (not their pages, which change between fetches on the live web), the topic name, the background
and the recipe: a resumed crawl, or a second worker on the same machine, loads it instead of training again,
without fetching the example URLs.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from w3lib.encoding import read_bom

from focused.addresses import AddressPolicy, AllowListError
from focused.core.background import BACKGROUNDS, background_key, check_background, folder_files, read_background
from focused.core.exampleurls import Unavailable, check_address, fetch_page
from focused.errors import ConfigError
from focused.learning.critic.examples import (
    FROM_EXAMPLES,
    MIN_POSITIVES,
    RECIPE,
    TopicCritic,
    train_examples_critic,
)
from focused.page.binary import looks_binary

__all__ = [
    "Examples",
    "check_examples_spec",
    "fetch_examples",
    "prepare_crawl",
    "read_examples",
    "topic_name",
    "train_topic",
]

logger = logging.getLogger(__name__)

#: How the examples' pages are read, part of the cache key (a critic from pages read otherwise is trained again):
#: version 2 decodes a page by its byte-order mark, else by its ``Content-Type``'s charset.
READING = "reading/2"
_URL_RE = re.compile(r"^https?://\S+$", re.IGNORECASE)
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")


@dataclass
class Examples:
    """Example pages: their bodies, and the URLs among them (the crawl's seeds when none are given)."""

    bodies: list[bytes]
    urls: list[str]
    #: where each body came from (its file or URL), for the messages: as many as the bodies
    names: list[str] = field(default_factory=list)
    #: the example URLs that gave no page, and why (:class:`~focused.core.exampleurls.Unavailable`): left out
    skipped: list[str] = field(default_factory=list)
    #: the charset a fetched example's ``Content-Type`` declared, by its index in ``bodies``: its text is decoded
    #: by it, as the crawl decodes the page
    charsets: dict[int, str] = field(default_factory=dict)

    def digest(self) -> str:
        """A hash of the examples' content (and URLs), in the order given."""
        h = hashlib.sha256()
        for body in self.bodies:
            h.update(hashlib.sha256(body).digest())
        for url in self.urls:
            h.update(url.encode("utf-8") + b"\n")
        return h.hexdigest()


def _is_urls(spec: str) -> list[str] | None:
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    return parts if parts and all(_URL_RE.match(p) for p in parts) else None


def _listing(path: Path) -> list[str] | None:
    """The lines of a file listing URLs or paths (None: the file is a page itself).

    A file is a listing when at least half of its lines (comments and blank lines aside) are URLs or files;
    then a line that is neither is a ConfigError naming it (a typo, not a page of text). A byte-order mark
    (a listing saved by Windows' Notepad) is not part of the first line."""
    if path.suffix.lower() in (".html", ".htm", ".xhtml"):
        return None
    try:
        raw = path.read_bytes()[:1_000_000].decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    numbered = [(n, ln.split("#", 1)[0].strip()) for n, ln in enumerate(raw.splitlines(), 1)]
    numbered = [(n, ln) for n, ln in numbered if ln]
    bad = [(n, ln) for n, ln in numbered if not (_URL_RE.match(ln) or (path.parent / ln).is_file())]
    if not numbered or 2 * len(bad) > len(numbered):
        return None
    if bad:
        n, line = bad[0]
        more = f" (and {len(bad) - 1} more lines)" if len(bad) > 1 else ""
        raise ConfigError(
            f"{path}, line {n}: {line!r} is neither an http(s) URL nor a file (a path is relative to the listing's "
            f"folder){more}"
        )
    return [ln for _, ln in numbered]


def check_examples_spec(spec: str) -> int | None:
    """Check an examples spec without fetching anything; the number of examples when known (None: URLs).

    Raises ConfigError (one line) for a missing path, an empty folder, or too few examples.
    """
    if _is_urls(spec):
        return None
    path = Path(spec).expanduser()
    if not path.exists():
        raise ConfigError(f"{spec}: no such folder or file, and not http(s) URLs")
    if path.is_dir():
        count = len(folder_files(path))
        if count == 0:
            raise ConfigError(f"{spec}: the folder holds no example pages")
    else:
        listed = _listing(path)
        count = 1 if listed is None else len(listed)
        if listed is not None and any(_URL_RE.match(ln) for ln in listed):
            return None
    if count < MIN_POSITIVES:
        raise ConfigError(f"{spec}: {count} example page(s); need at least {MIN_POSITIVES}")
    return count


def read_examples(specs: Sequence[str], *, policy: AddressPolicy | None = None, fetch_urls: bool = True) -> Examples:
    """The pages of ``specs`` (each a folder, a file, a listing or comma-separated URLs); URLs are fetched
    (without ``fetch_urls`` only listed: the caller finds their pages elsewhere)."""
    bodies: list[bytes] = []
    names: list[str] = []
    urls: list[str] = []
    for spec in specs:
        listed = _is_urls(spec)
        if listed:
            urls.extend(listed)
            continue
        path = Path(spec).expanduser()
        if not path.exists():
            raise ConfigError(f"{spec}: no such folder or file, and not http(s) URLs")
        if path.is_dir():
            files = folder_files(path)
            if not files:
                raise ConfigError(f"{spec}: the folder holds no example pages")
            bodies.extend(p.read_bytes() for p in files)
            names.extend(map(str, files))
            continue
        lines = _listing(path)
        if lines is None:
            bodies.append(path.read_bytes())
            names.append(str(path))
            continue
        for line in lines:
            if _URL_RE.match(line):
                urls.append(line)
            else:
                bodies.append((path.parent / line).read_bytes())
                names.append(str(path.parent / line))
    urls = list(dict.fromkeys(urls))  # a URL given twice is one example
    examples = Examples(bodies, urls, names)
    if fetch_urls:
        fetch_examples(examples, policy or AddressPolicy())
    return examples


def fetch_examples(examples: Examples, policy: AddressPolicy, user_agent: str | None = None) -> None:
    """Fetch the example URLs into ``examples`` (their bodies after the files'), as ``user_agent`` (the crawl's;
    None: the project's ``USER_AGENT``); one that gives no page is left out, noted in ``examples.skipped``. An
    address the crawl would refuse stops it before anything is fetched."""
    if user_agent is None:
        from focused.settings import USER_AGENT

        user_agent = USER_AGENT
    for url in examples.urls:
        check_address(url, policy)
    for url in examples.urls:  # one dead example of many is the live web, not bad input: it is left out
        try:
            body, charset = fetch_page(url, policy, user_agent)
        except Unavailable as exc:
            examples.skipped.append(str(exc))
            continue
        if charset:
            examples.charsets[len(examples.bodies)] = charset
        examples.bodies.append(body)
        examples.names.append(url)


# ---------------------------------------------------------------------- one call for a crawl


def topic_name(spec: str, given: str = "") -> str:
    """The topic's name: ``given``, else the examples' folder or file name, else ``examples``."""
    if given:
        name = given
    elif _is_urls(spec):
        name = "examples"
    else:
        name = re.sub(r"[^A-Za-z0-9_-]+", "-", Path(spec).expanduser().name.split(".")[0]).strip("-") or "examples"
    if not _NAME_RE.match(name) or name == "background":
        raise ConfigError(
            f"topic name {name!r}: use letters, digits, '_' or '-' (dots for a hierarchy), not 'background'"
        )
    return name


def train_topic(
    examples: Examples,
    name: str,
    background: Sequence[str],
    max_background: int,
    seed: int,
    *,
    negatives: Examples | None = None,
    keywords: Sequence[str] = (),
    cache: Path | None = None,
) -> TopicCritic:
    """Train the critic of topic ``name`` from ``examples`` against ``background`` (one-line ConfigError); with
    ``cache``, the shipped corpora's texts are kept in that folder (:func:`~focused.core.background.corpus_texts`)."""
    texts = example_texts(examples)
    negative_texts, skipped = _texts(negatives, what="negative page") if negatives else ([], [])
    for reason in skipped:
        logger.warning("Skipped %s", reason)
    if cache is not None and any(source in BACKGROUNDS for source in background):  # the long part: said before it
        logger.info(
            "Topic %r: training a critic from %d examples against %s (the corpora's texts kept in %s)",
            name, len(texts), ", ".join(background), cache,
        )  # fmt: skip
    pages = read_background(
        background, max_background, seed, exclude=set(texts), exclude_urls=examples.urls, cache=cache
    )
    if len(pages) < 2:
        raise ConfigError(f"need at least 2 background pages, got {len(pages)} from {', '.join(background)}")
    meta = {FROM_EXAMPLES: {"background_sources": list(background), "examples_digest": examples.digest()}}
    try:
        return train_examples_critic(
            texts, pages, negative_texts, keywords, name=name, examples=examples.urls, seed=seed, metadata=meta
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


def example_texts(examples: Examples) -> list[str]:
    """The examples' visible texts, those with a word; ConfigError (one line) for fewer than the critic needs.
    A body that is not text (a PDF or an image saved as ``.html``), or has no word, is skipped with a warning
    that names it."""
    texts, unread = _texts(examples)
    skipped = examples.skipped + unread
    if len(texts) < MIN_POSITIVES:
        why = f" ({'; '.join(skipped)})" if skipped else ""
        raise ConfigError(f"need at least {MIN_POSITIVES} example pages with text, got {len(texts)}{why}")
    for reason in skipped:
        logger.warning("Skipped %s", reason)
    return texts


def _texts(examples: Examples, what: str = "example") -> tuple[list[str], list[str]]:
    """The visible texts of pages, those that are text and have a word, and why each other page was left out
    (naming it by ``examples.names`` when there is one per body). A page is decoded by its byte-order mark, else
    the charset its ``Content-Type`` declared, else its own declaration or a guess, as the crawl decodes it."""
    from focused.page.text import html_to_text

    bodies, names = examples.bodies, examples.names
    texts: list[str] = []
    skipped: list[str] = []
    for i, body in enumerate(bodies):
        name = names[i] if len(names) == len(bodies) else str(i + 1)
        declared = examples.charsets.get(i)
        if looks_binary(body, read_bom(body)[0] or declared or "utf-8"):  # the crawl's rule for a response
            reason = f"{what} {name}: not text"
        else:
            text = html_to_text(body, declared)
            if text.split():
                texts.append(text)
                continue
            reason = f"{what} {name}: no word"
        skipped.append(reason)
    return texts, skipped


def prepare_crawl(settings: Any) -> tuple[Path, str, bool]:
    """For ``-a examples=...``: the critic's model file (cached, or trained now), the topic, and whether it was
    trained now. ``settings`` are the crawl's (Scrapy settings or a mapping)."""
    from focused.learning.critic.load import load_critic
    from focused.learning.modelfile import ModelFileError
    from focused.paths import project_path
    from focused.settings.access import setting

    spec = str(setting(settings, "FOCUSED_EXAMPLES"))
    name = topic_name(spec, str(setting(settings, "FOCUSED_TOPIC") or "").strip())
    background = [s.strip() for s in str(setting(settings, "FOCUSED_EXAMPLES_BACKGROUND")).split(",") if s.strip()]
    check_background(background)
    limit = int(setting(settings, "FOCUSED_EXAMPLES_MAX_BACKGROUND"))
    seed = int(setting(settings, "FOCUSED_SEED"))
    try:
        policy = AddressPolicy.from_setting(setting(settings, "FOCUSED_ALLOW_INTERNAL"))
    except AllowListError as exc:
        raise ConfigError(str(exc)) from exc
    # the cache is named by the example files' content and the example URLs, not the URLs' pages: a live page
    # changes between fetches (a date, an advert), and a resumed crawl or a second worker must find the critic
    # the first one trained, without fetching the examples again
    examples = read_examples([spec], policy=policy, fetch_urls=False)
    key = hashlib.sha256(
        "\n".join(
            [RECIPE, READING, examples.digest(), name, background_key(background), str(limit), str(seed)]
        ).encode()
    ).hexdigest()[:16]
    path = project_path(setting(settings, "FOCUSED_EXAMPLES_CACHE")) / f"{name}-{key}.npz"
    if path.is_file():
        try:
            load_critic(path).resolve_topic(name)
        except (ModelFileError, ValueError) as exc:
            logger.warning("cached critic %s is unreadable (%s): training again", path, exc)
        else:
            logger.info("Topic %r: the critic trained from these examples before (%s)", name, path)
            return path, name, False
    fetch_examples(examples, policy, str(settings.get("USER_AGENT") or "") or None)
    cache = f"FOCUSED_EXAMPLES_CACHE={setting(settings, 'FOCUSED_EXAMPLES_CACHE')}"
    try:  # before the training: a folder the critic cannot go to is one line now, not a traceback in a minute
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{cache}: cannot make the folder of the critics ({exc.strerror or exc})") from None
    trained = train_topic(examples, name, background, limit, seed, cache=path.parent)
    try:
        trained.critic.save(path)
    except OSError as exc:
        raise ConfigError(f"{cache}: cannot write the critic {path} ({exc.strerror or exc})") from None
    for line in trained.report.lines():
        (logger.warning if line.startswith("warning:") else logger.info)("Topic %r: %s", name, line)
    logger.info("Topic %r: trained a critic from %d examples: %s", name, trained.report.positives, path)
    return path, name, True
