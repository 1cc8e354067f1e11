"""Memory of `harness serve` under many clients: thousands of sessions and cassette names.

```sh
python -m benchmarks.serve_memory                        # 10,000 sessions, 3,000 names (~2 min)
python -m benchmarks.serve_memory --sessions 1000 --names 300
```

The same traffic against two servers, each `harness serve` in its own process the way a user
starts it: one with its default limits, one with caps so high none is reached (what the server
was before it had them, and what a replay proxy without limits holds). Each opens `--sessions`
sessions without deleting them (each session replays one of the cassettes, so it holds that
cassette loaded) and sends one request to each of `--names` cassettes through its `/c/` URL
(each loaded on first use), in three equal parts, and reports the server's resident memory after
each: by the end of the first, every limit of the limited server is reached. The cassettes are written before either server starts:
`--names` copies of one recorded chat-completions exchange.

The target: the limited server's memory is flat once its limits are reached (over the last third
it grows by at most 5% of what the unlimited one grows by).
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import httpx2

from benchmarks._report import heading
from harness.cassettes import CassetteTransport

CHAT: Final = "/v1/chat/completions"
UNLIMITED: Final = ["--max-sessions", "100000000", "--max-cassettes", "100000000"]
TARGET: Final = 0.05
STARTUP_SECONDS: Final = 30.0


def request_body(index: int) -> bytes:
    prompt = f"question {index}: " + "context " * 200
    return json.dumps(
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]}
    ).encode()


def write_cassettes(folder: Path, names: int) -> None:
    """`names` cassettes `n0` ... , each one recorded exchange answering `request_body(0)`."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            200,
            json={
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "An answer. " * 50},
                        "finish_reason": "stop",
                    }
                ],
            },
        )

    first = folder / "n0.json"
    transport = CassetteTransport(first, mode="once", inner=httpx2.MockTransport(answer))
    with httpx2.Client(transport=transport, base_url="https://api.openai.com") as client:
        client.post(CHAT, content=request_body(0), headers={"content-type": "application/json"})
    recorded = first.read_bytes()
    for index in range(1, names):
        (folder / f"n{index}.json").write_bytes(recorded)


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise SystemExit("no VmRSS in /proc: this benchmark needs Linux")


@contextmanager
def running_server(folder: Path, options: Sequence[str]) -> Iterator[tuple[str, int]]:
    ready = folder.parent / f"url-{time.monotonic_ns()}.txt"
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from harness.cli import main; main()",
            "serve",
            "--cassettes",
            str(folder),
            "--ready-file",
            str(ready),
            *options,
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not ready.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("harness serve did not start")
            time.sleep(0.05)
        yield ready.read_text().strip(), process.pid
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(STARTUP_SECONDS)


def growth(folder: Path, options: Sequence[str], sessions: int, names: int) -> list[int]:
    """The server's resident memory after each third of the traffic."""
    with (
        running_server(folder, options) as (url, pid),
        httpx2.Client(base_url=url, timeout=60) as client,
    ):

        def traffic(first: int, last: int) -> None:
            for index in range(first * sessions // 3, last * sessions // 3):
                body = {"cassette": f"n{index % names}"}
                if client.post("/_harness/sessions", json=body).status_code != 201:
                    raise SystemExit("a session was refused")
            for index in range(first * names // 3, last * names // 3):
                answer = client.post(
                    f"/c/n{index}{CHAT}",
                    content=request_body(0),
                    headers={"content-type": "application/json"},
                )
                if answer.status_code != 200:
                    raise SystemExit(f"/c/n{index} answered {answer.status_code}")

        resident = []
        for third in range(3):
            traffic(third, third + 1)
            resident.append(rss(pid))
        return resident


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--names", type=int, default=3_000)
    arguments = parser.parse_args(argv)
    print(heading(f"{arguments.sessions:,} sessions and {arguments.names:,} cassette names"))
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / "cassettes"
        folder.mkdir()
        write_cassettes(folder, arguments.names)
        results = {
            "harness serve (default limits)": growth(
                folder, [], arguments.sessions, arguments.names
            ),
            "harness serve (no limit reached)": growth(
                folder, UNLIMITED, arguments.sessions, arguments.names
            ),
        }
    print("| server | after 1/3 | after 2/3 | after all | growth over the last third |")
    print("| --- | --- | --- | --- | --- |")
    for name, resident in results.items():
        shown = " | ".join(f"{value / 2**20:.1f} MiB" for value in resident)
        print(f"| {name} | {shown} | {(resident[2] - resident[1]) / 2**20:+.1f} MiB |")
    limited = results["harness serve (default limits)"]
    unlimited = results["harness serve (no limit reached)"]
    ratio = (limited[2] - limited[1]) / max(1, unlimited[2] - unlimited[1])
    print(
        f"growth over the last third, limited / unlimited: {ratio:.3f} (target <= {TARGET:g}): "
        f"{'PASS' if ratio <= TARGET else 'FAIL'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
