"""host_stalls: op calls far slower than the same op on the same shapes, their excess per step.

The micro traces' answers are computed by hand in each docstring."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.analysis.host_stalls import compute_host_stalls
from tests.builders import TraceBuilder, kargs

SMALL = kargs({"Input Dims": [[8, 8], [8, 8]], "Input type": ["float", "float"]})
BIG = kargs({"Input Dims": [[512, 512], [512, 512]], "Input type": ["float", "float"]})


def _linear_add(b: TraceBuilder, t: int, add_us: int) -> None:
    """``aten::linear`` (self 20 µs) around an ``aten::add`` of ``add_us``."""
    b.op("aten::linear", ts=t, dur=add_us + 20, **SMALL)
    b.op("aten::add", ts=t + 10, dur=add_us, **SMALL)


def cpu_trace(b: TraceBuilder) -> None:
    """A CPU-only program, two steps of 20 ms (µs below):

    * 12 ``aten::add`` (8x8) of 10 µs, one of them (step 2) 5,000 µs, each inside an ``aten::linear`` of
      self 20 µs: the add's median 10 → 4,990 excess; the linear's self time is 20 in every call, the
      stall is its child's → none;
    * ``aten::mm`` 512x512 four calls of 5,000 and 8x8 eight of 10: two groups by shape, none stalled
      (by name only, the 5,000 µs calls would be 500x the median 10);
    * ``aten::relu`` 100 ... 600 µs: natural spread, median 350 → none;
    * ``aten::sigmoid`` five of 20 µs and one of 900: 45x, but 880 µs beyond: under the 1 ms floor → none;
    * one ``aten::expand`` (a view) of 3,000 µs in step 1: a metadata op in a group of one, its typical
      time at most 20 µs → 2,980 excess.

    Step 1 loses 2,980 µs (all in a view op), step 2 4,990: 3,985 a step, 19.9 % of the steps."""
    b.meta.pop("deviceProperties", None)
    b.step(1, 0, 20_000)
    b.step(2, 20_000, 20_000)
    for i in range(6):
        _linear_add(b, 100 + i * 200, 10)
    for i in range(5):
        _linear_add(b, 20_100 + i * 200, 10)
    _linear_add(b, 21_200, 5_000)
    for t in (3_000, 9_000, 28_000, 33_500):
        b.op("aten::mm", ts=t, dur=5_000, **BIG)
    for t in [14_500 + i * 100 for i in range(4)] + [38_600 + i * 100 for i in range(4)]:
        b.op("aten::mm", ts=t, dur=10, **SMALL)
    for t, d in ((15_000, 100), (15_300, 200), (15_600, 300), (26_300, 400), (26_800, 500), (27_400, 600)):
        b.op("aten::relu", ts=t, dur=d, **SMALL)
    for i in range(5):
        b.op("aten::sigmoid", ts=19_100 + i * 100, dur=20, **SMALL)
    b.op("aten::sigmoid", ts=39_000, dur=900, **SMALL)
    b.op("aten::expand", ts=16_000, dur=3_000, **SMALL)


def test_stalled_calls_and_their_excess_per_step(tmp_path: Path) -> None:
    b = TraceBuilder()
    cpu_trace(b)
    trace = b.load(tmp_path)
    r = compute_host_stalls(trace, 0)
    assert not r.has_device and r.shapes_recorded
    assert r.excess_ns.tolist() == [2_980_000, 4_990_000]
    assert r.on_path_ns.tolist() == r.excess_ns.tolist()  # CPU-only: the thread is the path
    assert r.metadata_ns.tolist() == [2_980_000, 0]
    assert r.stalled_calls == 2
    names = trace.strings.decode(trace.events["name"][r.stalled_rows])
    assert sorted(str(n) for n in names) == ["aten::add", "aten::expand"]
    assert r.groups.name == ("aten::add", "aten::expand")
    assert r.groups.excess_ns.tolist() == [4_990_000, 2_980_000]
    assert r.groups.typical_ns.tolist() == [10_000.0, 20_000.0]
    assert r.groups.shapes[0] == "[[8,8],[8,8]]"
    assert r.on_path_pct == pytest.approx(100 * 7_970 / 40_000)
    assert r.typical_on_path_ns() == pytest.approx(3_985_000)


def test_spread_and_small_excess_are_not_stalls(tmp_path: Path) -> None:
    """The same trace without the two stalled calls (the add at 10 µs, no expand): nothing."""
    b = TraceBuilder()
    cpu_trace(b)
    b.events = [e for e in b.events if not (e["name"] == "aten::expand" or (e.get("dur") in (5_000, 5_020)
                                            and e["name"] in ("aten::add", "aten::linear")))]
    _linear_add(b, 21_200, 10)
    r = compute_host_stalls(b.load(tmp_path), 0)
    assert r.excess_ns.tolist() == [0, 0] and r.stalled_calls == 0 and len(r.groups) == 0


def test_on_a_device_only_the_time_the_device_idles_is_lost(tmp_path: Path) -> None:
    """A GPU rank, three steps of 10 ms, five ``aten::add`` a step (self 20 µs: 30 with a 10 µs launch at
    their end); in step 2 the last one (at 14,100) takes 3,030 (own time 3,020: 3,000 beyond the median).
    A kernel launched before it runs over its first 1,510 µs: the device idles for 1,510 of its 3,020 µs of own time,
    half → 1,500 µs of the 3,000 lost on the step's path."""
    b = TraceBuilder()
    for s in range(3):
        b.step(s + 1, s * 10_000, 10_000)
        for i in range(5):
            t = s * 10_000 + 100 + i * 1_000
            long = s == 1 and i == 4
            dur = 3_030 if long else 30
            b.op("aten::add", ts=t, dur=dur, **SMALL)
            b.launch_kernel("add_kernel", launch_ts=t + dur - 15, launch_dur=10, ts=t + dur, dur=5)
    b.launch_kernel("long_kernel", launch_ts=13_950, launch_dur=10, ts=14_100, dur=1_510)  # busy 14,100-15,610
    r = compute_host_stalls(b.load(tmp_path), 0)
    assert r.has_device
    assert r.excess_ns.tolist() == [0, 3_000_000, 0]
    assert r.on_path_ns.tolist() == [0, 1_500_000, 0]
    assert np.array_equal(r.metadata_ns, np.zeros(3))
