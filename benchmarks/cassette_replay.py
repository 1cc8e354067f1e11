"""Replay cost of `harness.cassettes` against the floor, cassetter and vcrpy, in one run.

Run `.venv/bin/python -m benchmarks.cassette_replay` (`--quick` for a smoke run, `--sizes` to
choose cassette sizes, `--profile` to add a cProfile of harness replay and load). For each size N
it builds N distinct OpenAI chat-completions exchanges (`benchmarks._traffic`), has each tool
record them with its own record mode, then times replay only, in a shuffled order (fixed seed),
through one `httpx.Client` configuration that sends the body with `json=` as the OpenAI SDK does:

- floor: an `httpx.MockTransport` whose handler answers from a dict keyed by the request body;
- harness: `CassetteTransport(path, mode="none")`;
- cassetter: `use_cassette(path, record_mode="none", match_on=["method", "uri", M])` with M
  `body` (bytes equal) and, separately, `json_body` (JSON equal, the closer match to harness);
- vcrpy: `VCR(record_mode="none", match_on=[method, scheme, host, port, path, query, body])`.

Tools whose per-request cost grows with N (they scan the cassette) are timed on a sample of the
shuffled requests at large N, and the output says so. It also times loading a cassette: harness
`Cassette.load` (parse, validate, verify every digest) against vcrpy's own persister with its YAML
serializer (libyaml's `CSafeLoader`), and cassetter's. Times are medians of several passes after a
checked warm-up; targets print PASS or FAIL and are never asserted: a timing is not a test.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import functools
import gc
import io
import json
import math
import os
import platform
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final, Literal

import cassetter
import httpx
import vcr
import yaml
from vcr.persisters.filesystem import FilesystemPersister
from vcr.serializers import yamlserializer

from benchmarks._traffic import CHAT_COMPLETIONS_PATH, TURNS_PER_CONVERSATION, build_traffic
from harness.cassettes import Cassette, CassetteTransport

SHUFFLE_SEED: Final = 20251101
VCRPY_MATCH_ON: Final = ("method", "scheme", "host", "port", "path", "query", "body")
UNUSED_URL: Final = "http://127.0.0.1:9"
"""A base URL where nothing listens, for the tools that never reach the network."""

# What the OpenAI Python SDK sends besides the body; the harness key reads only a few of them.
REQUEST_HEADERS: Final = {
    "authorization": "Bearer sk-bench-not-a-real-key",
    "accept": "application/json",
    "user-agent": "OpenAI/Python 1.99.0",
    "x-stainless-lang": "python",
    "x-stainless-package-version": "1.99.0",
    "x-stainless-os": "Linux",
    "x-stainless-arch": "x64",
    "x-stainless-runtime": "CPython",
    "x-stainless-runtime-version": "3.11.9",
    "x-stainless-retry-count": "0",
    "x-stainless-read-timeout": "600",
}
RESPONSE_HEADERS: Final = {
    "content-type": "application/json",
    "openai-organization": "bench-org",
    "openai-processing-ms": "812",
    "openai-version": "2020-10-01",
    "x-ratelimit-limit-requests": "10000",
    "x-ratelimit-remaining-requests": "9999",
    "x-request-id": "req_0123456789abcdef",
    "strict-transport-security": "max-age=31536000; includeSubDomains; preload",
    "cf-cache-status": "DYNAMIC",
}

# Targets from the issue: printed next to the numbers, never asserted.
REPLAY_OVER_FLOOR_MAX: Final = 1.5
FLATNESS_MAX: Final = 1.2
VCRPY_SPEEDUP_MIN: Final = 1000.0
VCRPY_SPEEDUP_AT: Final = 1000
LOAD_SPEEDUP_MIN: Final = 5.0


class BenchmarkError(RuntimeError):
    """A tool answered wrongly or the setup is not the one described, so a timing means nothing."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    """How much work one run does."""

    sizes: tuple[int, ...]
    replay_passes: int
    min_requests: int
    """Small cassettes get more passes, so that each tool sends at least this many requests."""
    load_repeats: int
    scan_sample: int
    """Requests timed for a tool that scans its cassette, at sizes above its `full_up_to`."""
    profile: bool


@dataclass(frozen=True, kw_only=True)
class Timing:
    """Median seconds per request, and how many requests and passes it rests on."""

    seconds: float
    requests: int
    passes: int


@dataclass(frozen=True, kw_only=True)
class SizeResult:
    """Everything measured at one cassette size."""

    size: int
    replay: dict[str, Timing]
    load: dict[str, float]
    file_bytes: dict[str, int]
    harness_loads_back: bool


# -- traffic and the loopback server ---------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Workload:
    """One size's traffic: payloads in recording and replay order, and the replies they get."""

    replies: dict[bytes, bytes]
    recording_order: list[dict[str, Any]]
    replay_order: list[dict[str, Any]]
    expected: list[bytes]


