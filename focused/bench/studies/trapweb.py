"""The crawler-trap probe: an on-topic site next to a calendar trap, session-id URLs and a growing path.

Served by the replay proxy (:class:`focused.replay.server.ReplayServer`) on loopback,
generated on request, so the traps are endless:

* ``/p/<i>.html``, ``i < pages``: the on-topic site (sport), each page linking
  to the next and to random others, plus links that carry a fresh session id
  (``?PHPSESSID=...``, ``;jsessionid=...``) on every fetch;
* every page's menu links the events calendar ``/calendar/<year>/<month>``
  (previous and next month, and each day ``/calendar/<y>/<m>/<d>``, which links
  the previous and next day) and the documentation ``/docs/``, whose relative
  link ``docs/`` grows the path on every fetch (``/docs/docs/docs/...``).

:func:`classify` tells which fetched URLs were spent in traps.
"""

from __future__ import annotations

import calendar
import random
import secrets
from pathlib import Path
from urllib.parse import urlsplit

from focused.learning.critic.naive_bayes import Critic
from focused.replay.store import Lookup, ReplayStore, StoredResponse

HOST = "http://site.probe"
SEED = HOST + "/p/0.html"
TOPIC = "sport"

SPORT = tuple("football goal match team league score player coach stadium season championship referee".split())
COOKING = tuple("recipe oven flour sugar bake butter dough kitchen simmer sauce pastry spice".split())
NEUTRAL = tuple("welcome page index directory contact information home about news events help".split())
MENU = "Sports club menu: home, events calendar, documentation, contact us, about the club, members area."
FOOTER = "Copyright the sports club. All rights reserved. Contact the webmaster for questions about this site."
_HTML = [("Content-Type", "text/html; charset=utf-8")]


def _words(vocab: tuple[str, ...], n: int, rng: random.Random) -> str:
    return " ".join(rng.choice(vocab) for _ in range(n))


def train_probe_critic(path: Path, seed: int = 0) -> Path:
    """A 3-class critic (sport, cooking, misc) trained on generated texts, saved at ``path``."""
    rng = random.Random(seed)
    texts, labels = [], []
    for label, vocab in (("sport", SPORT), ("cooking", COOKING), ("misc", NEUTRAL)):
        for _ in range(40):
            texts.append(_words(vocab, 60, rng) + " " + _words(NEUTRAL, 10, rng))
            labels.append(label)
    Critic.train(texts, labels, n_features=2**12, metadata={"probe": "traps"}).save(path)
    return path


def _page(title: str, body: str, links: list[tuple[str, str]]) -> bytes:
    anchors = "\n".join(f'<li><a href="{href}">{text}</a></li>' for href, text in links)
    menu = '<a href="/calendar/2026/11">Events calendar</a> <a href="/docs/">Documentation</a>'
    return (
        f"<html><head><title>{title}</title></head><body><div>{MENU} {menu}</div><h1>{title}</h1>"
        f"<p>{body}</p><ul>{anchors}</ul><div>{FOOTER}</div></body></html>"
    ).encode()


class TrapWeb(ReplayStore):
    """The probe web, answered on request (nothing is stored)."""

    def __init__(self, pages: int = 400, seed: int = 0) -> None:
        super().__init__()
        self.pages = pages
        self.seed = seed

    def __len__(self) -> int:
        return self.pages

    def resolve(self, url: str) -> Lookup:
        parts = urlsplit(url)
        path = parts.path.split(";", 1)[0]
        body: bytes | None = None
        if f"{parts.scheme}://{parts.netloc}" == HOST:
            if path.startswith("/p/") and path.endswith(".html"):
                body = self._site(path[3:-5])
            elif path.startswith("/calendar/"):
                body = self._calendar(path.removeprefix("/calendar/").strip("/").split("/"))
            elif path.startswith("/docs/"):
                body = _page("Documentation", "How to use this site. " + " ".join(NEUTRAL), [("docs/", "More docs")])
        if body is None:
            return Lookup(None)
        return Lookup(StoredResponse(url, 200, _HTML, body))

    def _site(self, number: str) -> bytes | None:
        if not number.isdigit() or int(number) >= self.pages:
            return None
        i = int(number)
        rng = random.Random(self.seed * 1_000_003 + i)
        targets = [(i + 1) % self.pages, *rng.sample(range(self.pages), 5)]
        links = [(f"/p/{t}.html", _words(SPORT, 2, rng)) for t in targets]
        # A fresh session id on every fetch, as a site does for a client without cookies.
        sessions = rng.sample(range(self.pages), 3)
        links += [
            (f"/p/{sessions[0]}.html?PHPSESSID={secrets.token_hex(16)}", _words(SPORT, 2, rng)),
            (f"/p/{sessions[1]}.html?sid={secrets.token_hex(16)}", _words(SPORT, 2, rng)),
            (f"/p/{sessions[2]}.html;jsessionid={secrets.token_hex(16).upper()}", _words(SPORT, 2, rng)),
        ]
        return _page(f"Club page {i}", _words(SPORT, 80, rng), links)

    def _calendar(self, fields: list[str]) -> bytes | None:
        if not all(f.isdigit() for f in fields) or len(fields) not in (2, 3):
            return None
        year, month = int(fields[0]), int(fields[1])
        if not 1 <= month <= 12 or not 1 <= year <= 9999:
            return None
        name = f"{calendar.month_name[month]} {year}"
        days = calendar.monthrange(year, month)[1]
        prev_m = (year, month - 1) if month > 1 else (year - 1, 12)
        next_m = (year, month + 1) if month < 12 else (year + 1, 1)
        if len(fields) == 2:
            links = [
                (f"/calendar/{prev_m[0]}/{prev_m[1]}", "previous month"),
                (f"/calendar/{next_m[0]}/{next_m[1]}", "next month"),
            ]
            links += [(f"/calendar/{year}/{month}/{d}", str(d)) for d in range(1, days + 1)]
            return _page(
                f"Events calendar {name}", "Events this month: none scheduled. Mon Tue Wed Thu Fri Sat Sun", links
            )
        day = int(fields[2])
        if not 1 <= day <= days:
            return None
        prev_days = calendar.monthrange(*prev_m)[1]
        links = [
            (
                f"/calendar/{year}/{month}/{day - 1}" if day > 1 else f"/calendar/{prev_m[0]}/{prev_m[1]}/{prev_days}",
                "previous day",
            ),
            (
                f"/calendar/{year}/{month}/{day + 1}" if day < days else f"/calendar/{next_m[0]}/{next_m[1]}/1",
                "next day",
            ),
            (f"/calendar/{year}/{month}", name),
        ]
        return _page(f"Events on {day} {name}", f"Events on {day} {name}: none scheduled.", links)


def classify(urls: list[str]) -> dict[str, int]:
    """Count fetched URLs by where they went: ``site`` (first fetch of a site page), ``session``
    (another fetch of an already fetched site page, through a session-id URL), ``calendar``,
    ``growing_path`` (``/docs/`` and below) and ``other``."""
    counts = {"site": 0, "session": 0, "calendar": 0, "growing_path": 0, "other": 0}
    seen: set[str] = set()
    for url in urls:
        path = urlsplit(url).path.split(";", 1)[0]
        if path.startswith("/p/"):
            counts["session" if path in seen else "site"] += 1
            seen.add(path)
        elif path.startswith("/calendar/"):
            counts["calendar"] += 1
        elif path.startswith("/docs/"):
            counts["growing_path"] += 1
        else:
            counts["other"] += 1
    return counts
