"""The error reference page is generated from the error registry: every code appears once, under
the part of the package that defines it, with its class, the builtin it can be caught as and when
it is raised; the earlier names are listed in one place; nothing written by hand can stand in."""

from __future__ import annotations

import re

import pytest

from harness.error_registry import EARLIER_NAMES, RegisteredError, registry
from tests.docs.fences import DOCS
from tests.docs.reference_hook import error_page, error_reference

PAGE = (DOCS / "reference" / "errors.md").read_text(encoding="utf-8")
RENDERED = error_page()
ROWS = [line for line in RENDERED.splitlines() if line.startswith("| <span id=")]


def test_the_page_keeps_its_marker_once_and_no_table_of_its_own() -> None:
    assert PAGE.count(error_reference.MARKER) == 1
    written = [line for line in PAGE.splitlines() if line.startswith("|")]
    assert written == [], "the tables are generated from the error classes; edit their docstrings"


def test_every_code_appears_exactly_once() -> None:
    codes = [entry.code for entry in registry()]
    for code in codes:
        assert len(re.findall(rf"\| `{re.escape(code)}` \|", RENDERED)) == 1, code
    assert len(ROWS) == len(codes)


@pytest.mark.parametrize("entry", registry(), ids=lambda entry: entry.code)
def test_each_error_is_rendered_under_its_package_with_what_it_declares(
    entry: RegisteredError,
) -> None:
    row = next(line for line in ROWS if f"| `{entry.code}` |" in line)
    assert f"`{entry.name}`" in row
    for base in entry.builtins:
        assert f"`{base.__name__}`" in row
    assert " ".join(entry.doc.split()).replace("|", "\\|") in row
    heading = RENDERED.rindex("\n## ", 0, RENDERED.index(row))
    assert RENDERED[heading:].startswith(f"\n## `{entry.package}`")


def test_the_earlier_names_are_listed_in_one_place() -> None:
    section = RENDERED[RENDERED.index(f"## {error_reference.EARLIER_HEADING}") :]
    assert "\n## " not in section[3:], "the earlier names come last, in one section"
    for earlier in EARLIER_NAMES:
        row = next(
            line for line in section.splitlines() if line.startswith(f"| `{earlier.name}` |")
        )
        for location in earlier.locations:
            assert f"`{location}`" in row
        assert f"[`{earlier.error.rsplit('.', 1)[1]}`](#error-" in row
    assert sum(f"| `{e.name}` |" in RENDERED for e in EARLIER_NAMES) == len(EARLIER_NAMES)


def test_the_hand_written_text_says_how_to_catch_errors() -> None:
    assert "## Catching errors" in PAGE
    assert "#earlier-names" in PAGE
