"""The in-process driver: one Python process that runs many CLI invocations, each as the command line
would end.

Protocol: one JSON object a line on stdin (``{"argv": [...], "timeout": 60}``), one JSON object a
line back on the file descriptor given as ``argv[1]`` (``{"rc": int, "stderr": str, "secs": float}``).
Each invocation calls :func:`stepscope.cli.main` as ``python -m stepscope`` does, with stdout
thrown away (file descriptor 1 too, for C libraries) and stderr captured; ``SystemExit`` gives the
exit code, any other exception is printed as the interpreter would print it (a traceback, exit
code 1). Python's warnings are reset for each invocation, so each shows as it would in a fresh
process. A hang is caught by ``faulthandler``: past the timeout it writes every thread's stack to
the file given as ``argv[2]`` and ends this process with exit code 1; the runner sees the pipe
close and calls it a hang.
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import json
import os
import sys
import time
import traceback
import warnings
from typing import Any


def run_one(argv: list[str], timeout: float, hang_file: Any) -> dict[str, Any]:
    from stepscope.cli import main

    err = io.StringIO()
    hang_file.seek(0)
    hang_file.truncate()
    faulthandler.dump_traceback_later(timeout, exit=True, file=hang_file)
    t0 = time.perf_counter()
    rc: int
    try:
        with open(os.devnull, "w") as out, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings():
            warnings.simplefilter("default")
            try:
                main(argv)
                rc = 0
            except SystemExit as exc:
                code = exc.code
                if code is None:
                    rc = 0
                elif isinstance(code, int):
                    rc = code
                else:
                    print(code, file=sys.stderr)
                    rc = 1
            except BaseException:  # what the interpreter does with an exception nobody caught
                traceback.print_exc(file=err)
                rc = 1
    finally:
        faulthandler.cancel_dump_traceback_later()
    return {"rc": rc, "stderr": err.getvalue(), "secs": time.perf_counter() - t0}


def main() -> None:
    reply = os.fdopen(int(sys.argv[1]), "w", buffering=1)
    hang_file = open(sys.argv[2], "w+")  # noqa: SIM115 - open for the process's life
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # C-level prints (duckdb's table) go nowhere, as the protocol has its own pipe
    import stepscope.cli  # noqa: F401 - imported once, before the first timed run

    for line in sys.stdin:
        job = json.loads(line)
        res = run_one(job["argv"], float(job["timeout"]), hang_file)
        reply.write(json.dumps(res) + "\n")


if __name__ == "__main__":
    main()
