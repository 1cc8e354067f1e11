"""The user's project settings for harness: `[tool.harness]` in `pyproject.toml`. Read on every
run, so it loads nothing of the target machinery unless a target is configured."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.targets import TargetSpecError


def configured_target(pyproject: Path) -> str | None:
    """`[tool.harness] target` of `pyproject` (None when the file or the key is absent)."""
    target = _harness_table(pyproject).get("target")
    if target is not None and not isinstance(target, str):
        raise _refusal(
            f"{pyproject}: [tool.harness] target must be a string such as "
            '"my_pkg.harness_target:run"'
        )
    return target


def configured_target_env(pyproject: Path) -> tuple[str, ...]:
    """`[tool.harness] target-env` of `pyproject`: the variables a command target gets beyond the
    minimal environment, as `--target-env` takes them (`NAME` or `NAME=VALUE`); empty when the
    file or the key is absent. A malformed entry, or a `NAME` not set here, is refused naming
    it, never its value."""
    entries = _harness_table(pyproject).get("target-env")
    if entries is None:
        return ()
    if not isinstance(entries, list) or not all(isinstance(entry, str) for entry in entries):
        raise _refusal(
            f"{pyproject}: [tool.harness] target-env must be a list of strings such as "
            '["NODE_OPTIONS", "MY_FLAG=1"]'
        )
    from harness.targets.environment import target_environment

    target_environment(entries, origin=f"{pyproject}: [tool.harness] target-env")
    return tuple(entries)


def _harness_table(pyproject: Path) -> dict[str, Any]:
    """`[tool.harness]` of `pyproject` (empty when the file or the table is absent)."""
    try:
        file = pyproject.open("rb")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise _refusal(f"{pyproject}: cannot read [tool.harness] ({error})") from None
    import tomllib  # only a folder with a pyproject.toml loads the parser

    try:
        with file:
            config = tomllib.load(file)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise _refusal(f"{pyproject}: cannot read [tool.harness] ({error})") from None
    table = config.get("tool", {}).get("harness", {})
    if not isinstance(table, dict):
        raise _refusal(f"{pyproject}: [tool.harness] must be a table")
    return table


def _refusal(message: str) -> TargetSpecError:
    from harness.targets import TargetSpecError  # the target machinery loads only on a refusal

    return TargetSpecError(message)
