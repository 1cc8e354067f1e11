"""The user's project settings for harness: `[tool.harness]` in `pyproject.toml`. Read on every
run, so it loads nothing of the target machinery unless a target is configured."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn


def configured_target(pyproject: Path) -> str | None:
    """`[tool.harness] target` of `pyproject` (None when the file or the key is absent)."""
    try:
        file = pyproject.open("rb")
    except FileNotFoundError:
        return None
    except OSError as error:
        return _unreadable(pyproject, error)
    import tomllib  # only a folder with a pyproject.toml loads the parser

    try:
        with file:
            config = tomllib.load(file)
    except (OSError, tomllib.TOMLDecodeError) as error:
        return _unreadable(pyproject, error)
    target = config.get("tool", {}).get("harness", {}).get("target")
    if target is not None and not isinstance(target, str):
        from harness.targets import TargetSpecError

        raise TargetSpecError(
            f"{pyproject}: [tool.harness] target must be a string such as "
            '"my_pkg.harness_target:run"'
        )
    return target


def _unreadable(pyproject: Path, error: Exception) -> NoReturn:
    from harness.targets import TargetSpecError

    raise TargetSpecError(f"{pyproject}: cannot read [tool.harness] ({error})") from None
