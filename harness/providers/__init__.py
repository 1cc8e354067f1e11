"""The providers whose wire formats the harness speaks: one `ProviderSpec` each, and the registry
everything else asks.

Each provider is one module of pure data here (`harness.providers.openai`,
`harness.providers.anthropic`, `harness.providers.gemini`), not in its wire adapter
(`harness.llm.openai`): the cassettes, the replay server and the command line need a provider's
facts (paths, headers, variables) without loading its adapter, `harness.cassettes` may not
import `harness.llm` at all, and a run on one provider loads nothing of the others' adapters. So the specs sit in this leaf, which
imports nothing of ours, and each names its adapter's module path for `harness.llm` to import
on first use.

Nothing else names a provider in a table or a comparison: the gateway, the server, routing, the
request key, recording, vcrpy import and the property kit look a provider up here
(`find_provider`, `detect_spec`, `served_endpoints`, `keyed_header_names`). A provider added at
run time with `register_provider` (or, in a test, `registered(spec)`) is accepted everywhere the
built-in ones are; the `Provider` literal names the built-in ones for static types.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, cast, get_args

from harness.providers.anthropic import ANTHROPIC, ANTHROPIC_VERSION
from harness.providers.gemini import GEMINI
from harness.providers.openai import OPENAI
from harness.providers.spec import Endpoint, ProviderSpec, Wire

Provider = Literal["openai", "anthropic", "gemini"]
"""OpenAI Chat Completions (and OpenAI-compatible APIs), Anthropic Messages and Google Gemini
`generateContent`."""
PROVIDERS: Final[tuple[Provider, ...]] = get_args(Provider)
BUILT_IN: Final[Mapping[Provider, ProviderSpec]] = MappingProxyType(
    dict(zip(PROVIDERS, (OPENAI, ANTHROPIC, GEMINI), strict=True))
)
"""The built-in providers' specs by name, in the order of `PROVIDERS`: where a table keyed by
`Provider` (`harness.llm.gateway.DEFAULT_BASE_URLS`) is derived from."""


@dataclass(frozen=True)
class _Registry:
    """The registered specs and what is read from them per request, computed once per change."""

    specs: Mapping[str, ProviderSpec]
    endpoints: Mapping[str, ProviderSpec]
    detected: tuple[tuple[str, ProviderSpec], ...]
    """(path ending, spec), the longest ending first, so the most specific one wins."""
    keyed_headers: frozenset[str]

    @classmethod
    def of(cls, specs: tuple[ProviderSpec, ...]) -> _Registry:
        return cls(
            specs=MappingProxyType({spec.name: spec for spec in specs}),
            endpoints=MappingProxyType(
                {endpoint.path: spec for spec in specs for endpoint in spec.endpoints}
            ),
            detected=tuple(
                sorted(
                    ((path, spec) for spec in specs for path in spec.detected_paths),
                    key=lambda entry: -len(entry[0]),
                )
            ),
            keyed_headers=frozenset(name for spec in specs for name in spec.keyed_headers),
        )


_registry = _Registry.of(tuple(BUILT_IN.values()))
"""Replaced whole on every change, so a reader never sees half of one."""
_changing = threading.Lock()


def provider_specs() -> tuple[ProviderSpec, ...]:
    """Every registered spec: the built-in ones first, then those registered, in order."""
    return tuple(_registry.specs.values())


def provider_names() -> tuple[str, ...]:
    """Every registered provider's name, in the order of `provider_specs`."""
    return tuple(_registry.specs)


def find_provider(name: object) -> ProviderSpec | None:
    """The spec registered under `name`, or None (for anything that is no registered name)."""
    return _registry.specs.get(name) if isinstance(name, str) else None


def as_provider(value: object) -> Provider | None:
    """`value`, typed `Provider`, when it names a registered provider; else None.

    The one place a name is checked at run time rather than by a type checker: a provider
    registered at run time is a `Provider` to every API that takes one.
    """
    return cast(Provider, value) if isinstance(value, str) and value in _registry.specs else None


