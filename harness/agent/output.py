"""Terminal validation of structured output: the schema, then the Agent Completion module.

`jsonschema` and `referencing` load the first time a schema is checked, so a run whose agents
have no output schema never pays for them.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any, Final

from pydantic import JsonValue

from harness.errors import IllegalArgumentException
from harness.json_body import strict_json
from harness.modules.completion import AgentCompletionModule

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.protocols import Validator
    from referencing import Registry, Resource
    from referencing._core import Resolver  # documented, but exported only from here


class InvalidOutput(Exception):
    """The output does not satisfy the schema or the completion module; `problems` say where."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def output_validator(schema: dict[str, JsonValue]) -> Draft202012Validator:
    """A JSON Schema 2020-12 validator; an invalid schema is an `IllegalArgumentException`.

    Refused too: a `$ref` (or `$dynamicRef`) that points outside the schema (nothing is ever
    fetched: a replayed run must not reach the network, so such a schema could only fail later),
    one that points to nothing, and a chain of them that returns to where it started without
    reading any part of the output (validation would never end). The validator's registry
    refuses to retrieve anything as well.

    Checking a schema against the meta-schema costs more than a whole run, so validators are
    built once per distinct schema.
    """
    return _validator(json.dumps(schema, sort_keys=True, separators=(",", ":")))


@functools.lru_cache(maxsize=256)
def _validator(canonical_schema: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    schema = json.loads(canonical_schema)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        raise IllegalArgumentException(
            f"output_schema is not a valid JSON Schema (2020-12): {error.message}"
        ) from None
    _check_references(schema)
    return Draft202012Validator(schema, registry=_offline())


class _NotFetched(Exception):
    """What the registry's retrieve function raises: nothing outside the schema is fetched."""


def _refuse_to_fetch(uri: str) -> Resource[Any]:
    raise _NotFetched(uri)


@functools.cache
def _offline() -> Registry[Any]:
    """The registry every validator resolves references in: it retrieves nothing."""
    from referencing import Registry

    return Registry(retrieve=_refuse_to_fetch)  # type: ignore[call-arg]  # mypy does not read attrs' field alias


_REFERENCES: Final = ("$ref", "$dynamicRef")
_DATA: Final = frozenset({"const", "default", "enum", "examples"})
"""Keywords whose values are instances, not schemas: a `$ref` key in them is data."""
_NAMED: Final = frozenset(
    {"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"}
)
"""Keywords whose values map names to schemas."""
_IN_PLACE: Final = frozenset(
    {"allOf", "anyOf", "dependentSchemas", "else", "if", "not", "oneOf", "then"}
)
"""Keywords that apply subschemas to the same instance (a cycle through them never ends)."""


def _check_references(schema: object) -> None:
    """Resolve every reference in `schema` offline, and refuse reference cycles that never
    descend into the instance (see `output_validator`)."""
    from referencing.jsonschema import DRAFT202012

    in_place: dict[int, list[int]] = {}
    pending: list[tuple[object, Resolver[Any]]] = [
        (schema, _offline().resolver_with_root(DRAFT202012.create_resource(schema)))
    ]
    while pending:
        node, resolver = pending.pop()
        if isinstance(node, list):
            pending.extend((item, resolver) for item in node)
        if not isinstance(node, dict):
            continue
        resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
        targets = in_place.setdefault(id(node), [])
        for keyword in _REFERENCES:
            reference = node.get(keyword)
            if isinstance(reference, str):
                targets.append(id(_resolve(resolver, keyword, reference)))
        for keyword, value in node.items():
            if keyword in _DATA:
                continue
            children = (
                list(value.values()) if keyword in _NAMED and isinstance(value, dict) else [value]
            )
            if keyword in _IN_PLACE:
                flat = [
                    item
                    for child in children
                    for item in (child if isinstance(child, list) else [child])
                ]
                targets.extend(id(item) for item in flat if isinstance(item, dict))
            pending.extend((child, resolver) for child in children)
    if _has_cycle(in_place):
        raise IllegalArgumentException(
            "output_schema refers back to itself without reading any part of the output (a $ref "
            "cycle through allOf, anyOf, oneOf, not, if/then/else or $ref alone), so validation "
            "would never end; put the $ref under properties or items"
        )


def _resolve(resolver: Resolver[Any], keyword: str, reference: str) -> object:
    from referencing.exceptions import Unresolvable, Unretrievable

    try:
        return resolver.lookup(reference).contents
    except ValueError:  # urllib's parser refuses some texts (`http://[`) outright
        raise IllegalArgumentException(
            f"output_schema: {keyword} {reference!r} is not a URI reference"
        ) from None
    except Unresolvable as error:
        if isinstance(error.__cause__, Unretrievable):
            raise IllegalArgumentException(
                f"output_schema: remote {keyword} {reference!r} is not fetched (a replayed run "
                "never reaches the network); inline the schema under $defs and refer to it as "
                "'#/$defs/<name>'"
            ) from None
        raise IllegalArgumentException(
            f"output_schema: {keyword} {reference!r} points to nothing in the schema"
        ) from None


def _has_cycle(edges: dict[int, list[int]]) -> bool:
    import graphlib

    try:
        graphlib.TopologicalSorter(edges).prepare()
    except graphlib.CycleError:
        return True
    return False


def validate_output(validator: Validator, arguments: str) -> JsonValue:
    """Parse `__finish__` arguments and validate them; raise `InvalidOutput` naming the paths.

    The accepted output also passes through `AgentCompletionModule` (as its canonical JSON), so
    an output the terminal module would refuse is refused here, while the model can still fix it.
    Output nested too deeply to parse or check is refused the same way.
    """
    from referencing.exceptions import Unresolvable  # loaded with the validator

    try:
        return _validated(validator, arguments)
    except RecursionError:  # json and jsonschema recurse once per level of nesting
        raise InvalidOutput(["the output is nested too deeply to check"]) from None
    except Unresolvable as error:  # `output_validator` resolved every reference; defence only
        raise IllegalArgumentException(
            f"output_schema: $ref {error.ref!r} cannot be resolved offline"
        ) from None


def _validated(validator: Validator, arguments: str) -> JsonValue:
    try:
        value: Any = strict_json(arguments or "{}")
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