def build_workload(size: int) -> Workload:
    exchanges = build_traffic(size)
    replies: dict[bytes, bytes] = {}
    for exchange in exchanges:
        # The exact bytes httpx sends for `json=payload`, so a lookup needs no parsing.
        body = httpx.Request("POST", UNUSED_URL, json=exchange.request_json).content
        replies[body] = exchange.response_bytes
    if len(replies) != size:
        raise BenchmarkError(f"traffic of size {size} repeats a request")
    order = list(range(size))
    random.Random(SHUFFLE_SEED + size).shuffle(order)
    return Workload(
        replies=replies,
        recording_order=[exchange.request_json for exchange in exchanges],
        replay_order=[exchanges[index].request_json for index in order],
        expected=[exchanges[index].response_bytes for index in order],
    )


def make_client(base_url: str, transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """The one client configuration every tool is timed through."""
    return httpx.Client(base_url=base_url, headers=REQUEST_HEADERS, transport=transport)


def reply_handler(replies: dict[bytes, bytes]) -> Callable[[httpx.Request], httpx.Response]:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=RESPONSE_HEADERS, content=replies[request.content])

    return handle


class _LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, replies: dict[bytes, bytes], max_requests: int) -> None:
        super().__init__(("127.0.0.1", 0), _ReplyRequestHandler)
        self.replies = replies
        self.max_requests = max_requests
        self.served = 0
        self.count_lock = threading.Lock()


class _ReplyRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30  # an idle keep-alive connection ends its thread
    disable_nagle_algorithm = True  # else every reply waits out a delayed ACK (40 ms)
    server: _LoopbackServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        with self.server.count_lock:
            self.server.served += 1
            over_budget = self.server.served > self.server.max_requests
        reply = None if over_budget else self.server.replies.get(body)
        content = reply if reply is not None else b'{"error":"no reply"}'
        self.send_response(200 if reply is not None else 503 if over_budget else 404)
        for name, value in RESPONSE_HEADERS.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    def log_message(self, format: str, *args: Any) -> None:
        return


@contextmanager
def loopback_server(replies: dict[bytes, bytes], max_requests: int) -> Iterator[str]:
    """Serve `replies` on 127.0.0.1 until the block ends, answering at most `max_requests`."""
    server = _LoopbackServer(replies, max_requests)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"http://{host!s}:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# -- recording -------------------------------------------------------------------------------------


def post_all(client: httpx.Client, payloads: Sequence[dict[str, Any]]) -> None:
    for payload in payloads:
        client.post(CHAT_COMPLETIONS_PATH, json=payload).raise_for_status()


def record_harness(workload: Workload, base_url: str, path: Path) -> None:
    transport = CassetteTransport(
        path, mode="once", inner=httpx.MockTransport(reply_handler(workload.replies))
    )
    with make_client(base_url, transport) as client:
        post_all(client, workload.recording_order)


