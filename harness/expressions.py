"""Resolve workflow expressions (`${{ ... }}`) against agent outputs.

Supported forms, whole-value or embedded in a string:

- `${{ job.outputs.NAME }}`: a declared output of the job's own `xema/agent` action;
- `${{ needs.JOB.outputs.NAME }}`: a value an upstream job projected in its `outputs:`;
- `${{ needs.JOB.outputs.KEY.NAME }}`: one iteration of a matrix job, keyed by its `keyBy`;
- `${{ matrix.AS.FIELD }}`: the current matrix item.

Any further `.field`, `['field']` or `[index]` reads into the value. Reading an output that is
not declared raises `OutputNotDeclaredError` naming it; nothing here ever resolves to null by
default.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import JsonValue

from harness.errors import ExpressionError, OutputNotDeclaredError
from harness.protocol.envelope import AgentOutputEnvelope

_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_WHOLE_EXPRESSION = re.compile(r"^\s*\$\{\{\s*((?:(?!\}\}).)*?)\s*\}\}\s*$")
_SEGMENT = re.compile(
    r"""\.?(?P<name>[A-Za-z_][\w-]*)|\[\s*'(?P<single>[^']*)'\s*\]|\[\s*"(?P<double>[^"]*)"\s*\]"""
    r"""|\[\s*(?P<index>\d+)\s*\]"""
)


@dataclass(frozen=True)
class JobOutputs:
    """The values a finished job projected through its `outputs:` block."""

    job: str
    outputs: Mapping[str, JsonValue]


@dataclass(frozen=True)
class MatrixJobOutputs:
    """The projected outputs of every iteration of a matrix job, keyed by `key_by`."""

    job: str
    key_by: str
    iterations: Mapping[str, Mapping[str, JsonValue]]

    @classmethod
    def from_iterations(
        cls,
        job: str,
        key_by: str,
        items: Sequence[Mapping[str, JsonValue]],
        outputs: Sequence[Mapping[str, JsonValue]],
    ) -> MatrixJobOutputs:
        """Key each iteration's outputs by its item's `key_by` field.

        Refuses an item without that field, a non-string key, and two items with the same key:
        each would make some iteration unreachable.
        """
        if len(items) != len(outputs):
            raise ExpressionError(
                f"matrix job {job!r} has {len(items)} items but {len(outputs)} iteration outputs"
            )
        iterations: dict[str, Mapping[str, JsonValue]] = {}
        for position, (item, item_outputs) in enumerate(zip(items, outputs, strict=True)):
            key = item.get(key_by)
            if not isinstance(key, str) or not key:
                raise ExpressionError(
                    f"matrix job {job!r}: item {position} has no string field {key_by!r} "
                    f"(keyBy); expected a non-empty string but got {type(key).__name__}"
                )
            if key in iterations:
                raise ExpressionError(
                    f"matrix job {job!r}: two items share the keyBy value {key!r}; keys must be "
                    "unique"
                )
            iterations[key] = item_outputs
        return cls(job=job, key_by=key_by, iterations=iterations)


@dataclass(frozen=True)
class ExpressionContext:
    """What expressions can read: the job's own action outputs, upstream jobs, the matrix item."""

    job: AgentOutputEnvelope | None = None
    needs: Mapping[str, JobOutputs | MatrixJobOutputs] = field(default_factory=dict)
    matrix: Mapping[str, JsonValue] = field(default_factory=dict)


def resolve(template: JsonValue, context: ExpressionContext) -> JsonValue:
    """Resolve every expression in `template`, recursing into objects and arrays.

    A string that is exactly one expression becomes the value itself (an object stays an
    object); expressions embedded in longer strings are replaced by their text (JSON for
    non-strings).
    """
    if isinstance(template, str):
        whole = _WHOLE_EXPRESSION.match(template)
        if whole is not None:
            return evaluate(whole.group(1), context)
        return _EXPRESSION.sub(lambda m: _as_text(evaluate(m.group(1), context)), template)
    if isinstance(template, list):
        return [resolve(item, context) for item in template]
    if isinstance(template, dict):
        return {key: resolve(value, context) for key, value in template.items()}
    return template


