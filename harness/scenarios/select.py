"""`-k EXPR`: choose cells by words in their id or tags, with `and`, `or`, `not` and parentheses
(the subset of pytest's `-k` that scenario names need)."""

from __future__ import annotations

import re
from collections.abc import Callable

from harness.errors import HarnessError

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")

Matcher = Callable[[str], bool]


class KeywordError(HarnessError, ValueError):
    """Raised when a `-k` expression of `harness run` does not parse (an unexpected word, a missing
    parenthesis, an expression that ends too early)."""

    code = "keyword_expression_invalid"


def compile_keyword(expression: str) -> Callable[[set[str]], bool]:
    """A predicate over a cell's words (its id and tags): true when the expression matches.

    A bare word matches when it is a substring of any of the cell's words, case-insensitively.
    """
    tokens = [m.group(1) for m in _TOKEN.finditer(expression)]
    position = 0

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> str:
        nonlocal position
        token = tokens[position]
        position += 1
        return token

    def parse_or() -> Callable[[set[str]], bool]:
        left = parse_and()
        while peek() == "or":
            take()
            right = parse_and()
            left = (lambda a, b: lambda words: a(words) or b(words))(left, right)
        return left

    def parse_and() -> Callable[[set[str]], bool]:
        left = parse_not()
        while peek() == "and":
            take()
            right = parse_not()
            left = (lambda a, b: lambda words: a(words) and b(words))(left, right)
        return left

    def parse_not() -> Callable[[set[str]], bool]:
        if peek() == "not":
            take()
            inner = parse_not()
            return lambda words: not inner(words)
        return parse_atom()

    def parse_atom() -> Callable[[set[str]], bool]:
        token = peek()
        if token is None:
            raise KeywordError(f"-k {expression!r}: the expression ends too early")
        take()
        if token == "(":
            inner = parse_or()
            if peek() != ")":
                raise KeywordError(f"-k {expression!r}: missing closing parenthesis")
            take()
            return inner
        if token in ("and", "or", ")"):
            raise KeywordError(f"-k {expression!r}: unexpected {token!r}")
        needle = token.lower()
        return lambda words: any(needle in word.lower() for word in words)

    if not tokens:
        return lambda words: True
    predicate = parse_or()
    if position != len(tokens):
        raise KeywordError(f"-k {expression!r}: unexpected {tokens[position]!r}")
    return predicate
