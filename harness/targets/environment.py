"""The environment a command target runs in: what a program needs to start, never the harness's
secrets.

A `--target-cmd` gets `PATH`, `HOME`, `TMPDIR`, the locale (`LANG`, `LC_*`, `TZ`) and a
placeholder API key per provider (the official SDKs refuse to start without one; the replay
server never forwards a client's key), plus what the user passes with `--target-env`
(`[tool.harness] target-env`): `NAME` copies that variable from the harness's environment,
`NAME=VALUE` sets it. Everything else (API keys, a store URL with its password) stays out: the
cell message carries all a target needs, the base URLs included.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Final

from harness.providers import BUILT_IN, provider_specs
from harness.targets.errors import TargetSpecError

KEPT: Final = ("PATH", "HOME", "TMPDIR", "LANG", "TZ")
"""Copied from the harness's environment when set: finding programs, a home and a temporary
folder, the locale and the time zone."""
KEPT_PREFIXES: Final = ("LC_",)
PLACEHOLDER_KEY: Final = "harness-placeholder"
PLACEHOLDER_KEYS: Final = tuple(spec.api_key_variable for spec in BUILT_IN.values())
"""Set to `PLACEHOLDER_KEY` (every registered provider's `api_key_variable`; these are the
built-in ones), so an SDK that insists on a key starts; the real ones never reach a target unless
passed with `--target-env`."""
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHOWN: Final = 60


def target_environment(
    passed: Sequence[str] = (),
    source: Mapping[str, str] | None = None,
    *,
    origin: str = "--target-env",
) -> dict[str, str]:
    """The environment of a command target: the kept variables of `source` (default: this
    process's environment), the placeholder keys, then each of `passed` (`NAME` or `NAME=VALUE`;
    a later one wins). `TargetSpecError` for an entry that is not one of those, or a `NAME` that
    `source` does not set; the message names the entry (`origin`, the variable's name), never a
    value."""
    environ = os.environ if source is None else source
    kept = {
        name: value
        for name, value in environ.items()
        if name in KEPT or name.startswith(KEPT_PREFIXES)
    }
    kept.update(
        dict.fromkeys((spec.api_key_variable for spec in provider_specs()), PLACEHOLDER_KEY)
    )
    for entry in passed:
        name, assigns, value = entry.partition("=")
        if not _NAME.fullmatch(name):
            raise _refusal(
                f"{origin} {_shown(name)!r}: expected NAME (copied from the harness's environment) "
                "or NAME=VALUE, NAME made of letters, digits and _"
            )
        if assigns:
            kept[name] = value
        elif name in environ:
            kept[name] = environ[name]
        else:
            raise _refusal(
                f"{origin} {name}: {name} is not set in the harness's environment; set it, or "
                f"give {name}=VALUE"
            )
    return kept


def _shown(name: str) -> str:
    return name if len(name) <= _SHOWN else name[:_SHOWN] + "..."


def _refusal(message: str) -> TargetSpecError:
    return TargetSpecError(message)