def project_outputs(
    declared: Mapping[str, str], context: ExpressionContext
) -> dict[str, JsonValue]:
    """Evaluate a job's `outputs:` block (name -> expression) into the values it projects."""
    return {name: resolve(expression, context) for name, expression in declared.items()}


def evaluate(expression: str, context: ExpressionContext) -> JsonValue:
    """Evaluate one path expression such as `needs.draft.outputs.spec`."""
    path = _parse_path(expression)
    root = path[0]
    if root == "job":
        _expect(path, 1, "outputs", expression)
        name = _name_at(path, 2, expression)
        if context.job is None:
            raise ExpressionError(f"{expression!r} reads job.outputs outside a job's outputs block")
        return _read_into(context.job.output(str(name)), path[3:], expression)
    if root == "needs":
        job = str(_name_at(path, 1, expression))
        _expect(path, 2, "outputs", expression)
        upstream = context.needs.get(job)
        if upstream is None:
            raise ExpressionError(
                f"{expression!r} reads job {job!r}, which is not in needs; available: "
                f"{', '.join(sorted(context.needs)) or '(none)'}"
            )
        if isinstance(upstream, MatrixJobOutputs):
            return _read_matrix(upstream, path[3:], expression)
        name = str(_name_at(path, 3, expression))
        if name not in upstream.outputs:
            raise OutputNotDeclaredError(name, f"job {job!r}", sorted(upstream.outputs))
        return _read_into(upstream.outputs[name], path[4:], expression)
    if root == "matrix":
        return _read_into(dict(context.matrix), path[1:], expression)
    raise ExpressionError(
        f"{expression!r} starts with {root!r}; expected one of job, needs, matrix"
    )


def _read_matrix(
    upstream: MatrixJobOutputs, rest: Sequence[str | int], expression: str
) -> JsonValue:
    if not rest:
        return {key: dict(outputs) for key, outputs in upstream.iterations.items()}
    key = str(rest[0])
    outputs = upstream.iterations.get(key)
    if outputs is None:
        raise ExpressionError(
            f"{expression!r}: matrix job {upstream.job!r} has no iteration with "
            f"{upstream.key_by} = {key!r}; keys: {', '.join(sorted(upstream.iterations))}"
        )
    if len(rest) == 1:
        return dict(outputs)
    name = str(rest[1])
    if name not in outputs:
        raise OutputNotDeclaredError(
            name, f"iteration {key!r} of matrix job {upstream.job!r}", sorted(outputs)
        )
    return _read_into(outputs[name], rest[2:], expression)


def _read_into(value: JsonValue, rest: Sequence[str | int], expression: str) -> JsonValue:
    for segment in rest:
        if isinstance(value, dict) and isinstance(segment, str) and segment in value:
            value = value[segment]
        elif isinstance(value, list) and isinstance(segment, int) and segment < len(value):
            value = value[segment]
        else:
            raise ExpressionError(
                f"{expression!r}: cannot read {segment!r} from a value of type "
                f"{type(value).__name__}"
            )
    return value


def _parse_path(expression: str) -> list[str | int]:
    segments: list[str | int] = []
    position = 0
    while position < len(expression):
        match = _SEGMENT.match(expression, position)
        if match is None or (position == 0 and expression.startswith(".")):
            raise ExpressionError(
                f"cannot parse expression {expression!r} at character {position}; expected a "
                "dotted path such as needs.draft.outputs.spec"
            )
        if match.group("index") is not None:
            segments.append(int(match.group("index")))
        else:
            segments.append(
                next(g for g in match.group("name", "single", "double") if g is not None)
            )
        position = match.end()
    if not segments:
        raise ExpressionError("empty expression ${{ }}; expected a path such as job.outputs.X")
    return segments


def _name_at(path: Sequence[str | int], index: int, expression: str) -> str | int:
    if index >= len(path):
        raise ExpressionError(f"{expression!r} is incomplete: it names no output")
    return path[index]


def _expect(path: Sequence[str | int], index: int, word: str, expression: str) -> None:
    if index >= len(path) or path[index] != word:
        raise ExpressionError(f"{expression!r}: expected {word!r} at segment {index + 1}")


def _as_text(value: JsonValue) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
