"""Two hand-made runs with hand-computed step breakdowns (µs in the trace, ms in the diff).

BASE, per 100 µs step (offset o = 100·(N−1)), N = 1, 2:

* DataLoader ``[o, o+40)``; ``aten::mm`` ``[o+40, o+60)`` launching ``sgemm`` ``[o+60, o+90)`` (launch
  ``[o+45, o+50)``); ``aten::add`` ``[o+60, o+70)`` launching ``add_kernel`` ``[o+90, o+95)`` (launch
  ``[o+62, o+64)``, under the sgemm kernel).
* breakdown: kernel 35, runtime 5, dataloader 40, cpu_exec 15 (mm minus its launch), other 5 = 100.

NEW, per 70 µs step (o = 70·(N−1)):

* DataLoader ``[o, o+10)``; ``aten::mm`` ``[o+10, o+30)`` → ``sgemm`` ``[o+30, o+60)`` (launch
  ``[o+15, o+20)``); ``aten::relu`` ``[o+30, o+35)`` → ``relu_kernel`` ``[o+60, o+62)`` (launch
  ``[o+31, o+33)``).
* breakdown: kernel 32, runtime 5, dataloader 10, cpu_exec 15, other 8 = 70.
"""

from __future__ import annotations

from pathlib import Path

from tests.builders import TraceBuilder

DL = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
US = 1e-3  # one µs in ms


def base_builder(steps: int = 2) -> TraceBuilder:
    b = TraceBuilder()
    for n in range(1, steps + 1):
        o = 100 * (n - 1)
        b.step(n, o, 100)
        b.op(DL, o, 40)
        b.op("aten::mm", o + 40, 20, **{"Input Dims": [[8, 8], [8, 8]]})
        b.launch_kernel("sgemm", o + 45, 5, o + 60, 30)
        b.op("aten::add", o + 60, 10)
        b.launch_kernel("add_kernel", o + 62, 2, o + 90, 5)
    return b


def new_builder(steps: int = 2, mm_dims: list[list[int]] | None = None) -> TraceBuilder:
    b = TraceBuilder()
    for n in range(1, steps + 1):
        o = 70 * (n - 1)
        b.step(n, o, 70)
        b.op(DL, o, 10)
        b.op("aten::mm", o + 10, 20, **{"Input Dims": mm_dims or [[8, 8], [8, 8]]})
        b.launch_kernel("sgemm", o + 15, 5, o + 30, 30)
        b.op("aten::relu", o + 30, 5)
        b.launch_kernel("relu_kernel", o + 31, 2, o + 60, 2)
    return b


def write_runs(tmp: Path) -> tuple[Path, Path]:
    return base_builder().write(tmp / "base.json"), new_builder().write(tmp / "new.json")
