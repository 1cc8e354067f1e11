"""Load on `harness serve`: concurrent streaming clients replaying one cassette over loopback.

```sh
python -m benchmarks.serve_load                          # 50 clients, 30 s per mode (~100 s)
python -m benchmarks.serve_load --clients 10 --seconds 5
```

Two modes, the same traffic, measured in the same run:

- **harness serve**: `harness serve --port 0 --ready-file F --allow-repeats`, started as its own
  process the way a user starts it, so the load generator and the server do not share a GIL.
  The clients stream from `/c/<cassette>/v1/chat/completions` over loopback TCP, twice: with a
  minimal HTTP/1.1 client (h11 over asyncio streams, what `wrk` is to a C server), which leaves
  the cores to the server and so measures it, and with one `httpx2.AsyncClient` per client,
  what the official SDKs send with, which costs the load generator more CPU per stream than the
  server spends answering it.
- **in process**: the same clients and requests through `CassetteTransport(path,
  allow_repeats=True)` plugged into the client: what a Python test pays without a server.

The cassette holds `PROMPTS` distinct OpenAI chat-completions requests (the cassette benchmark's
agent traffic, with `stream: true`), each answered by a `EVENTS_PER_STREAM`-event
`chat.completion.chunk` stream. Client *i* sends request *i mod PROMPTS* again and again and
reads every stream to its end; an answer that is not byte for byte the recorded stream is an
error. Latency is the time from sending a request to the end of its stream. Each client keeps one
keep-alive connection; the load-generating processes share the machine's cores with the server,
and the CPU seconds each process spends are reported next to the times. The targets are judged on
the minimal-client run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import math
import multiprocessing
import os
import platform
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any, Final, Protocol

import h11
import httpx2

from benchmarks._traffic import build_traffic
from benchmarks.cassette_replay import harness_revision, table, verdict
from harness.cassettes import CassetteTransport

PROMPTS: Final = 50
"""Distinct requests in the cassette: the first five conversations of `_traffic`, every turn."""
EVENTS_PER_STREAM: Final = 20
CASSETTE_NAME: Final = "load/stream"
P99_TARGET_SECONDS: Final = 0.050
WARM_UP_SECONDS: Final = 2.0
STARTUP_SECONDS: Final = 30.0
DEFAULT_PROCESSES: Final = 2
UPSTREAM: Final = "https://api.openai.com/v1"
HEADERS: Final = {
    "content-type": "application/json",
    "accept": "application/json",
    "authorization": "Bearer sk-bench-not-a-real-key",
    "user-agent": "OpenAI/Python 3.57.0",
}
SERVER_MODE: Final = "harness serve, minimal HTTP/1.1 clients"
SERVER_SDK_MODE: Final = "harness serve, httpx2 clients"
IN_PROCESS_MODE: Final = "CassetteTransport in process"


class BenchmarkError(RuntimeError):
    """The benchmark cannot measure: the server does not start, or answers wrongly at warm-up."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    clients: int
    seconds: float
    processes: int = 1
    """How many processes the clients of `harness serve` are dealt over."""

    @property
    def warm_up_seconds(self) -> float:
        return min(WARM_UP_SECONDS, self.seconds / 4)


class StreamError(Exception):
    """A request the client could not complete; its kind is what the report counts."""


class Sender(Protocol):
    async def __call__(self, body: bytes) -> tuple[int, bytes]:
        """POST `body` to the chat-completions endpoint: the status and the whole answer, read
        to its end, or `StreamError`."""
        ...


Client = tuple[int, Sender]
"""A simulated client: which request it sends (its index), and how it sends it."""


def httpx2_sender(client: httpx2.AsyncClient) -> Sender:
    async def send(body: bytes) -> tuple[int, bytes]:
        try:
            async with client.stream("POST", "/chat/completions", content=body) as response:
                return response.status_code, b"".join(
                    [chunk async for chunk in response.aiter_raw()]
                )
        except httpx2.HTTPError as error:
            raise StreamError(type(error).__name__) from error

    return send


