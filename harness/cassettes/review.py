"""What a human runs on cassette files: verify, show, diff and stats.

Each function returns data (the CLI prints it), so the same answers are available to scripts.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cassettes.cassette import (
    Cassette,
    Interaction,
    cassette_exists,
    find_tampering,
    parse_cassette,
    read_cassette,
    signing_key_from_environment,
)
from harness.cassettes.diff import structural_diff
from harness.cassettes.sharing import is_transient
from harness.errors import CassetteFormatError


@dataclass(frozen=True)
class VerifyProblem:
    """One file-level or interaction-level verification failure."""

    path: Path
    problem: str


def cassette_files(paths: Iterable[Path]) -> list[Path]:
    """The cassette files under `paths` (regular `*.json` files in folders, files as given), sorted.

    A given path that is neither a folder nor a regular file (missing, a FIFO, a device)
    raises `CassetteFormatError` naming it.
    """
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(item for item in path.rglob("*.json") if item.is_file())
        elif cassette_exists(path):
            found.append(path)
        else:
            raise CassetteFormatError(f"cassette {path} does not exist")
    return sorted(set(found))


def verify(paths: Sequence[Path], signing_key: str | None = None) -> list[VerifyProblem]:
    """Every problem of every cassette under `paths`, in file order: content that is not a
    cassette (the first problem `Cassette.load` would raise), each digest and occurrence that
    does not verify, and the signature. A file has a problem exactly when `Cassette.load` with
    the same key refuses it.

    With a signing key (or `HARNESS_CASSETTE_KEY`), an unsigned cassette is reported as
    unsigned. A path that cannot be read at all (missing, not a regular file, unreadable, over
    the size limit) raises `CassetteFormatError` instead: there is nothing to verify.
    """
    key = signing_key or signing_key_from_environment()
    problems: list[VerifyProblem] = []
    for path in cassette_files(paths):
        raw = read_cassette(path)
        try:
            cassette = parse_cassette(path, raw)
        except CassetteFormatError as error:
            problems.append(VerifyProblem(path, str(error)))
            continue
        problems.extend(VerifyProblem(path, problem) for problem in find_tampering(cassette, key))
    return problems


@dataclass(frozen=True)
class OrderDependence:
    """Identical requests of one cassette that hold different answers: which answer a client
    gets depends on the order requests arrive in, so parallel replay is not reproducible."""

    path: Path
    method: str
    url: str
    key: str
    occurrences: int
    answers: int
    difference: str
    """The first difference between the first two different answers (`$.path: a -> b`)."""

    def __str__(self) -> str:
        return (
            f"warning: {self.path}: {self.method} {self.url} (key {self.key[:19]}..., "
            f"{self.occurrences} occurrences) holds {self.answers} different answers, dealt out "
            f"in the order identical requests arrive: {self.difference}. Re-record it with "
            "identical requests shared (the default) so every identical request gets one answer"
        )


def order_dependent(paths: Sequence[Path]) -> list[OrderDependence]:
    """Every request of the readable cassettes under `paths` recorded more than once with
    different answers (answers an SDK retries, 408, 409, 429 and 5xx, are left out: a retry is
    meant to get the next one)."""
    found: list[OrderDependence] = []
    for path in cassette_files(paths):
        try:
            cassette = parse_cassette(path, read_cassette(path))
        except CassetteFormatError:
            continue  # reported by verify
        for key, indexes in cassette.by_key.items():
            if len(indexes) < 2:
                continue
            answers: list[Interaction] = []
            for index in indexes:
                interaction = cassette.interactions[index]
                if is_transient(interaction.response.status):
                    continue
                if all(_answer(interaction) != _answer(other) for other in answers):
                    answers.append(interaction)
            if len(answers) > 1:
                first, second = answers[0], answers[1]
                lines = list(structural_diff(_answer(first), _answer(second)))
                found.append(
                    OrderDependence(
                        path,
                        first.request.method,
                        first.request.url,
                        key,
                        len(indexes),
                        len(answers),
                        lines[0] if lines else "the answers differ",
                    )
                )
    return found


def _answer(interaction: Interaction) -> Any:
    response = interaction.response
    if response.events is not None:
        return [event.data for event in response.events]
    if response.body is not None:
        return response.body
    return response.body_bytes().decode("utf-8", "replace")


@dataclass(frozen=True)
class InteractionRow:
    index: int
    method: str
    path: str
    key: str
    occurrence: int
    status: int
    body_kind: str


def show(path: Path) -> list[InteractionRow]:
    """One row per interaction, in file order."""
    cassette = Cassette.load(path, allow_tampered=True)
    return [
        InteractionRow(
            index=index,
            method=item.request.method,
            path=item.request.url,
            key=item.key,
            occurrence=item.occurrence,
            status=item.response.status,
            body_kind=_body_kind(item),
        )
        for index, item in enumerate(cassette.interactions)
    ]


@dataclass(frozen=True)
class CassetteStats:
    path: Path
    interactions: int
    unique_keys: int
    repeated_keys: int
    streamed: int
    size_bytes: int
    provider: str | None
    by_endpoint: dict[str, int]
    by_status: dict[int, int]


def stats(path: Path) -> CassetteStats:
    cassette = Cassette.load(path, allow_tampered=True)
    items = cassette.interactions
    return CassetteStats(
        path=path,
        interactions=len(items),
        unique_keys=len(cassette.by_key),
        repeated_keys=sum(1 for group in cassette.by_key.values() if len(group) > 1),
        streamed=sum(1 for item in items if item.response.events is not None),
        size_bytes=os.path.getsize(path),
        provider=cassette.metadata.provider,
        by_endpoint=dict(Counter(f"{i.request.method} {i.request.path}" for i in items)),
        by_status=dict(Counter(i.response.status for i in items)),
    )


@dataclass(frozen=True)
class CassetteDiff:
    """Interactions of B compared with A, matched by (key, occurrence)."""

    added: list[Interaction]
    removed: list[Interaction]
    changed: list[tuple[Interaction, Interaction, list[str]]]

    @property
    def identical(self) -> bool:
        return not (self.added or self.removed or self.changed)


def diff(a: Path, b: Path) -> CassetteDiff:
    """What changed from cassette `a` to cassette `b`: new, removed and changed answers."""
    old = {(i.key, i.occurrence): i for i in Cassette.load(a, allow_tampered=True).interactions}
    new = {(i.key, i.occurrence): i for i in Cassette.load(b, allow_tampered=True).interactions}
    changed: list[tuple[Interaction, Interaction, list[str]]] = []
    for slot in old.keys() & new.keys():
        before, after = old[slot], new[slot]
        if before.digest != after.digest:
            lines = list(
                structural_diff(
                    before.response.model_dump(mode="json", exclude_none=True),
                    after.response.model_dump(mode="json", exclude_none=True),
                    "$.response",
                )
            )
            changed.append((before, after, lines))
    return CassetteDiff(
        added=[new[slot] for slot in new.keys() - old.keys()],
        removed=[old[slot] for slot in old.keys() - new.keys()],
        changed=sorted(changed, key=lambda item: (item[0].key, item[0].occurrence)),
    )


def _body_kind(item: Interaction) -> str:
    response = item.response
    if response.events is not None:
        return f"sse ({len(response.events)} events)"
    if response.body is not None:
        return "json"
    if response.body_text is not None:
        return "text"
    return "binary" if response.body_base64 is not None else "empty"
