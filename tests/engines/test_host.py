"""The harness's side of a cell on a real engine: what it serves a worker, what it refuses, and
the findings it reports (a unit's model call sent twice, a run resumed from another state)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx2
import pytest

from harness.agent.tools import approve_all
from harness.engines.host import (
    TOKEN_HEADER,
    CellHost,
    EngineHostError,
    HostClient,
    HostedCell,
    HostedCompleter,
)
from harness.engines.run import _findings
from harness.errors import ToolChoiceUnsupportedError
from harness.llm.models import LlmRequest, LlmResponse, UserMessage
from harness.protocol.outcome import EndTurn
from harness.stores.memory import MemoryStore

REQUEST = LlmRequest(model="m", messages=(UserMessage(content="hi"),))


class Answering:
    def __init__(self) -> None:
        self.requests: list[LlmRequest] = []

    def complete(self, request: LlmRequest) -> LlmResponse:
        self.requests.append(request)
        return LlmResponse(text="hello", stop=EndTurn())


class Refusing:
    def complete(self, request: LlmRequest) -> LlmResponse:
        raise ToolChoiceUnsupportedError("no forced tool here", status=400, error_type="x")


@pytest.fixture
def host() -> Iterator[CellHost]:
    served = CellHost()
    yield served
    served.close()


@pytest.fixture
def client(host: CellHost) -> Iterator[HostClient]:
    connected = HostClient(host.url, host.token)
    yield connected
    connected.close()


def hosted(completer: object) -> HostedCell:
    return HostedCell(
        completer=completer,  # type: ignore[arg-type]
        store=MemoryStore(),
        approve=approve_all,
        extract_memories=None,
    )


def test_a_unit_that_sends_its_model_call_twice_is_a_finding(
    host: CellHost, client: HostClient
) -> None:
    model = Answering()
    cell = hosted(model)
    host.add("c1", cell)
    assert HostedCompleter(client, "c1", "unit-a").complete(REQUEST).text == "hello"
    assert HostedCompleter(client, "c1", "unit-b").complete(REQUEST).text == "hello"
    assert _findings(cell) == []
    HostedCompleter(client, "c1", "unit-a").complete(REQUEST)  # the engine ran unit-a again
    assert cell.repeated_units == ["unit-a"]
    (finding,) = _findings(cell)
    assert "sent the LLM request of one unit of work 2 times (unit unit-a)" in finding
    assert model.requests == [REQUEST, REQUEST, REQUEST]


def test_a_run_resumed_from_another_forced_state_is_a_finding() -> None:
    cell = hosted(Answering())
    cell.crashed_at.append(("forced_entered", '{"attempts": 0}'))
    cell.resumed_with.append(None)
    (finding,) = _findings(cell)
    assert "after the worker was killed at forced_entered" in finding
    assert 'instead of the persisted {"attempts": 0}' in finding


def test_the_models_typed_refusal_reaches_the_worker_as_itself(
    host: CellHost, client: HostClient
) -> None:
    host.add("c1", hosted(Refusing()))
    with pytest.raises(ToolChoiceUnsupportedError, match="no forced tool here") as raised:
        HostedCompleter(client, "c1", "u").complete(REQUEST)
    assert (raised.value.status, raised.value.error_type) == (400, "x")


def test_a_client_without_the_runs_token_gets_nothing(host: CellHost) -> None:
    host.add("c1", hosted(Answering()))
    stranger = HostClient(host.url, "not-the-token")
    with pytest.raises(EngineHostError, match="refused /complete"):
        stranger.call("/complete", {"cell": "c1"})
    stranger.close()
    answer = httpx2.post(f"{host.url}/load", json={"cell": "c1", "run_id": "r"})
    assert answer.status_code == 403
    port = int(host.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as raw:
        raw.sendall(
            f"POST /load HTTP/1.1\r\nhost: x\r\n{TOKEN_HEADER}: {host.token}\r\n"
            f"content-length: {2**40}\r\n\r\n{{}}".encode()
        )
        assert raw.recv(100).startswith(b"HTTP/1.1 413 ")


def test_an_unknown_cell_or_route_is_refused(host: CellHost, client: HostClient) -> None:
    with pytest.raises(EngineHostError, match="no cell 'gone' is running"):
        client.call("/complete", {"cell": "gone"})
    host.add("c1", hosted(Answering()))
    with pytest.raises(EngineHostError, match="no route /nowhere"):
        client.call("/nowhere", {"cell": "c1"})