# vcrpy and cassetter first look every request up in what they recorded so far, with the
# configured matchers; with body matching that makes recording quadratic (cassetter took 47 s
# for 1,000 requests). Matchers are not written to the file, so both record with cheap ones and
# replay with body matching.


def record_cassetter(workload: Workload, base_url: str, path: Path) -> None:
    with (
        cassetter.use_cassette(
            path, record_mode="once", match_on=["method", "uri"], intercept=["httpx"]
        ),
        make_client(base_url) as client,
    ):
        post_all(client, workload.recording_order)


def record_vcrpy(workload: Workload, base_url: str, path: Path) -> None:
    recorder = vcr.VCR(record_mode="all", match_on=["method"], filter_headers=["authorization"])
    with recorder.use_cassette(str(path)), make_client(base_url) as client:
        post_all(client, workload.recording_order)


# -- replay ----------------------------------------------------------------------------------------


def timed_posts(client: httpx.Client, payloads: Sequence[dict[str, Any]]) -> float:
    """Seconds to send every payload and read its reply; only this loop is timed."""
    gc.collect()
    start = time.perf_counter()
    for payload in payloads:
        response = client.post(CHAT_COMPLETIONS_PATH, json=payload)
        if response.status_code != 200:
            raise BenchmarkError(f"replay answered {response.status_code}")
    return time.perf_counter() - start


def checked_posts(
    name: str, client: httpx.Client, payloads: Sequence[dict[str, Any]], expected: Sequence[bytes]
) -> None:
    for payload, want in zip(payloads, expected, strict=True):
        got = client.post(CHAT_COMPLETIONS_PATH, json=payload)
        if got.status_code != 200 or got.json() != json.loads(want):
            raise BenchmarkError(f"{name} replayed a wrong answer (status {got.status_code})")


Session = Callable[[str, Path], AbstractContextManager[httpx.Client]]
"""Opens a replay session on a cassette (base URL, path): yields the client to time."""


@contextmanager
def floor_session(replies: dict[bytes, bytes], base_url: str) -> Iterator[httpx.Client]:
    with make_client(base_url, httpx.MockTransport(reply_handler(replies))) as client:
        yield client


@contextmanager
def harness_session(base_url: str, path: Path) -> Iterator[httpx.Client]:
    with make_client(base_url, CassetteTransport(path, mode="none")) as client:
        yield client


def cassetter_session(matcher: Literal["body", "json_body"]) -> Session:
    @contextmanager
    def session(base_url: str, path: Path) -> Iterator[httpx.Client]:
        match_on: list[Literal["method", "uri", "headers", "body", "json_body"]] = [
            "method",
            "uri",
            matcher,
        ]
        with (
            cassetter.use_cassette(
                path, record_mode="none", match_on=match_on, intercept=["httpx"]
            ),
            make_client(base_url) as client,
        ):
            yield client

    return session


@contextmanager
def vcrpy_session(base_url: str, path: Path) -> Iterator[httpx.Client]:
    replayer = vcr.VCR(record_mode="none", match_on=list(VCRPY_MATCH_ON))
    with replayer.use_cassette(str(path)), make_client(base_url) as client:
        yield client


@dataclass(frozen=True, kw_only=True)
class Contender:
    """A replay tool: how to open a session, which cassette, and when to time only a sample."""

    name: str
    session: Session
    cassette: str
    full_up_to: int | None = None
    """Largest N replayed in full; above it the first `scan_sample` requests are timed."""


