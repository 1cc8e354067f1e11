"""Terminal validation of structured output: the schema, then the Agent Completion module."""

from __future__ import annotations

import functools
import json
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import JsonValue

from harness.errors import IllegalArgumentException
from harness.modules.completion import AgentCompletionModule


class InvalidOutput(Exception):
    """The output does not satisfy the schema or the completion module; `problems` say where."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def output_validator(schema: dict[str, JsonValue]) -> Draft202012Validator:
    """A JSON Schema 2020-12 validator; an invalid schema is an `IllegalArgumentException`.

    Checking a schema against the meta-schema costs more than a whole run, so validators are
    built once per distinct schema.
    """
    return _validator(json.dumps(schema, sort_keys=True, separators=(",", ":")))


@functools.lru_cache(maxsize=256)
def _validator(canonical_schema: str) -> Draft202012Validator:
    schema = json.loads(canonical_schema)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        raise IllegalArgumentException(
            f"output_schema is not a valid JSON Schema (2020-12): {error.message}"
        ) from None
    return Draft202012Validator(schema)


def validate_output(validator: Draft202012Validator, arguments: str) -> JsonValue:
    """Parse `__finish__` arguments and validate them; raise `InvalidOutput` naming the paths.

    The accepted output also passes through `AgentCompletionModule` (as its canonical JSON), so
    an output the terminal module would refuse is refused here, while the model can still fix it.
    """
    try:
        value: Any = json.loads(arguments or "{}")
    except ValueError:
        raise InvalidOutput(["the arguments are not valid JSON"]) from None
    problems = [
        f"{'/' + '/'.join(str(p) for p in error.absolute_path)}: {error.message}"
        for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    ]
    if problems:
        raise InvalidOutput(problems[:10])
    try:
        AgentCompletionModule().execute(
            {"agentFinalAnswer": json.dumps(value, ensure_ascii=False, sort_keys=True)}
        )
    except IllegalArgumentException as error:
        raise InvalidOutput([str(error)]) from None
    output: JsonValue = value
    return output
