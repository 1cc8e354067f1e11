"""Several `harness` commands at once, for the cost of one interpreter start:
`python harness_forks.py COMMANDS`, COMMANDS a JSON list of `[folder, [argument, ...]]`.

The harness is imported once, then each command runs in a child forked from this process (no
thread runs yet, so forking is safe), in its folder, with its stdout and stderr in the folder's
`stdout` and `stderr` files and Python's own Ctrl-C handling. Each child is a real `harness`
process from then on: it handles its signals and exits as `harness` would. On stdout, one line
per event, as it happens: `started INDEX PID` for each child, `exited PID CODE TIME` as each ends
(TIME is `time.monotonic()`, which every process on the machine shares), `done` at the end.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import time
from typing import Final

WARM: Final = (
    "harness.fuzz",
    "harness.scenarios.on_target",
    "harness.scenarios.reference",
    "harness.serve.server",
)
"""What every `harness fuzz` loads: loaded once here, not in each child."""


def main(commands: list[tuple[str, list[str]]]) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from harness.cli import main as harness

    for module in WARM:
        importlib.import_module(module)
    children: set[int] = set()
    for index, (folder, arguments) in enumerate(commands):
        pid = os.fork()
        if pid == 0:  # the child: `harness` itself, which ends the process with its exit code
            os.chdir(folder)
            for fd, name in ((1, "stdout"), (2, "stderr")):
                os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
            harness(arguments, prog_name="harness")
        children.add(pid)
        print(f"started {index} {pid}", flush=True)
    while children:
        pid, status = os.wait()
        children.discard(pid)
        print(f"exited {pid} {os.waitstatus_to_exitcode(status)} {time.monotonic()}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main([(folder, arguments) for folder, arguments in json.loads(sys.argv[1])])