def time_replay(
    contender: Contender,
    base_url: str,
    path: Path,
    workload: Workload,
    settings: Settings,
    size: int,
) -> Timing:
    """Median seconds per request over fresh sessions, after one checked warm-up session."""
    sampled = contender.full_up_to is not None and size > contender.full_up_to
    count = min(size, settings.scan_sample) if sampled else size
    payloads, expected = workload.replay_order[:count], workload.expected[:count]
    checked = min(count, 3) if sampled else count  # a scanning tool's check costs seconds
    with contender.session(base_url, path) as client:
        checked_posts(contender.name, client, payloads[:checked], expected[:checked])
    if sampled:
        passes = 1
    elif contender.full_up_to is not None:
        passes = settings.replay_passes
    else:
        passes = max(settings.replay_passes, -(-settings.min_requests // count))
    times = []
    for _ in range(passes):
        with contender.session(base_url, path) as client:
            times.append(timed_posts(client, payloads) / count)
    return Timing(seconds=statistics.median(times), requests=count, passes=passes)


def warm_up(workdir: Path) -> None:
    """Run the floor and harness for about a second first, so N=10 is not also the cold start."""
    workload = build_workload(TURNS_PER_CONVERSATION)
    path = workdir / "warm-up.json"
    record_harness(workload, UNUSED_URL, path)
    for _ in range(100):
        with floor_session(workload.replies, UNUSED_URL) as client:
            post_all(client, workload.replay_order)
        with harness_session(UNUSED_URL, path) as client:
            post_all(client, workload.replay_order)


MIN_LOAD_SECONDS = 0.5
"""Small cassettes load in about a millisecond, where a few repeats are mostly noise: each tool
is repeated until its loads add up to this (at least `repeats` times, at most 200)."""


def median_seconds(action: Callable[[], object], repeats: int) -> float:
    started = time.perf_counter()
    action()  # warm-up, and a first estimate of how many repeats fit
    once = time.perf_counter() - started
    repeats = max(repeats, min(200, math.ceil(MIN_LOAD_SECONDS / max(once, 1e-6))))
    times: list[float] = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def load_harness(path: Path) -> None:
    Cassette.load(path)


def load_vcrpy(path: Path) -> None:
    FilesystemPersister.load_cassette(str(path), serializer=yamlserializer)


def load_cassetter(path: Path) -> None:
    cassetter.Cassette(path, record_mode=cassetter.RecordMode.NONE).load()


def harness_loads_back(path: Path, size: int) -> bool:
    """The file harness wrote loads, verifies, and holds one interaction per request."""
    try:
        return len(Cassette.load(path).interactions) == size
    except Exception:
        return False


# -- one size --------------------------------------------------------------------------------------

HARNESS_FILE: Final = "harness.json"
VCRPY_FILE: Final = "vcrpy.yaml"
# cassetter's YAML reader refuses a document over 250,000 nodes ("budget breached"), which 1,000
# of these exchanges exceed; its TOML format has no such limit and is its faster one.
CASSETTER_FILE: Final = "cassetter.toml"

CONTENDERS: Final = (
    Contender(name="harness", session=harness_session, cassette=HARNESS_FILE),
    Contender(name="cassetter body", session=cassetter_session("body"), cassette=CASSETTER_FILE),
    Contender(
        name="cassetter json_body",
        session=cassetter_session("json_body"),
        cassette=CASSETTER_FILE,
        full_up_to=100,
    ),
    Contender(name="vcrpy", session=vcrpy_session, cassette=VCRPY_FILE, full_up_to=10),
)
LOADERS: Final = (
    ("harness", load_harness, HARNESS_FILE),
    ("vcrpy", load_vcrpy, VCRPY_FILE),
    ("cassetter", load_cassetter, CASSETTER_FILE),
)


def measure_size(size: int, settings: Settings, workdir: Path) -> SizeResult:
    folder = workdir / f"n{size}"
    folder.mkdir()
    workload = build_workload(size)
    # vcrpy and cassetter patch httpx's network transport, so they record from a real server.
    # It is gone before replay starts: a replay that misses fails instead of reaching it.
    with loopback_server(workload.replies, max_requests=2 * size) as base_url:
        record_cassetter(workload, base_url, folder / CASSETTER_FILE)
        record_vcrpy(workload, base_url, folder / VCRPY_FILE)
    record_harness(workload, base_url, folder / HARNESS_FILE)

    floor = Contender(
        name="floor",
        session=lambda url, _path: floor_session(workload.replies, url),
        cassette=HARNESS_FILE,  # not read: the floor answers from the dict
    )
    replay = {
        contender.name: time_replay(
            contender, base_url, folder / contender.cassette, workload, settings, size
        )
        for contender in (floor, *CONTENDERS)
    }
    return SizeResult(
        size=size,
        replay=replay,
        load={
            name: median_seconds(functools.partial(load, folder / file), settings.load_repeats)
            for name, load, file in LOADERS
        },
        file_bytes={name: (folder / file).stat().st_size for name, _, file in LOADERS},
        harness_loads_back=harness_loads_back(folder / HARNESS_FILE, size),
    )


def profile_harness(size: int, workdir: Path) -> str:
    """cProfile of one harness replay pass and one `Cassette.load` at `size`, after a warm-up."""
    path = workdir / f"profile-{size}.json"
    workload = build_workload(size)
    record_harness(workload, UNUSED_URL, path)
    with harness_session(UNUSED_URL, path) as client:
        checked_posts("harness", client, workload.replay_order, workload.expected)
    out = io.StringIO()
    with harness_session(UNUSED_URL, path) as client:
        profiler = cProfile.Profile()
        profiler.runcall(post_all, client, workload.replay_order)
    out.write(f"replay of {size} requests: the client, then harness and json, by cumulative time\n")
    replay = pstats.Stats(profiler, stream=out).sort_stats("cumulative")
    replay.print_stats(r"_client\.py", 4)
    replay.print_stats(r"harness/cassettes|json/", 14)
    profiler = cProfile.Profile()
    profiler.runcall(Cassette.load, path)
    out.write(f"Cassette.load of {size} interactions, by cumulative time\n")
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(16)
    return out.getvalue()


# -- report ----------------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def duration(seconds: float) -> str:
    if seconds < 0.01:
        return f"{seconds * 1e6:,.0f} µs"
    if seconds < 10:
        return f"{seconds * 1e3:,.1f} ms"
    return f"{seconds:,.1f} s"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "| " + " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) + " |"
        for row in [header, *rows]
    ]
    lines.insert(1, "|" + "|".join("-" * (width + 2) for width in widths) + "|")
    return "\n".join(lines)


def fastest_cassetter(result: SizeResult) -> float:
    return min(
        result.replay["cassetter body"].seconds, result.replay["cassetter json_body"].seconds
    )


def report(results: Sequence[SizeResult], settings: Settings) -> str:
    out: list[str] = []
    first, last = results[0], results[-1]

    def cell(result: SizeResult, name: str) -> str:
        timing = result.replay[name]
        sample = "" if timing.requests == result.size else f" ({timing.requests}*)"
        return duration(timing.seconds) + sample

    def ratio(result: SizeResult, name: str) -> str:
        return f"{result.replay[name].seconds / result.replay['harness'].seconds:,.1f}x"

    out.append("### Replay cost per request (median over passes, shuffled order)\n")
    rows = []
    for result in results:
        harness_over_floor = result.replay["harness"].seconds / result.replay["floor"].seconds
        rows.append(
            [
                f"{result.size:,}",
                cell(result, "floor"),
                cell(result, "harness"),
                f"{harness_over_floor:.2f}x {verdict(harness_over_floor <= REPLAY_OVER_FLOOR_MAX)}",
                cell(result, "cassetter body"),
                ratio(result, "cassetter body"),
                cell(result, "cassetter json_body"),
                ratio(result, "cassetter json_body"),
                cell(result, "vcrpy"),
                ratio(result, "vcrpy"),
            ]
        )
    out.append(
        table(
            [
                "N",
                "floor",
                "harness",
                f"harness / floor (<= {REPLAY_OVER_FLOOR_MAX}x)",
                "cassetter body",
                "/ harness",
                "cassetter json_body",
                "/ harness",
                "vcrpy",
                "/ harness",
            ],
            rows,
        )
    )
    out.append(
        "\n(k*): timed on the first k requests of the shuffled order, one pass, because that "
        "tool scans its cassette on every request. Other cells: every request, "
        f"{settings.replay_passes}+ passes (at least {settings.min_requests:,} requests)."
    )

    out.append(f"\n### Flatness: per-request time at N={last.size:,} / at N={first.size:,}\n")
    flat_rows = []
    for name in ("floor", *(contender.name for contender in CONTENDERS)):
        before, after = first.replay[name].seconds, last.replay[name].seconds
        target = verdict(after / before <= FLATNESS_MAX) if name == "harness" else ""
        flat_rows.append(
            [name, duration(before), duration(after), f"{after / before:,.2f}x", target]
        )
    out.append(
        table(
            ["tool", f"N={first.size:,}", f"N={last.size:,}", "ratio", f"<= {FLATNESS_MAX}x"],
            flat_rows,
        )
    )

    out.append("\n### Cassette load (median of repeats; file size)\n")
    load_rows = []
    for result in results:
        speedup = result.load["vcrpy"] / result.load["harness"]

        def loaded(name: str, result: SizeResult = result) -> str:
            size = result.file_bytes[name] / 2**20
            return f"{duration(result.load[name])} ({size:,.1f} MiB)"

        load_rows.append(
            [
                f"{result.size:,}",
                loaded("harness"),
                loaded("vcrpy"),
                f"{speedup:.2f}x {verdict(speedup >= LOAD_SPEEDUP_MIN)}",
                loaded("cassetter"),
                f"{result.load['cassetter'] / result.load['harness']:.2f}x",
                verdict(result.harness_loads_back),
            ]
        )
    out.append(
        table(
            [
                "N",
                "harness Cassette.load",
                "vcrpy + libyaml",
                f"vcrpy / harness (>= {LOAD_SPEEDUP_MIN:g}x)",
                "cassetter (TOML)",
                "cassetter / harness",
                "harness file loads back",
            ],
            load_rows,
        )
    )

    at = next((result for result in results if result.size == VCRPY_SPEEDUP_AT), None)
    vcrpy_speedup = at.replay["vcrpy"].seconds / at.replay["harness"].seconds if at else None
    load_speedups = [result.load["vcrpy"] / result.load["harness"] for result in results]
    over_floor = [r.replay["harness"].seconds / r.replay["floor"].seconds for r in results]
    flatness = last.replay["harness"].seconds / first.replay["harness"].seconds
    cassetter_ratios = [fastest_cassetter(r) / r.replay["harness"].seconds for r in results]
    out.append("\n### Targets\n")
    target_rows = [
        [
            f"replay <= {REPLAY_OVER_FLOOR_MAX}x floor at every N",
            ", ".join(f"{value:.2f}x" for value in over_floor),
            verdict(all(value <= REPLAY_OVER_FLOOR_MAX for value in over_floor)),
        ],
        [
            f"flat in N (<= {FLATNESS_MAX}x from N={first.size:,} to N={last.size:,})",
            f"{flatness:.2f}x",
            verdict(flatness <= FLATNESS_MAX),
        ],
        [
            "faster than cassetter (its faster matcher) at every N",
            ", ".join(f"{value:.2f}x" for value in cassetter_ratios),
            verdict(all(value > 1 for value in cassetter_ratios)),
        ],
        [
            f">= {VCRPY_SPEEDUP_MIN:,.0f}x faster than vcrpy at N={VCRPY_SPEEDUP_AT:,}",
            f"{vcrpy_speedup:,.0f}x" if vcrpy_speedup else "not measured",
            verdict(vcrpy_speedup >= VCRPY_SPEEDUP_MIN) if vcrpy_speedup else "n/a",
        ],
        [
            f"load >= {LOAD_SPEEDUP_MIN:g}x faster than vcrpy + libyaml at every N",
            ", ".join(f"{value:.2f}x" for value in load_speedups),
            verdict(all(value >= LOAD_SPEEDUP_MIN for value in load_speedups)),
        ],
        [
            "every cassette harness wrote loads back",
            f"{sum(r.harness_loads_back for r in results)} of {len(results)}",
            verdict(all(r.harness_loads_back for r in results)),
        ],
    ]
    out.append(table(["target", "measured", "verdict"], target_rows))
    return "\n".join(out)


def harness_revision() -> str:
    """The commit measured, marked when `harness/` differs from it; read-only git calls."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = (
            subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, check=True
            )
            .stdout.decode()
            .strip()
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "harness"], cwd=root, capture_output=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"
    return f"commit {commit}" + (" with uncommitted changes to harness/" if dirty else "")


def environment(settings: Settings) -> str:
    loader = yamlserializer._CassetteLoader
    if not issubclass(loader, yaml.CSafeLoader):
        raise BenchmarkError("vcrpy's YAML loader is not libyaml's CSafeLoader; install libyaml")
    return "\n".join(
        [
            f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {platform.machine()}, "
            f"{os.cpu_count()} cores; Python {platform.python_version()} on {platform.system()}",
            f"httpx {version('httpx')}; vcrpy {version('vcrpy')} with pyyaml {version('pyyaml')} "
            f"(loader {loader.__name__} subclasses CSafeLoader: libyaml); "
            f"cassetter {version('cassetter')}; completion-harness {version('completion-harness')} "
            f"at {harness_revision()}",
            f"sizes {', '.join(f'{size:,}' for size in settings.sizes)}; "
            f"{settings.replay_passes}+ replay passes; {settings.load_repeats} load repeats; "
            f"scanning tools sampled on {settings.scan_sample} requests",
        ]
    )


def parse_settings(argv: Sequence[str] | None) -> Settings:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.cassette_replay",
        description="Replay and load cost of harness cassettes against the floor, cassetter "
        "and vcrpy.",
    )
    parser.add_argument(
        "--sizes", help=f"comma-separated cassette sizes, multiples of {TURNS_PER_CONVERSATION}"
    )
    parser.add_argument("--quick", action="store_true", help="fewer sizes and passes (< 1 min)")
    parser.add_argument("--profile", action="store_true", help="add a cProfile of harness")
    args = parser.parse_args(argv)
    try:
        sizes = tuple(sorted({int(part) for part in (args.sizes or "10,100,1000,3000").split(",")}))
    except ValueError:
        parser.error(f"expected comma-separated integers but got --sizes={args.sizes!r}")
    if any(size <= 0 or size % TURNS_PER_CONVERSATION for size in sizes):
        parser.error(
            f"expected positive multiples of {TURNS_PER_CONVERSATION} but got --sizes={args.sizes}"
        )
    if args.quick:
        return Settings(
            sizes=sizes if args.sizes else (10, 100, 1000),
            replay_passes=3,
            min_requests=1000,
            load_repeats=2,
            scan_sample=5,
            profile=args.profile,
        )
    return Settings(
        sizes=sizes,
        replay_passes=7,
        min_requests=3000,
        load_repeats=3,
        scan_sample=20,
        profile=args.profile,
    )


def main(argv: Sequence[str] | None = None) -> int:
    settings = parse_settings(argv)
    print(environment(settings), flush=True)
    started = time.perf_counter()
    results: list[SizeResult] = []
    with tempfile.TemporaryDirectory(prefix="cassette-bench-") as temporary:
        workdir = Path(temporary)
        warm_up(workdir)
        for size in settings.sizes:
            step = time.perf_counter()
            results.append(measure_size(size, settings, workdir))
            print(f"N={size:,}: recorded and measured in {time.perf_counter() - step:.0f} s")
        print()
        print(report(results, settings))
        if settings.profile:
            print(f"\n### cProfile of harness at N={settings.sizes[-1]:,}\n")
            print(profile_harness(settings.sizes[-1], workdir))
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
