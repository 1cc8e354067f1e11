"""`AgentCompletionModule`, exactly as its contract states."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from harness import AgentCompletionModule, HarnessError, IllegalArgumentException
from harness.modules.completion import (
    MAX_ANSWER_UTF16_UNITS,
    REQUIRED_MESSAGE,
    TOO_LONG_MESSAGE,
    is_java_blank,
)
from harness.modules.projection import utf16_length

ASTRAL = "\U0001f600"  # one code point, two UTF-16 units
CANARY = "canary-7f3a9c-confidential"

# Every code point java.lang.Character.isWhitespace accepts (Unicode 15).
JAVA_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2008\u2009\u200a\u2028\u2029\u205f\u3000"
)
NOT_JAVA_WHITESPACE = "\u00a0\u2007\u202f\x85\u200b\ufeff\u180e"


def utf16_text(min_units: int = 0, max_units: int = 200) -> st.SearchStrategy[str]:
    return st.text(max_size=max_units).filter(
        lambda text: min_units <= utf16_length(text) <= max_units
    )


def test_the_seed_example() -> None:
    module = AgentCompletionModule()
    state = {"agentFinalAnswer": "Deployment completed and the production route is healthy."}
    assert module.execute(state) == {
        "finalAnswer": "Deployment completed and the production route is healthy.",
        "agentOutcome": "final_answer",
    }


@given(st.text(min_size=1))
def test_any_non_blank_bounded_string_passes_byte_identical(answer: str) -> None:
    assume(not is_java_blank(answer))
    assume(utf16_length(answer) <= MAX_ANSWER_UTF16_UNITS)
    outputs = AgentCompletionModule().execute({"agentFinalAnswer": answer})
    assert outputs == {"finalAnswer": answer, "agentOutcome": "final_answer"}
    assert type(outputs["finalAnswer"]) is str
    assert outputs["finalAnswer"].encode("utf-8", "surrogatepass") == answer.encode(
        "utf-8", "surrogatepass"
    )


@given(st.text(alphabet=JAVA_WHITESPACE, max_size=40), st.text(min_size=1, max_size=40))
def test_whitespace_around_content_is_not_trimmed(padding: str, core: str) -> None:
    assume(not is_java_blank(core))
    answer = padding + core + padding
    assert AgentCompletionModule().execute({"agentFinalAnswer": answer})["finalAnswer"] == answer


@given(st.text(alphabet=JAVA_WHITESPACE, max_size=60))
def test_java_blank_answers_are_required_errors(answer: str) -> None:
    with pytest.raises(IllegalArgumentException) as caught:
        AgentCompletionModule().execute({"agentFinalAnswer": answer})
    assert str(caught.value) == REQUIRED_MESSAGE


@pytest.mark.parametrize("character", list(NOT_JAVA_WHITESPACE))
def test_characters_java_does_not_call_whitespace_are_content(character: str) -> None:
    outputs = AgentCompletionModule().execute({"agentFinalAnswer": character})
    assert outputs["finalAnswer"] == character


def test_astral_boundary_at_65536_units_passes() -> None:
    answer = ASTRAL * (MAX_ANSWER_UTF16_UNITS // 2)
    assert len(answer) == 32_768
    assert AgentCompletionModule().execute({"agentFinalAnswer": answer})["finalAnswer"] == answer


def test_astral_boundary_at_65537_units_fails() -> None:
    answer = ASTRAL * (MAX_ANSWER_UTF16_UNITS // 2) + "a"
    assert len(answer) == 32_769  # far below 65,536 code points, yet 65,537 UTF-16 units
    with pytest.raises(IllegalArgumentException) as caught:
        AgentCompletionModule().execute({"agentFinalAnswer": answer})
    assert str(caught.value) == TOO_LONG_MESSAGE


def test_an_astral_character_straddling_the_limit_fails() -> None:
    answer = "a" * (MAX_ANSWER_UTF16_UNITS - 1) + ASTRAL
    with pytest.raises(IllegalArgumentException, match="exceeds the supported length"):
        AgentCompletionModule().execute({"agentFinalAnswer": answer})


def test_bmp_boundary() -> None:
    module = AgentCompletionModule()
    assert module.execute({"agentFinalAnswer": "x" * MAX_ANSWER_UTF16_UNITS})
    with pytest.raises(IllegalArgumentException, match="exceeds"):
        module.execute({"agentFinalAnswer": "x" * (MAX_ANSWER_UTF16_UNITS + 1)})


class Stringish:
    def __str__(self) -> str:
        return "Deployment completed"


NON_STRINGS: list[object] = [
    None,
    b"Deployment completed",
    bytearray(b"x"),
    7,
    3.5,
    Decimal("1"),
    True,
    False,
    ["Deployment completed"],
    ("x",),
    {"text": "Deployment completed"},
    {"x"},
    Stringish(),
    object(),
]


@pytest.mark.parametrize("value", NON_STRINGS, ids=lambda value: type(value).__name__)
def test_every_non_string_is_refused_not_converted(value: object) -> None:
    with pytest.raises(IllegalArgumentException) as caught:
        AgentCompletionModule().execute({"agentFinalAnswer": value})
    assert str(caught.value) == REQUIRED_MESSAGE


@given(
    st.one_of(
        st.none(),
        st.binary(),
        st.integers(),
        st.floats(),
        st.booleans(),
        st.lists(st.text()),
        st.dictionaries(st.text(), st.text()),
        st.builds(Stringish),
    )
)
def test_generated_non_strings_are_refused(value: object) -> None:
    with pytest.raises(IllegalArgumentException, match=f"^{REQUIRED_MESSAGE}$"):
        AgentCompletionModule().execute({"agentFinalAnswer": value})


def test_an_absent_answer_is_required() -> None:
    with pytest.raises(IllegalArgumentException, match=REQUIRED_MESSAGE):
        AgentCompletionModule().execute({"finalAnswer": "a stale answer"})


def test_the_error_is_a_typed_non_retryable_value_error() -> None:
    with pytest.raises(IllegalArgumentException) as caught:
        AgentCompletionModule().execute({})
    error = caught.value
    assert isinstance(error, HarnessError)
    assert isinstance(error, ValueError)
    assert error.retryable is False
    assert error.code == "illegal_argument"


def test_the_output_map_is_cleared_before_every_attempt() -> None:
    module = AgentCompletionModule()
    module.execute({"agentFinalAnswer": "first answer"})
    assert module.outputs["finalAnswer"] == "first answer"
    with pytest.raises(IllegalArgumentException):
        module.execute({"agentFinalAnswer": "   "})
    assert module.outputs == {}
    with pytest.raises(IllegalArgumentException):
        module.execute({"agentFinalAnswer": "x" * (MAX_ANSWER_UTF16_UNITS + 1)})
    assert module.outputs == {}


def test_the_returned_map_is_a_copy() -> None:
    module = AgentCompletionModule()
    returned = module.execute({"agentFinalAnswer": "answer"})
    returned["finalAnswer"] = "tampered"
    assert module.outputs["finalAnswer"] == "answer"


@given(st.text(min_size=1, max_size=50))
def test_identical_input_gives_identical_output(answer: str) -> None:
    assume(not is_java_blank(answer))
    state: Mapping[str, Any] = {"agentFinalAnswer": answer, "other": 1}
    module = AgentCompletionModule()
    assert module.execute(state) == module.execute(state) == AgentCompletionModule().execute(state)
    assert state == {"agentFinalAnswer": answer, "other": 1}


class WeirdString(str):
    def __str__(self) -> str:
        return "something else"


def test_a_str_subclass_is_copied_as_its_characters() -> None:
    outputs = AgentCompletionModule().execute({"agentFinalAnswer": WeirdString("the answer")})
    assert outputs["finalAnswer"] == "the answer"
    assert type(outputs["finalAnswer"]) is str


@given(
    padding=st.text(alphabet=JAVA_WHITESPACE, max_size=5),
    shape=st.sampled_from(["blank", "too_long", "not_str"]),
)
def test_a_canary_answer_never_appears_in_any_message_or_log(padding: str, shape: str) -> None:
    value: object
    if shape == "blank":
        value = padding
    elif shape == "too_long":
        value = CANARY * (MAX_ANSWER_UTF16_UNITS // len(CANARY) + 1)
    else:
        value = [CANARY]
    records: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("harness")
    handler = Collect(level=logging.DEBUG)
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        with pytest.raises(IllegalArgumentException) as caught:
            AgentCompletionModule().execute({"agentFinalAnswer": value})
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
    assert CANARY not in str(caught.value)
    assert CANARY not in repr(caught.value)
    assert all(CANARY not in record.getMessage() for record in records)
    assert records, "a refusal is observable in the log, without its content"


def test_utf16_length_counts_java_characters() -> None:
    assert utf16_length("") == 0
    assert utf16_length("abc") == 3
    assert utf16_length(ASTRAL) == 2
    assert utf16_length("\ud800") == 1  # a lone surrogate is one Java char
    assert utf16_length(utf16_text_example := "é" + ASTRAL) == 3
    assert utf16_text_example


@given(utf16_text(min_units=1, max_units=30))
def test_utf16_length_matches_a_utf16_encoding(text: str) -> None:
    assert utf16_length(text) == len(text.encode("utf-16-be", "surrogatepass")) // 2