def unknown_provider(value: object) -> str:
    """The refusal of a name that is no registered provider, listing the ones that are."""
    return (
        f"expected one of {', '.join(_registry.specs)} but got provider={value!r} "
        f"(type={type(value).__name__})"
    )


def detect_spec(path: str) -> ProviderSpec | None:
    """The provider a request path is for, by its ending (`/v1/messages` is Anthropic's,
    `/v1/chat/completions` OpenAI's); the longest ending a spec recognises wins."""
    for ending, spec in _registry.detected:
        if path.endswith(ending):
            return spec
    return None


def detect_provider(path: str) -> Provider | None:
    """The name of the provider a request path is for (see `detect_spec`), or None."""
    spec = detect_spec(path)
    return None if spec is None else provider_of(spec)


def provider_of(spec: ProviderSpec) -> Provider:
    """`spec`'s name, typed `Provider` (see `as_provider`)."""
    return cast(Provider, spec.name)


def served_endpoints() -> Mapping[str, ProviderSpec]:
    """Every endpoint path the replay server serves, and whose it is, in registration order."""
    return _registry.endpoints


def keyed_header_names() -> frozenset[str]:
    """The headers of every registered provider that are part of a request's key."""
    return _registry.keyed_headers


def register_provider(spec: ProviderSpec) -> ProviderSpec:
    """Add `spec`, so every part of the harness accepts its name, paths and headers.

    Refuses (`ValueError`) a name already registered, and an endpoint, a deployment path or a
    detected path another provider already has: one path must mean one provider.
    """
    global _registry
    with _changing:
        _registry = _with(_registry, spec)
    return spec


def _with(current: _Registry, spec: ProviderSpec) -> _Registry:
    if spec.name in current.specs:
        raise ValueError(
            f"expected a name no provider is registered under but got name={spec.name!r}"
        )
    for endpoint in spec.endpoints:
        if endpoint.path in current.endpoints:
            owner = current.endpoints[endpoint.path].name
            raise ValueError(
                f"expected endpoints no other provider serves but got path={endpoint.path!r}, "
                f"served for {owner}"
            )
    deployments = {
        path: owner.name
        for owner in current.specs.values()
        for served in owner.endpoints
        for path in served.deployment_paths
    }
    for endpoint in spec.endpoints:
        for path in endpoint.deployment_paths:
            if path in deployments:
                raise ValueError(
                    f"expected deployment paths no other provider serves but got path={path!r}, "
                    f"served for {deployments[path]}"
                )
    taken = {path: owner.name for path, owner in current.detected}
    for path in spec.detected_paths:
        if path in taken:
            raise ValueError(
                f"expected detected paths no other provider has but got path={path!r}, "
                f"detected as {taken[path]}"
            )
    return _Registry.of((*current.specs.values(), spec))


def unregister_provider(name: str) -> None:
    """Remove the provider registered as `name`; the built-in ones stay (`ValueError`)."""
    global _registry
    if name in BUILT_IN:
        raise ValueError(
            f"expected a provider registered at run time but got name={name!r}, a built-in one"
        )
    with _changing:
        if name not in _registry.specs:
            raise ValueError(unknown_provider(name))
        kept = tuple(spec for spec in _registry.specs.values() if spec.name != name)
        _registry = _Registry.of(kept)


@contextmanager
def registered(spec: ProviderSpec) -> Iterator[ProviderSpec]:
    """`spec` registered for the `with` block, and removed after it, however it ends."""
    register_provider(spec)
    try:
        yield spec
    finally:
        unregister_provider(spec.name)


__all__ = [
    "ANTHROPIC",
    "ANTHROPIC_VERSION",
    "BUILT_IN",
    "GEMINI",
    "OPENAI",
    "PROVIDERS",
    "Endpoint",
    "Provider",
    "ProviderSpec",
    "Wire",
    "as_provider",
    "detect_provider",
    "detect_spec",
    "find_provider",
    "keyed_header_names",
    "provider_names",
    "provider_of",
    "provider_specs",
    "register_provider",
    "registered",
    "served_endpoints",
    "unknown_provider",
    "unregister_provider",
]
