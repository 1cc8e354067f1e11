"""`AgentCompletionModule`: the terminal, local boundary of a durable agent workflow (v2.0).

It copies the validated answer from `agentFinalAnswer` into `finalAnswer` and emits
`agentOutcome: final_answer`. It calls no model and judges no correctness; it only refuses shapes
that cannot be a terminal answer:

- anything that is not a `str` (absent, None, bytes, numbers, booleans, containers, objects with
  a `__str__`): never converted;
- blank text, where blank means what Java's `String.isBlank()` means;
- text longer than 65,536 Java characters, i.e. UTF-16 code units (an astral character counts 2).

The output map is cleared first, so a failed attempt leaves no earlier `finalAnswer` behind.
Errors and logs never contain the answer: it is confidential.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Mapping
from typing import Final

from harness.errors import IllegalArgumentException
from harness.metadata import ANSWER_REQUIRED, ANSWER_TOO_LONG, Contract
from harness.modules.projection import utf16_length

INPUT_FINAL_ANSWER: Final = "agentFinalAnswer"
OUTPUT_FINAL_ANSWER: Final = "finalAnswer"
OUTPUT_AGENT_OUTCOME: Final = "agentOutcome"
FINAL_ANSWER_OUTCOME: Final = "final_answer"
MAX_ANSWER_UTF16_UNITS: Final = 65_536
# The exact messages are the module contract's, declared once in `harness.metadata`.
REQUIRED_MESSAGE: Final = ANSWER_REQUIRED
TOO_LONG_MESSAGE: Final = ANSWER_TOO_LONG

_log = logging.getLogger(__name__)

# java.lang.Character.isWhitespace: Unicode space, line and paragraph separators except the
# non-breaking ones, plus these ASCII and information-separator controls.
_JAVA_WHITESPACE_CONTROLS: Final = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f")
_JAVA_NON_BREAKING_SPACES: Final = frozenset("\u00a0\u2007\u202f")
_SEPARATOR_CATEGORIES: Final = frozenset({"Zs", "Zl", "Zp"})


def is_java_whitespace(character: str) -> bool:
    """Whether `character` is white space as `java.lang.Character.isWhitespace` defines it."""
    if character in _JAVA_WHITESPACE_CONTROLS:
        return True
    return (
        unicodedata.category(character) in _SEPARATOR_CATEGORIES
        and character not in _JAVA_NON_BREAKING_SPACES
    )


def is_java_blank(text: str) -> bool:
    """Whether `text` is empty or only white space, as Java's `String.isBlank()` defines it."""
    return all(is_java_whitespace(character) for character in text)


class AgentCompletionModule:
    """The terminal ExecModule: validates and copies the final answer.

    `execute(state)` takes the workflow state as a mapping and returns the output map as a new
    dict. Identical input gives identical output; there are no side effects beyond the module's
    own output map, which is cleared at the start of every execution.
    """

    name: Final = "AgentCompletionModule"
    version: Final = "2.0"
    metadata: Final = Contract("completion")

    def __init__(self) -> None:
        self._outputs: dict[str, str] = {}

    @property
    def outputs(self) -> dict[str, str]:
        """A copy of the output map of the last execution (empty after a failure)."""
        return dict(self._outputs)

    def execute(self, state: Mapping[str, object]) -> dict[str, str]:
        """Validate `state["agentFinalAnswer"]` and emit `finalAnswer` and `agentOutcome`.

        Raises `IllegalArgumentException` (not retryable) with exactly one of the contract's two
        messages; neither the message nor any log line contains the rejected value.
        """
        self._outputs.clear()
        answer = state.get(INPUT_FINAL_ANSWER)
        if not isinstance(answer, str):
            _log.info("agent completion refused: %s is %s", INPUT_FINAL_ANSWER, _shape(answer))
            raise IllegalArgumentException(REQUIRED_MESSAGE)
        # A str subclass may override __str__ and friends; slicing yields the plain characters.
        text = str.__getitem__(answer, slice(None))
        if is_java_blank(text):
            _log.info("agent completion refused: %s is blank", INPUT_FINAL_ANSWER)
            raise IllegalArgumentException(REQUIRED_MESSAGE)
        units = utf16_length(text)
        if units > MAX_ANSWER_UTF16_UNITS:
            _log.info(
                "agent completion refused: %s has %d UTF-16 units (limit %d)",
                INPUT_FINAL_ANSWER,
                units,
                MAX_ANSWER_UTF16_UNITS,
            )
            raise IllegalArgumentException(TOO_LONG_MESSAGE)
        self._outputs[OUTPUT_FINAL_ANSWER] = text
        self._outputs[OUTPUT_AGENT_OUTCOME] = FINAL_ANSWER_OUTCOME
        return dict(self._outputs)


def _shape(value: object) -> str:
    """A content-free description of a refused value, safe to log."""
    return "absent" if value is None else f"of type {type(value).__name__}"