class H11Sender:
    """One keep-alive HTTP/1.1 connection driven by h11 over asyncio streams: the least a
    client can spend on a request, so that the server's cost is what is measured."""

    def __init__(self, base_url: str) -> None:
        url = httpx2.URL(f"{base_url}/c/{CASSETTE_NAME}/v1/chat/completions")
        self._host, self._port = url.host, url.port
        self._target = url.raw_path
        self._headers = [("host", f"{url.host}:{url.port}"), *HEADERS.items()]
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._connection = h11.Connection(h11.CLIENT)

    async def __call__(self, body: bytes) -> tuple[int, bytes]:
        try:
            return await self._exchange(body)
        except (OSError, h11.ProtocolError, asyncio.IncompleteReadError) as error:
            await self.aclose()
            raise StreamError(type(error).__name__) from error

    async def _exchange(self, body: bytes) -> tuple[int, bytes]:
        if self._streams is None:
            self._streams = await asyncio.open_connection(self._host, self._port)
            self._connection = h11.Connection(h11.CLIENT)
        reader, writer = self._streams
        connection = self._connection
        headers = [*self._headers, ("content-length", str(len(body)))]
        writer.write(
            connection.send(h11.Request(method="POST", target=self._target, headers=headers))
            + connection.send(h11.Data(data=body))
            + connection.send(h11.EndOfMessage())
        )
        status, parts = 0, []
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                data = await reader.read(65536)
                if not data:
                    raise asyncio.IncompleteReadError(b"".join(parts), None)
                connection.receive_data(data)
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                parts.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                break
        if connection.our_state is h11.DONE and connection.their_state is h11.DONE:
            connection.start_next_cycle()
        else:  # the server closes the connection: open a new one next time
            await self.aclose()
        return status, b"".join(parts)

    async def aclose(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


@dataclass(frozen=True, kw_only=True)
class Traffic:
    """The request bodies clients send and, for each, the stream the cassette answers with."""

    bodies: list[bytes]
    streams: list[bytes]


@dataclass
class Load:
    """What one mode measured: each answered request's latency, and the errors by kind."""

    mode: str
    latencies: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    machine_cpu_seconds: float = math.nan
    """Every process's, this benchmark's included: the rest is what other programs took."""

    @property
    def requests(self) -> int:
        return len(self.latencies) + self.error_count

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    @property
    def per_second(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def percentile(self, fraction: float) -> float:
        """The nearest-rank percentile of the latencies (NaN when there are none)."""
        ordered = sorted(self.latencies)
        if not ordered:
            return math.nan
        return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


# -- traffic ---------------------------------------------------------------------------------------


def _event(data: dict[str, Any] | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"data: {text}\n\n".encode()


def _chunk(completion: dict[str, Any], delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": completion["id"],
        "object": "chat.completion.chunk",
        "created": completion["created"],
        "model": completion["model"],
        "service_tier": "default",
        "system_fingerprint": completion["system_fingerprint"],
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        "usage": None,
    }


def _pieces(text: str, count: int) -> list[str]:
    size = max(1, -(-len(text) // count))
    return [text[start : start + size] for start in range(0, size * count, size)]


def _deltas(message: dict[str, Any], count: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The first delta (role; a tool call's id and name) and `count` deltas of text or arguments."""
    calls = message.get("tool_calls")
    if not calls:
        head = {"role": "assistant", "content": "", "refusal": None}
        return head, [{"content": piece} for piece in _pieces(message["content"], count)]
    function = calls[0]["function"]
    opening = {"index": 0, "id": calls[0]["id"], "type": "function"}
    head = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{**opening, "function": {"name": function["name"], "arguments": ""}}],
        "refusal": None,
    }
    return head, [
        {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
        for piece in _pieces(function["arguments"], count)
    ]


def sse_stream(completion: dict[str, Any]) -> bytes:
    """`completion` as OpenAI streams it with `stream_options.include_usage`: the first delta,
    16 deltas of text or tool arguments, the finish reason, the usage, and `[DONE]`, which makes
    `EVENTS_PER_STREAM` events."""
    choice = completion["choices"][0]
    head, parts = _deltas(choice["message"], EVENTS_PER_STREAM - 4)
    usage = {**_chunk(completion, {}, None), "choices": [], "usage": completion["usage"]}
    events = [
        _event(_chunk(completion, head, None)),
        *(_event(_chunk(completion, part, None)) for part in parts),
        _event(_chunk(completion, {}, choice["finish_reason"])),
        _event(usage),
        _event("[DONE]"),
    ]
    return b"".join(events)


def build_stream_traffic() -> Traffic:
    """`PROMPTS` streamed requests, as compact JSON (what an SDK sends), and their streams."""
    bodies: list[bytes] = []
    streams: list[bytes] = []
    for exchange in build_traffic(PROMPTS):
        request = {
            **exchange.request_json,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        bodies.append(json.dumps(request, separators=(",", ":")).encode())
        streams.append(sse_stream(json.loads(exchange.response_bytes)))
    return Traffic(bodies=bodies, streams=streams)


def record_cassette(traffic: Traffic, path: Path) -> None:
    """Record every request of `traffic` into `path`, answered by a mock of the provider."""
    answers = dict(zip(traffic.bodies, traffic.streams, strict=True))

    def provider(request: httpx2.Request) -> httpx2.Response:
        headers = {
            "content-type": "text/event-stream; charset=utf-8",
            "openai-version": "2020-10-01",
        }
        return httpx2.Response(200, headers=headers, content=answers[request.content])

    transport = CassetteTransport(path, mode="all", inner=httpx2.MockTransport(provider))
    with httpx2.Client(base_url=UPSTREAM, headers=HEADERS, transport=transport) as client:
        for body in traffic.bodies:
            client.post("/chat/completions", content=body).raise_for_status()


# -- load ------------------------------------------------------------------------------------------


async def drive(clients: Sequence[Client], traffic: Traffic, seconds: float, load: Load) -> None:
    """A task per client, each streaming its request again and again until `seconds` are over."""
    stop = time.perf_counter() + seconds

    async def client_loop(index: int, send: Sender) -> None:
        body, expected = traffic.bodies[index % PROMPTS], traffic.streams[index % PROMPTS]
        while time.perf_counter() < stop:
            started = time.perf_counter()
            try:
                status, received = await send(body)
            except StreamError as error:
                load.errors[str(error)] += 1
                continue
            if status != 200:
                load.errors[f"HTTP {status}"] += 1
            elif received != expected:
                load.errors["not the recorded stream"] += 1
            else:
                load.latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(client_loop(index, client) for index, client in clients))
    load.seconds = time.perf_counter() - started


async def generate(
    mode: str,
    clients: Sequence[Client],
    traffic: Traffic,
    settings: Settings,
    ready: Callable[[], object],
) -> Load:
    """A warm-up (every client opens its connection; an error aborts), `ready()` (which waits
    for the other load-generating processes), then the timed load and this process's CPU."""
    warm_up = Load(mode)
    await drive(clients, traffic, settings.warm_up_seconds, warm_up)
    if warm_up.errors or not warm_up.latencies:
        raise BenchmarkError(f"{mode}: errors during the warm-up: {dict(warm_up.errors)}")
    ready()
    load = Load(mode)
    before = time.process_time()
    await drive(clients, traffic, settings.seconds, load)
    load.cpu_seconds["clients"] = time.process_time() - before
    return load


def machine_cpu_seconds() -> float:
    """CPU seconds every process on the machine has used (Linux `/proc/stat`; NaN elsewhere)."""
    try:
        ticks = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:9]]
    except OSError:
        return math.nan
    idle = ticks[3] + ticks[4]  # idle and iowait
    return (sum(ticks) - idle) / os.sysconf("SC_CLK_TCK")


def cpu_seconds_of(pid: int) -> float:
    """User plus system CPU seconds process `pid` has used (Linux `/proc`; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def harness_executable() -> str:
    """The `harness` command installed beside this interpreter (a virtualenv's), else PATH's."""
    beside = Path(sys.executable).with_name("harness")
    found = str(beside) if beside.is_file() else shutil.which("harness")
    if found is None:
        raise BenchmarkError("the harness command is not installed; run `make .venv/.installed`")
    return found


@contextmanager
def harness_serve(cassettes: Path, workdir: Path) -> Iterator[tuple[str, int]]:
    """`harness serve` in its own process: its base URL and process id, until the block ends."""
    ready, log = workdir / "ready-url", workdir / "serve.log"
    command = [harness_executable(), "serve", "--cassettes", str(cassettes), "--allow-repeats"]
    command += ["--port", "0", "--ready-file", str(ready)]
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not ready.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise BenchmarkError(f"harness serve did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.02)
        yield ready.read_text().strip(), process.pid
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(STARTUP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _stream_from_server(
    mode: str,
    url: str,
    clients: Sequence[int],
    traffic: Traffic,
    settings: Settings,
    ready: Callable[[], object],
) -> Load:
    if mode == SERVER_MODE:
        senders = [(index, H11Sender(url)) for index in clients]
        try:
            return await generate(mode, senders, traffic, settings, ready)
        finally:
            for _, sender in senders:
                await sender.aclose()
    # One httpx2 client (and connection) per simulated client, as each SDK instance has its own:
    # one pool shared by all costs more (httpcore2 scans every connection of a pool for each
    # request). They share one TLS context, unused over plain HTTP but 27 ms to build.
    tls = ssl.create_default_context()
    async with contextlib.AsyncExitStack() as stack:
        own = [
            (
                index,
                httpx2_sender(
                    await stack.enter_async_context(
                        httpx2.AsyncClient(
                            base_url=f"{url}/c/{CASSETTE_NAME}/v1",
                            headers=HEADERS,
                            timeout=30,
                            verify=tls,
                        )
                    )
                ),
            )
            for index in clients
        ]
        return await generate(mode, own, traffic, settings, ready)


def _load_generator(
    mode: str,
    url: str,
    clients: Sequence[int],
    traffic: Traffic,
    settings: Settings,
    barrier: Barrier,
    results: Queue[Load | str],
) -> None:
    """One load-generating process: its share of the clients, started with the others'."""
    try:
        load = asyncio.run(
            _stream_from_server(mode, url, clients, traffic, settings, lambda: barrier.wait())
        )
    except BaseException as error:  # reported to the parent, which raises it
        barrier.abort()
        results.put(f"{type(error).__name__}: {error}")
    else:
        results.put(load)


def load_server(
    url: str, pid: int, traffic: Traffic, settings: Settings, mode: str = SERVER_MODE
) -> Load:
    """`settings.clients` clients of `mode` against the server, dealt over `settings.processes`
    processes that start their timed load together; the server's and the machine's CPU over
    that time."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(settings.processes + 1)
    results: Queue[Load | str] = context.Queue()
    shares = [
        range(first, settings.clients, settings.processes) for first in range(settings.processes)
    ]
    generators = [
        context.Process(
            target=_load_generator, args=(mode, url, share, traffic, settings, barrier, results)
        )
        for share in shares
    ]
    for generator in generators:
        generator.start()
    try:
        try:
            barrier.wait(STARTUP_SECONDS + settings.warm_up_seconds)
        except threading.BrokenBarrierError:
            raise BenchmarkError(f"a load generator failed: {results.get(timeout=5)}") from None
        machine_before, server_before = machine_cpu_seconds(), cpu_seconds_of(pid)
        loads = [results.get(timeout=settings.seconds + STARTUP_SECONDS) for _ in generators]
        server, machine = (
            cpu_seconds_of(pid) - server_before,
            machine_cpu_seconds() - machine_before,
        )
    finally:
        for generator in generators:
            generator.join(STARTUP_SECONDS)
            if generator.is_alive():
                generator.kill()
    failed = [load for load in loads if isinstance(load, str)]
    if failed:
        raise BenchmarkError(f"a load generator failed: {failed[0]}")
    return merged([load for load in loads if isinstance(load, Load)], server, machine)


def merged(loads: Sequence[Load], server_cpu: float, machine_cpu: float) -> Load:
    """The loads of several processes as one, with the server's and the machine's CPU."""
    load = Load(loads[0].mode, machine_cpu_seconds=machine_cpu)
    for part in loads:
        load.latencies += part.latencies
        load.errors += part.errors
        load.seconds = max(load.seconds, part.seconds)
    load.cpu_seconds["server"] = server_cpu
    load.cpu_seconds["clients"] = sum(part.cpu_seconds["clients"] for part in loads)
    return load


async def load_in_process(path: Path, traffic: Traffic, settings: Settings) -> Load:
    """The same clients in this one process, each request answered by `CassetteTransport`."""
    transport = CassetteTransport(path, allow_repeats=True)
    started: list[float] = []
    async with httpx2.AsyncClient(
        base_url=UPSTREAM, headers=HEADERS, transport=transport
    ) as client:
        sender = httpx2_sender(client)
        shared = [(index, sender) for index in range(settings.clients)]
        load = await generate(
            IN_PROCESS_MODE,
            shared,
            traffic,
            settings,
            lambda: started.append(machine_cpu_seconds()),
        )
    load.machine_cpu_seconds = machine_cpu_seconds() - started[0]
    return load


def run(settings: Settings, traffic: Traffic) -> list[Load]:
    """Record the cassette, then load `harness serve` (with each kind of client) and the
    in-process transport in turn."""
    with tempfile.TemporaryDirectory(prefix="serve-bench-") as temporary:
        workdir = Path(temporary)
        cassettes = workdir / "cassettes"
        path = cassettes / f"{CASSETTE_NAME}.json"
        record_cassette(traffic, path)
        with harness_serve(cassettes, workdir) as (url, pid):
            loads = [
                load_server(url, pid, traffic, settings, mode)
                for mode in (SERVER_MODE, SERVER_SDK_MODE)
            ]
        loads.append(asyncio.run(load_in_process(path, traffic, settings)))
    return loads


# -- report ----------------------------------------------------------------------------------------


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f} ms"


def _errors(load: Load) -> str:
    kinds = ", ".join(f"{kind}: {count:,}" for kind, count in load.errors.most_common())
    return f"{load.error_count:,}" + (f" ({kinds})" if kinds else "")


def _cpu(load: Load) -> str:
    return " + ".join(
        f"{name} {seconds / max(load.requests, 1) * 1e3:.2f} ms"
        for name, seconds in load.cpu_seconds.items()
    )


def _busy(load: Load) -> str:
    others = load.machine_cpu_seconds - sum(load.cpu_seconds.values())
    shares = {**load.cpu_seconds, "other programs": max(0.0, others)}
    return " + ".join(f"{name} {seconds / load.seconds:.2f}" for name, seconds in shares.items())


def report(loads: Sequence[Load], settings: Settings) -> str:
    """The modes side by side, their ratios to the in-process transport, and the targets,
    judged on the first (the minimal clients against the server)."""
    server, in_process = loads[0], loads[-1]
    rows = [
        [
            load.mode,
            f"{load.requests:,}",
            f"{load.per_second:,.0f}",
            milliseconds(load.percentile(0.50)),
            milliseconds(load.percentile(0.99)),
            milliseconds(max(load.latencies, default=math.nan)),
            _errors(load),
            _cpu(load),
            _busy(load),
        ]
        for load in loads
    ]
    p99 = server.percentile(0.99)
    targets = [
        ["zero errors", _errors(server), verdict(server.error_count == 0)],
        [
            f"p99 < {milliseconds(P99_TARGET_SECONDS)} for a {EVENTS_PER_STREAM}-event stream",
            milliseconds(p99),
            verdict(p99 < P99_TARGET_SECONDS),
        ],
    ]
    header = ["mode", "requests", "streams/s", "p50", "p99", "max", "errors"]
    return "\n".join(
        [
            f"#### {settings.clients} concurrent streaming clients, {settings.seconds:g} s per "
            "mode\n",
            table([*header, "CPU per request", "cores busy"], rows),
            "",
            *(
                f"{load.mode} / in process: {load.per_second / in_process.per_second:.2f}x the "
                f"streams per second, {load.percentile(0.5) / in_process.percentile(0.5):,.0f}x "
                "the median latency"
                for load in loads[:-1]
            ),
            "",
            f"#### Targets ({server.mode})\n",
            table(["target", "measured", "verdict"], targets),
        ]
    )


def environment(settings: Settings, traffic: Traffic) -> str:
    bodies = sorted(len(body) for body in traffic.bodies)
    streams = sorted(len(stream) for stream in traffic.streams)
    return "\n".join(
        [
            f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {platform.machine()}, "
            f"{os.cpu_count()} cores; Python {platform.python_version()} on {platform.system()}",
            f"httpx2 {version('httpx2')}, h11 {version('h11')}; uvicorn {version('uvicorn')} "
            f"with httptools {version('httptools')} and uvloop {version('uvloop')}; "
            f"starlette {version('starlette')}; completion-harness "
            f"{version('completion-harness')} at {harness_revision()}",
            f"{settings.clients} clients, against harness serve in {settings.processes} "
            f"process(es); {settings.seconds:g} s per mode after a {settings.warm_up_seconds:g} s "
            f"warm-up; {PROMPTS} distinct requests ({bodies[0] / 1024:.1f}-"
            f"{bodies[-1] / 1024:.1f} KiB), each answered by a {EVENTS_PER_STREAM}-event stream "
            f"({streams[0] / 1024:.1f}-{streams[-1] / 1024:.1f} KiB)",
        ]
    )


def parse_settings(argv: Sequence[str] | None) -> Settings:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.serve_load",
        description="Streaming clients against harness serve (minimal and httpx2 clients) and "
        "against CassetteTransport in process.",
    )
    parser.add_argument("--clients", type=int, default=50, help="concurrent streaming clients")
    parser.add_argument("--seconds", type=float, default=30.0, help="timed seconds per mode")
    parser.add_argument(
        "--processes",
        type=int,
        help=f"processes the clients of harness serve are dealt over (default: "
        f"{DEFAULT_PROCESSES}, or 1 for one client)",
    )
    args = parser.parse_args(argv)
    if args.clients < 1:
        parser.error(f"expected at least 1 but got --clients={args.clients}")
    if args.processes is None:
        args.processes = min(DEFAULT_PROCESSES, args.clients)
    if not 1 <= args.processes <= args.clients:
        parser.error(f"expected 1 to --clients={args.clients} but got --processes={args.processes}")
    if not 0 < args.seconds < math.inf:
        parser.error(f"expected a positive number of seconds but got --seconds={args.seconds}")
    return Settings(clients=args.clients, seconds=args.seconds, processes=args.processes)


def main(argv: Sequence[str] | None = None) -> int:
    settings = parse_settings(argv)
    traffic = build_stream_traffic()
    print(environment(settings, traffic), flush=True)
    loads = run(settings, traffic)
    print()
    print(report(loads, settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
