"""The model configuration every wire record shares."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from pydantic.config import ExtraValues


class WireModel(BaseModel):
    """A frozen record that refuses unknown keys, so a stale payload fails at the boundary.

    Validation is pydantic's lax mode (which never turns numbers into strings); fields where lax
    coercion would hide a bug are declared `Strict*` on their own.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    def evolve(self, **changes: object) -> Self:
        """A copy with `changes`, each validated as its field is when the record is built.

        A name the record has no field for, or a value its field refuses (a negative step, a
        status it does not know), raises pydantic's `ValidationError` naming the field; the
        record itself is left as it was. Only the changed fields are validated, so evolving a
        long run's state costs what its changes cost. (`model_copy(update=...)` validates
        nothing: it takes a misspelt name or a negative count silently.)
        """
        evolved = self.model_copy()
        for name, value in changes.items():
            self.__pydantic_validator__.validate_assignment(evolved, name, value)
        return evolved


class CamelWireModel(WireModel):
    """A wire record spelled camelCase on the wire and snake_case in Python.

    Both spellings validate, so Python callers can build it by attribute name; it always
    serialises by alias.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    @classmethod
    def model_validate_json(
        cls,
        json_data: str | bytes | bytearray,
        *,
        strict: bool | None = None,
        extra: ExtraValues | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        """Decode the wire form: JSON spells keys camelCase only, so a snake_case key is unknown
        (pass `by_name=True` to accept both)."""
        return super().model_validate_json(
            json_data,
            strict=strict,
            extra=extra,
            context=context,
            by_alias=by_alias,
            by_name=False if by_name is None else by_name,
        )
