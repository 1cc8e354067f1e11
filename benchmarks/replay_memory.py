"""Peak memory of replaying a large cassette: harness beside vcrpy and cassetter, in one run.

Builds `--size` (default 3,000) distinct OpenAI chat-completions exchanges (`benchmarks._traffic`),
has each tool record them in its own format (harness JSON, vcrpy YAML, cassetter TOML), then, for
each tool in a fresh Python process, opens the cassette for replay and replays `--sample`
requests (default 20, in a shuffled order: the peak is reached as the cassette opens) through
one `httpx.Client`, checking every answer. The peak is the process's peak resident memory
during the replay (the kernel's mark, reset just before) above its resident memory before it:
the file's bytes, the parsed tree, the tool's own records, the answers. It is given as a
multiple of the cassette's file size. Linux only (`/proc/self/status`). The time to load the cassette (median of
`--repeats`, no tracing) is printed beside it: the target holds only if loading is no slower.

The target: harness at most 2x its file size.

    .venv/bin/python -m benchmarks.replay_memory [--size 3000] [--sample 20] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

from benchmarks._report import heading
from benchmarks.cassette_replay import (
    CASSETTER_FILE,
    HARNESS_FILE,
    VCRPY_FILE,
    build_workload,
    loopback_server,
    record_cassetter,
    record_harness,
    record_vcrpy,
)

TARGET: Final = 2.0
TOOLS: Final = {"harness": HARNESS_FILE, "vcrpy": VCRPY_FILE, "cassetter": CASSETTER_FILE}

# One tool's replay, in a process of its own: nothing another tool allocated is counted. The
# process first replays a small cassette of the same tool (imports, first-use set-up), then the
# kernel's peak-RSS mark is reset and the large cassette replayed.
_MEASURE: Final = """
import gc, json, statistics, sys, time
from pathlib import Path
from benchmarks import cassette_replay as bench

def rss(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise SystemExit("no " + field + " in /proc/self/status: this benchmark needs Linux")

tool, small, path, base_url, size, sample, repeats = sys.argv[1:8]
size, sample, repeats = int(size), int(sample), int(repeats)
sessions = {
    "harness": bench.harness_session,
    "vcrpy": bench.vcrpy_session,
    "cassetter": bench.cassetter_session("json_body"),
}
loaders = {name: load for name, load, _ in bench.LOADERS}
warm = bench.build_workload(10)
with sessions[tool](base_url, Path(small)) as client:
    bench.checked_posts(tool, client, warm.replay_order, warm.expected)
workload = bench.build_workload(size)
payloads, expected = workload.replay_order[:sample], workload.expected[:sample]
gc.collect()
before = rss("VmRSS")
Path("/proc/self/clear_refs").write_text("5")  # the peak-RSS mark starts again from here
with sessions[tool](base_url, Path(path)) as client:
    bench.checked_posts(tool, client, payloads, expected)
peak = rss("VmHWM") - before
times = []
for _ in range(repeats):
    gc.collect()
    started = time.perf_counter()
    loaders[tool](Path(path))
    times.append(time.perf_counter() - started)
print(json.dumps({"peak": peak, "load": statistics.median(times)}))
"""


def measure(
    tool: str, small: Path, path: Path, base_url: str, arguments: argparse.Namespace
) -> dict[str, float]:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _MEASURE,
            tool,
            str(small),
            str(path),
            base_url,
            str(arguments.size),
            str(arguments.sample),
            str(arguments.repeats),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{tool} replay failed:\n{done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=3000, help="interactions in the cassette")
    parser.add_argument("--sample", type=int, default=20, help="requests replayed")
    parser.add_argument("--repeats", type=int, default=5, help="timed loads (median)")
    arguments = parser.parse_args(argv)
    print(heading(f"{arguments.size:,} interactions, {arguments.sample} replayed"))
    with tempfile.TemporaryDirectory(prefix="replay-memory-") as temporary:
        folder = Path(temporary)
        (folder / "small").mkdir()
        small, large = build_workload(10), build_workload(arguments.size)
        # one server for both: vcrpy matches the port too (the small traffic opens the large)
        replies = {**small.replies, **large.replies}
        with loopback_server(replies, max_requests=2 * (10 + arguments.size)) as base_url:
            for workload, where in ((small, folder / "small"), (large, folder)):
                record_cassetter(workload, base_url, where / CASSETTER_FILE)
                record_vcrpy(workload, base_url, where / VCRPY_FILE)
                record_harness(workload, base_url, where / HARNESS_FILE)
        # The recording server is gone: a replay that misses fails instead of reaching it.
        rows = []
        for tool, file in TOOLS.items():
            path = folder / file
            found = measure(tool, folder / "small" / file, path, base_url, arguments)
            size = path.stat().st_size
            rows.append((tool, size, found["peak"], found["peak"] / size, found["load"]))
    print("\n| tool | file | peak memory | / file size | load |")
    print("|---|---|---|---|---|")
    for tool, size, peak, ratio, load in rows:
        print(
            f"| {tool} | {size / 2**20:.1f} MiB | {peak / 2**20:.1f} MiB | {ratio:.1f}x | "
            f"{load * 1e3:.0f} ms |"
        )
    ratio = rows[0][3]
    verdict = "PASS" if ratio <= TARGET else "FAIL"
    print(f"\nharness peak / file size: {ratio:.2f}x (target <= {TARGET:g}x): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
