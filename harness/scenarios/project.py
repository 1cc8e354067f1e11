"""The user's project settings for harness: `[tool.harness]` in `pyproject.toml`. Read on every
run, so it loads nothing of the target machinery unless a target is configured."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.targets import TargetSpecError


def configured_target(pyproject: Path) -> str | None:
    """`[tool.harness] target` of `pyproject` (None when the file or the key is absent)."""
    try:
        file = pyproject.open("rb")
    except FileNotFoundError:
        return None
    except OSError as error:
        raise _refusal(f"{pyproject}: cannot read [tool.harness] ({error})") from None
    import tomllib  # only a folder with a pyproject.toml loads the parser

    try:
        with file:
            config = tomllib.load(file)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise _refusal(f"{pyproject}: cannot read [tool.harness] ({error})") from None
    target = config.get("tool", {}).get("harness", {}).get("target")
    if target is not None and not isinstance(target, str):
        raise _refusal(
            f"{pyproject}: [tool.harness] target must be a string such as "
            '"my_pkg.harness_target:run"'
        )
    return target


def _refusal(message: str) -> TargetSpecError:
    from harness.targets import TargetSpecError  # the target machinery loads only on a refusal

    return TargetSpecError(message)
