"""Predicates: a relevance definition a user writes (``-a predicate="..."``), instead of or with the critic.

Aggarwal et al. (2001) crawl for pages that satisfy an arbitrary user predicate:
keywords in the page, keywords in the URL, a classifier's category, or a
combination. This module parses such a predicate with a small recursive-descent
parser (never ``eval``) and evaluates it on a page. It is Scrapy-free.

Grammar (case-insensitive keywords; ``and`` binds tighter than ``or``)::

    predicate := or_expr END
    or_expr   := and_expr ( "or" and_expr )*
    and_expr  := not_expr ( "and" not_expr )*
    not_expr  := "not" not_expr | primary
    primary   := "(" or_expr ")" | atom
    atom      := "text" ":" VALUE                 the words (or phrase) occur in the page's text
               | "url" ":" VALUE                  the string occurs in the URL (case-insensitive)
               | "class" ":" VALUE [CMP NUMBER]   the critic's Pr(class | page) CMP NUMBER (default >= 0.5)
    VALUE     := WORD | '"' characters '"'
    CMP       := ">" | ">=" | "<" | "<="

``text:`` matches whole words: ``text:"machine learning"`` needs the two
words next to each other, ``text:learn`` does not match "learning". ``url:``
is a substring test, as the paper's URL keywords (``url:.uk``). A ``class:``
name is any topic of the critic (a class, a subtree such as ``Science``).

Example: ``text:"machine learning" and (url:course or class:course>0.6)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["ClassAtom", "Page", "Predicate", "PredicateError", "parse_predicate"]

SYNTAX = 'text:WORD, text:"A PHRASE", url:WORD, class:NAME>0.6, joined by and / or / not and ( )'
_WORDS = re.compile(r"\w+")
_BARE = re.compile(r'[^\s()":<>=]+')
_NUMBER = re.compile(r"[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?")
_FIELDS = ("text", "url", "class")
_CMPS = (">=", "<=", ">", "<")


class PredicateError(ValueError):
    """A predicate that does not parse; the message names the (1-based) position and what was expected."""

    def __init__(self, source: str, position: int, problem: str) -> None:
        self.source = source
        self.position = position  # 0-based offset into source
        shown = source if len(source) <= 80 else source[:77] + "..."
        super().__init__(f"bad predicate at position {position + 1} of {shown!r}: {problem}. Valid: {SYNTAX}")


def normalized_words(text: str) -> str:
    """Lowercase words joined by single spaces, padded with a space on each side (for whole-word search)."""
    return " " + " ".join(_WORDS.findall(text.lower())) + " "


@dataclass
class Page:
    """What a predicate reads of a page; ``class_score(name)`` is asked only when a ``class:`` atom needs it."""

    url: str
    text: str
    class_score: Callable[[str], float] = lambda name: 0.0
    _words: str | None = field(default=None, repr=False)

    @property
    def words(self) -> str:
        if self._words is None:
            self._words = normalized_words(self.text)
        return self._words


# ---------------------------------------------------------------------- syntax tree


@dataclass(frozen=True)
class TextAtom:
    phrase: str  # normalized: " w1 w2 "
    position: int

    def __call__(self, page: Page) -> bool:
        return self.phrase in page.words

    def __str__(self) -> str:
        return f'text:"{self.phrase.strip()}"'


@dataclass(frozen=True)
class UrlAtom:
    needle: str  # lowercase
    position: int

    def __call__(self, page: Page) -> bool:
        return self.needle in page.url.lower()

    def __str__(self) -> str:
        return f'url:"{self.needle}"'


@dataclass(frozen=True)
class ClassAtom:
    name: str
    cmp: str
    threshold: float
    position: int  # of the class name, for errors about it

    def __call__(self, page: Page) -> bool:
        score = page.class_score(self.name)
        if self.cmp == ">":
            return score > self.threshold
        if self.cmp == ">=":
            return score >= self.threshold
        if self.cmp == "<":
            return score < self.threshold
        return score <= self.threshold

    def __str__(self) -> str:
        return f"class:{self.name}{self.cmp}{self.threshold:g}"


@dataclass(frozen=True)
class Not:
    arg: Node

    def __call__(self, page: Page) -> bool:
        return not self.arg(page)

    def __str__(self) -> str:
        return f"not {self.arg}"


@dataclass(frozen=True)
class AllOf:
    args: tuple[Node, ...]

    def __call__(self, page: Page) -> bool:
        return all(arg(page) for arg in self.args)

    def __str__(self) -> str:
        return "(" + " and ".join(map(str, self.args)) + ")"


@dataclass(frozen=True)
class AnyOf:
    args: tuple[Node, ...]

    def __call__(self, page: Page) -> bool:
        return any(arg(page) for arg in self.args)

    def __str__(self) -> str:
        return "(" + " or ".join(map(str, self.args)) + ")"


Node = TextAtom | UrlAtom | ClassAtom | Not | AllOf | AnyOf


@dataclass(frozen=True)
class Predicate:
    """A parsed predicate: call it on a :class:`Page` to get whether the page satisfies it."""

    source: str
    root: Node

    def __call__(self, page: Page) -> bool:
        return self.root(page)

    def class_atoms(self) -> list[ClassAtom]:
        """Every ``class:`` atom (the runtime checks their names against the critic)."""
        out: list[ClassAtom] = []

        def walk(node: Node) -> None:
            if isinstance(node, ClassAtom):
                out.append(node)
            elif isinstance(node, Not):
                walk(node.arg)
            elif isinstance(node, AllOf | AnyOf):
                for arg in node.args:
                    walk(arg)

        walk(self.root)
        return out

    def __str__(self) -> str:
        return str(self.root)


# ---------------------------------------------------------------------- parser


@dataclass
class _Token:
    kind: str  # "(", ")", ":", "cmp", "word", "string", "end"
    text: str
    position: int


def _tokens(source: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if c.isspace():
            i += 1
        elif c in "():":
            out.append(_Token(c, c, i))
            i += 1
        elif c in "<>":
            op = source[i : i + 2] if source[i : i + 2] in _CMPS else c
            out.append(_Token("cmp", op, i))
            i += len(op)
        elif c == "=":
            raise PredicateError(source, i, "'=' is not a comparison here (use >, >=, < or <= after class:NAME)")
        elif c == '"':
            end = source.find('"', i + 1)
            if end < 0:
                raise PredicateError(source, i, "unterminated quoted string")
            out.append(_Token("string", source[i + 1 : end], i))
            i = end + 1
        else:
            m = _BARE.match(source, i)
            assert m is not None  # every other character starts a bare word
            out.append(_Token("word", m.group(), i))
            i = m.end()
    out.append(_Token("end", "", n))
    return out


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens = _tokens(source)
        self.i = 0

    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def fail(self, expected: str, tok: _Token | None = None) -> PredicateError:
        tok = tok or self.tok
        got = "the end" if tok.kind == "end" else repr(tok.text if tok.kind != "string" else f'"{tok.text}"')
        return PredicateError(self.source, tok.position, f"expected {expected}, got {got}")

    def keyword(self, word: str) -> bool:
        if self.tok.kind == "word" and self.tok.text.lower() == word:
            self.i += 1
            return True
        return False

    def parse(self) -> Predicate:
        if self.tok.kind == "end":
            raise PredicateError(self.source, 0, "the predicate is empty")
        root = self.or_expr()
        if self.tok.kind != "end":
            raise self.fail("'and', 'or' or the end")
        return Predicate(self.source, root)

    def or_expr(self) -> Node:
        args = [self.and_expr()]
        while self.keyword("or"):
            args.append(self.and_expr())
        return args[0] if len(args) == 1 else AnyOf(tuple(args))

    def and_expr(self) -> Node:
        args = [self.not_expr()]
        while self.keyword("and"):
            args.append(self.not_expr())
        return args[0] if len(args) == 1 else AllOf(tuple(args))

    def not_expr(self) -> Node:
        if self.keyword("not"):
            return Not(self.not_expr())
        return self.primary()

    def primary(self) -> Node:
        tok = self.tok
        if tok.kind == "(":
            self.i += 1
            node = self.or_expr()
            if self.tok.kind != ")":
                raise self.fail(f"')' to close the '(' at position {tok.position + 1}")
            self.i += 1
            return node
        if tok.kind != "word" or tok.text.lower() not in _FIELDS:
            raise self.fail("text:, url:, class:, 'not' or '('")
        field_name = tok.text.lower()
        self.i += 1
        if self.tok.kind != ":":
            raise self.fail(f"':' after {field_name!r}")
        self.i += 1
        value = self.tok
        if value.kind not in ("word", "string"):
            raise self.fail(f"a word or a quoted phrase after '{field_name}:'")
        self.i += 1
        if field_name == "text":
            phrase = normalized_words(value.text)
            if not phrase.strip():
                raise PredicateError(self.source, value.position, "text: needs at least one word")
            return TextAtom(phrase, value.position)
        if field_name == "url":
            if not value.text:
                raise PredicateError(self.source, value.position, "url: needs a non-empty string")
            return UrlAtom(value.text.lower(), value.position)
        name = value.text.strip()
        if not name:
            raise PredicateError(self.source, value.position, "class: needs a class name")
        cmp, threshold = ">=", 0.5
        if self.tok.kind == "cmp":
            cmp = self.tok.text
            self.i += 1
            number = self.tok
            m = _NUMBER.fullmatch(number.text) if number.kind == "word" else None
            if m is None:
                raise self.fail(f"a number between 0 and 1 after '{cmp}'")
            threshold = float(number.text)
            if not 0.0 <= threshold <= 1.0:
                raise PredicateError(self.source, number.position, f"the threshold {number.text} is not in [0, 1]")
            self.i += 1
        return ClassAtom(name, cmp, threshold, value.position)


def parse_predicate(source: str) -> Predicate:
    """Parse ``source``; :class:`PredicateError` (one line, with the position) when it is not valid."""
    return _Parser(str(source)).parse()
