"""What the clients of `harness serve` played of each cassette: the listing of
`GET /_harness/cassettes`, and the interactions no client ever played, printed at shutdown (the
stale fixtures a suite no longer uses).

A cassette is named by its path inside the cassettes folder, without `.json`: the name a client
puts in its URL. Nothing here holds where the folder is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from harness.cassettes import CassetteTransport, RecordMode


class ServedCassette(BaseModel):
    """A cassette the server has open, for `/c/<name>` (`session` is None) or for a session."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    provider: str | None
    record_mode: RecordMode
    session: str | None
    recorded: int
    """The interactions it holds: those it was opened with, and those recorded into it since."""
    played: int
    """Of those it was opened with, how many have been replayed."""
    unplayed: int
    """Of those it was opened with, how many have not been replayed (yet)."""


class CassetteListing(BaseModel):
    """The body of `GET /_harness/cassettes`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cassettes: list[ServedCassette]


def cassette_name(path: Path, root: Path) -> str | None:
    """`path`'s name inside the cassettes folder `root` (`agent/weather` for
    `<root>/agent/weather.json`); None for a file outside it (a session a caller attached
    in-process may play any file)."""
    try:
        inside = path.relative_to(root)
    except ValueError:
        return None
    return inside.as_posix().removesuffix(".json")


def _unplayed_indexes(transport: CassetteTransport) -> set[int]:
    # The queues, not `transport.unplayed`: that reads every unplayed interaction again from the
    # file, where a count needs their indexes alone.
    return {index for queue in list(transport._queues.values()) for index in list(queue)}


def served_cassette(
    name: str, transport: CassetteTransport, session: str | None = None
) -> ServedCassette:
    opened_with = len(transport.cassette.entries)
    unplayed = len(_unplayed_indexes(transport))
    return ServedCassette(
        name=name,
        provider=transport.provider or transport.cassette.metadata.provider,
        record_mode=transport.mode,
        session=session,
        recorded=opened_with + len(transport.recorded),
        played=opened_with - unplayed,
        unplayed=unplayed,
    )


@dataclass
class _Usage:
    held: set[tuple[str, int]] = field(default_factory=set)
    """Each interaction (key and occurrence) a transport of this cassette was opened with."""
    played: set[tuple[str, int]] = field(default_factory=set)
    recorded_keys: set[str] = field(default_factory=set)
    """Requests the server recorded into it: used, whether or not a later transport played
    them."""


@dataclass
class CassetteUsage:
    """Every interaction any client of the server played, per cassette, over the server's life:
    a cassette closed as idle and opened again, and each session playing it from its start, add
    to one tally, so an interaction counts as played if anyone played it."""

    _by_name: dict[str, _Usage] = field(default_factory=dict)

    def add(self, name: str, transport: CassetteTransport) -> None:
        """Count what `transport` (of the cassette `name`) played; called as it closes."""
        usage = self._by_name.setdefault(name, _Usage())
        entries = transport.cassette.entries
        unplayed = _unplayed_indexes(transport)
        usage.held.update((entry.key, entry.occurrence) for entry in entries)
        usage.played.update(
            (entry.key, entry.occurrence)
            for index, entry in enumerate(entries)
            if index not in unplayed
        )
        usage.recorded_keys.update(interaction.key for interaction in transport.recorded)

    def never_played(self) -> list[str]:
        """One line per cassette with interactions no client played, by name; none when every
        interaction was played."""
        lines = []
        for name, usage in sorted(self._by_name.items()):
            never = [
                interaction
                for interaction in usage.held - usage.played
                if interaction[0] not in usage.recorded_keys
            ]
            if never:
                held = len(usage.held)
                noun = "interaction" if held == 1 else "interactions"
                lines.append(f"cassette {name}: {len(never)} of {held} {noun} never played")
        return lines
