"""``python -m tests.fuzz --n 10000 --jobs 2 --out DIR --seed 1``: the long fuzz run (docs/hardening.md)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tests.fuzz.cases import COMMANDS, FORMATS
from tests.fuzz.runner import merge, render, run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    ap.add_argument("--n", type=int, default=1000, help="inputs to run")
    ap.add_argument("--seed", type=int, default=1, help="run seed: the same seed and index give the same input")
    ap.add_argument("--start", type=int, default=0, help="first case index (to run a long run in chunks)")
    ap.add_argument("--jobs", type=int, default=2, help="drivers running at once")
    ap.add_argument("--out", type=Path, default=None, help="folder for results.jsonl, summary.json, crashes/")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before an invocation is a hang")
    ap.add_argument("--formats", nargs="*", choices=FORMATS, default=None)
    ap.add_argument("--commands", nargs="*", choices=COMMANDS, default=None)
    ap.add_argument("--subprocess", action="store_true", help="one `python -m stepscope` per input (slow)")
    ap.add_argument("--nice", type=int, default=10, help="niceness of the run (the machine is shared)")
    ap.add_argument("--merge", type=Path, nargs="+", default=None, metavar="OUT",
                    help="print one summary of the chunks run into these folders (runs nothing)")
    args = ap.parse_args(argv)
    if args.merge:
        summary = merge(args.merge)
        print(render(summary))
        return 0
    if args.out is None:
        ap.error("--out is required")
    os.nice(args.nice)
    summary = run(args.n, args.seed, args.jobs, args.out, args.timeout, args.start, args.subprocess,
                  args.formats, args.commands)
    print(render(summary))
    bad = summary["outcomes"].get("crash", 0) + summary["outcomes"].get("hang", 0)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
