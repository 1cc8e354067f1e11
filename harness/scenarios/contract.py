"""What `--compare-reference` compares: the contract, and nothing else.

A target and the reference run the same cell; a correct target answers what the contract defines
exactly as the reference does, but may word its messages differently, split its text into other
deltas, or send request fields the contract does not read. So the comparison covers:

- the answer's wire-record fields (status, error code, output, outcome record, envelope, counters,
  module executions' outputs and error types and codes), with every free-text message compared
  by its shape only (present or absent: the contract leaves its wording open). A counter is
  optional: one that either answer leaves out is unknown, and not compared;
- the stream chunks, with consecutive text deltas of one step read as one and a tool call's
  arguments read as a JSON value (numbers by value: `0.0` is `0`), aligned as the longest
  common subsequence, so one missing or extra chunk is one line
  (`answer.chunks: missing {kind: forced_completion, phase: attempt_started} before step_start #4`);
- each request as the expectations read it (its kind, tools, tool choice, reasoning, system
  fragments, memory recall, `[completion]` metadata, model, temperature, the token cap and the
  turns sent with their reasoning as the wire carries them, and the order of the tool results
  it carries back), aligned the same way.

Each line is `path: reference -> target`, or says what is missing or extra.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Final

from harness.cassettes.diff import structural_diff
from harness.json_body import canonical_numbers, parse_json_body
from harness.llm.models import ToolResultMessage
from harness.scenarios.expect import (
    ObservedRequest,
    reasoning_turns,
    shown_reasoning,
    shown_tool_choice,
)

FREE_TEXT: Final = frozenset({"error_message", "message", "errors"})
"""Members whose wording the contract leaves open (error messages, and a tool result's schema
validation errors, which each JSON Schema validator words its own way): compared by shape, a
message as present or absent, a list of messages by its length."""
VOLATILE: Final = (("envelope", "allocationId"), ("envelope", "durationMs"))
"""Envelope members that differ on every run."""


def answer_differences(reference: dict[str, Any], target: dict[str, Any]) -> list[str]:
    """The contract differences between two answers to one cell (`reference -> target`).
    A counter only one of them reports (`counters` keys are optional) is unknown, never a
    difference: the answers are compared on the counters both report."""
    ours, theirs = _contract_answer(reference), _contract_answer(target)
    _only_counters_both_report(ours, theirs)
    lines = list(
        structural_diff(
            {k: v for k, v in ours.items() if k != "chunks"},
            {k: v for k, v in theirs.items() if k != "chunks"},
            "answer",
        )
    )
    if "chunks" in ours or "chunks" in theirs:
        lines.extend(
            aligned_differences(
                _merged_text(ours.get("chunks") or []),
                _merged_text(theirs.get("chunks") or []),
                "answer.chunks",
                key=_chunk_identity,
                describe=_describe_chunk,
            )
        )
    return lines


def request_differences(
    reference: Sequence[tuple[str, ObservedRequest]],
    target: Sequence[tuple[str, ObservedRequest]],
) -> list[str]:
    """The contract differences between the requests the reference and the target sent."""
    return aligned_differences(
        [request_view(kind, request) for kind, request in reference],
        [request_view(kind, request) for kind, request in target],
        "requests",
        key=lambda view: view["kind"],
        describe=lambda view: f"{{kind: {view['kind']}}}",
    )


def request_view(kind: str, observed: ObservedRequest) -> dict[str, Any]:
    """A request as the expectations read it (the fields a scenario's `expect` can name)."""
    request = observed.request
    sent = observed.sent()
    return {
        "kind": kind,
        "tools": list(request.tool_names()),
        "tool_choice": shown_tool_choice(request),
        "reasoning": shown_reasoning(observed),
        "system_fragments": list(observed.fragments),
        "memory_injected": observed.memory_injected,
        "completion_metadata": observed.completion_metadata,
        "model": request.model,
        "temperature": request.temperature,
        "max_tokens": "unset" if sent.max_tokens is None else sent.max_tokens,
        "reasoning_turns": reasoning_turns(sent),
        # which call each tool result answers, in the order they go back: the model's call order
        "tool_results": [
            message.tool_call_id
            for message in request.messages
            if isinstance(message, ToolResultMessage)
        ],
    }


def aligned_differences(
    reference: Sequence[Any],
    target: Sequence[Any],
    path: str,
    *,
    key: Callable[[Any], Hashable],
    describe: Callable[[Any], str],
) -> list[str]:
    """Two lists aligned as their longest common subsequence of `key`s: a line per item only
    one of them has (`missing ... before <the target's next item> #i`, `extra ... at #i`), and
    the structural differences of each aligned pair."""
    pairs = _lcs([key(item) for item in reference], [key(item) for item in target])
    lines: list[str] = []
    previous_ref, previous_target = 0, 0
    for ref_index, target_index in [*pairs, (len(reference), len(target))]:
        for missing in reference[previous_ref:ref_index]:
            where = (
                f"before {_kind(target[target_index])} #{target_index}"
                if target_index < len(target)
                else "at the end"
            )
            lines.append(f"{path}: missing {describe(missing)} {where}")
        for offset, extra in enumerate(target[previous_target:target_index]):
            lines.append(f"{path}: extra {describe(extra)} at #{previous_target + offset}")
        if ref_index < len(reference) and target_index < len(target):
            lines.extend(
                structural_diff(
                    reference[ref_index], target[target_index], f"{path}[{target_index}]"
                )
            )
        previous_ref, previous_target = ref_index + 1, target_index + 1
    return lines


def _lcs(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[tuple[int, int]]:
    """The index pairs of a longest common subsequence of `a` and `b` (dynamic programming;
    chunk and request lists are short)."""
    lengths = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            lengths[i][j] = (
                lengths[i + 1][j + 1] + 1
                if a[i] == b[j]
                else max(lengths[i + 1][j], lengths[i][j + 1])
            )
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i] == b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif lengths[i + 1][j] >= lengths[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _contract_answer(answer: dict[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(answer))
    for name in ("id", "type"):
        copied.pop(name, None)
    for outer, inner in VOLATILE:
        if isinstance(copied.get(outer), dict):
            copied[outer].pop(inner, None)
    if isinstance(copied.get("chunks"), list):
        copied["chunks"] = [_arguments_by_value(chunk) for chunk in copied["chunks"]]
    shaped: dict[str, Any] = _shapes_of_free_text(copied)
    return shaped


def _only_counters_both_report(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Leave in each answer's `counters` only the counters both answers report (a missing
    `counters` reports none); nothing changes when neither answer has `counters`."""
    if "counters" not in ours and "counters" not in theirs:
        return
    mine, yours = ours.get("counters") or {}, theirs.get("counters") or {}
    if not (isinstance(mine, dict) and isinstance(yours, dict)):
        return  # not the protocol's shape: compared as it is
    ours["counters"] = {name: value for name, value in mine.items() if name in yours}
    theirs["counters"] = {name: value for name, value in yours.items() if name in mine}


def _arguments_by_value(chunk: Any) -> Any:
    """A `tool_call` chunk with its arguments read as JSON, numbers by value: how a runtime
    writes the arguments it parsed (`0.0` or `0`, key order, spaces) is its language's, the
    value is the contract. Arguments that are not JSON (cut off) stay text."""
    if not isinstance(chunk, dict) or chunk.get("kind") != "tool_call":
        return chunk
    arguments = chunk.get("arguments")
    if not isinstance(arguments, str):
        return chunk
    parsed, value = parse_json_body(arguments, numbers=canonical_numbers)
    return {**chunk, "arguments": value} if parsed else chunk


def _shapes_of_free_text(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            name: (_shape(item) if name in FREE_TEXT else _shapes_of_free_text(item))
            for name, item in value.items()
        }
    if isinstance(value, list):
        return [_shapes_of_free_text(item) for item in value]
    return value


def _shape(value: Any) -> Any:
    """A free-text value as the contract sees it: that there is one, not what it says."""
    if isinstance(value, list):
        return [_shape(item) for item in value]
    return "(a message)" if isinstance(value, str) and value.strip() else value


def _merged_text(chunks: list[Any]) -> list[Any]:
    """Consecutive text deltas of one step as one: how a model's text is split is not part of
    the contract, the text of each step is."""
    merged: list[Any] = []
    for chunk in chunks:
        last = merged[-1] if merged else None
        if (
            isinstance(chunk, dict)
            and chunk.get("kind") == "text_delta"
            and isinstance(last, dict)
            and last.get("kind") == "text_delta"
            and last.get("step") == chunk.get("step")
        ):
            merged[-1] = {**last, "text": str(last.get("text", "")) + str(chunk.get("text", ""))}
        else:
            merged.append(chunk)
    return merged


def _chunk_identity(chunk: Any) -> Hashable:
    if not isinstance(chunk, dict):
        return json.dumps(chunk, sort_keys=True)
    return (chunk.get("kind"), chunk.get("phase"), chunk.get("name"))


def _describe_chunk(chunk: Any) -> str:
    if not isinstance(chunk, dict):
        return json.dumps(chunk)
    shown = [f"kind: {chunk.get('kind')}"]
    shown += [f"{name}: {chunk[name]}" for name in ("phase", "name") if chunk.get(name)]
    return "{" + ", ".join(shown) + "}"


def _kind(item: Any) -> str:
    if isinstance(item, dict):
        phase = item.get("phase")
        kind = str(item.get("kind"))
        return f"{kind} ({phase})" if phase and kind == "forced_completion" else kind
    return type(item).__name__
