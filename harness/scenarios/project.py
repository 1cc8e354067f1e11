"""The user's project settings for harness: `[tool.harness]` in `pyproject.toml`. Read on every
run, so it loads nothing of the target machinery unless a target is configured."""

from __future__ import annotations

import tomllib
from pathlib import Path


def configured_target(pyproject: Path) -> str | None:
    """`[tool.harness] target` of `pyproject` (None when the file or the key is absent)."""
    try:
        with pyproject.open("rb") as file:
            config = tomllib.load(file)
    except FileNotFoundError:
        return None
    except (OSError, tomllib.TOMLDecodeError) as error:
        from harness.targets import TargetSpecError

        raise TargetSpecError(f"{pyproject}: cannot read [tool.harness] ({error})") from None
    target = config.get("tool", {}).get("harness", {}).get("target")
    if target is not None and not isinstance(target, str):
        from harness.targets import TargetSpecError

        raise TargetSpecError(
            f"{pyproject}: [tool.harness] target must be a string such as "
            '"my_pkg.harness_target:run"'
        )
    return target
