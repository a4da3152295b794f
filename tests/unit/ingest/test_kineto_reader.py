"""The Kineto reader on hand-written micro traces whose answers can be computed by hand:
time resolution, old and new schemas, nesting, launch / op links, steps, memory, counters, flows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.model import derive
from stepscope.model.schema import EventKind, MemcpyKind, TrackKind
from stepscope.model.trace import Trace
from tests.builders import OldTraceBuilder, RawNumber, TraceBuilder, kargs, load_ranks

US = 1000  # ns per µs


def row(trace: Trace, name: str) -> int:
    """The one event row named ``name``."""
    rows = np.flatnonzero(trace.names(trace.events["name"]) == name)
    assert len(rows) == 1, f"{len(rows)} events named {name!r}"
    return int(rows[0])


def col(trace: Trace, column: str, name: str) -> int:
    return int(trace.events[column][row(trace, name)])


# ---- time resolution ----------------------------------------------------------------------------

def test_ns_resolution_keeps_every_digit(tmp_path: Path) -> None:
    """Fractional µs on large absolute values (HTA's ns traces): float64 would round to 0.25 µs."""
    b = TraceBuilder()
    b.meta.update(displayTimeUnit="ns", baseTimeNanoseconds=1712195495000000000)
    b.op("a", RawNumber("1712195495519689.047"), RawNumber("1.5"))
    b.op("b", RawNumber("1712195495519689.048"), RawNumber("0.001"), tid=2)
    b.op("c", RawNumber("1712195495519689.9"), 2, tid=3)
    b.op("d", 1712195495519690, 2, tid=4)
    trace = b.load(tmp_path)
    assert col(trace, "ts_ns", "a") == 1712195495519689047
    assert col(trace, "ts_ns", "b") == 1712195495519689048  # 1 ns after a: still distinct
    assert col(trace, "ts_ns", "c") == 1712195495519689900
    assert col(trace, "ts_ns", "d") == 1712195495519690000
    assert col(trace, "dur_ns", "a") == 1500
    assert col(trace, "dur_ns", "b") == 1
    assert trace.ranks[0].time_base_ns == 1712195495000000000


@pytest.mark.parametrize("bad_ts", [[1712195495519689, 2], {"us": 1712195495519689}])
def test_ts_that_is_a_list_or_an_object_drops_the_event_with_a_count(tmp_path: Path, bad_ts: object) -> None:
    """Fractional ts make the reader keep ts undecoded; a list or object ts there crashed in
    ``ts_to_ns`` with a ValueError (issue 21): the event is dropped and counted."""
    b = TraceBuilder()
    b.op("a", RawNumber("1712195495519689.047"), 1)
    b.add(ph="X", cat="cpu_op", name="bad", pid=100, tid=100, ts=bad_ts, dur=1)
    b.op("c", RawNumber("1712195495519690.5"), 1)
    trace = b.load(tmp_path)
    assert sorted(trace.names(trace.events["name"]).tolist()) == ["a", "c"]
    assert col(trace, "ts_ns", "c") == 1712195495519690500
    assert {d.name: d.count for d in trace.diagnostics}.get("event-missing-ts") == 1


def test_ns_resolution_when_fractions_appear_late(tmp_path: Path) -> None:
    b = TraceBuilder()
    for i in range(2500):
        b.op("early", 1712195495519000 + i, 1)
    b.op("late", RawNumber("1712195495519689.047"), 1, tid=9)
    trace = b.load(tmp_path)
    assert col(trace, "ts_ns", "late") == 1712195495519689047


def test_us_resolution_integers(tmp_path: Path) -> None:
    b = OldTraceBuilder()
    b.op("aten::empty", 1623142623460111, 25)
    b.op("aten::zeros", 1623142623460137, 3)
    trace = b.load(tmp_path)
    assert col(trace, "ts_ns", "aten::empty") == 1623142623460111000
    assert col(trace, "dur_ns", "aten::empty") == 25000
    assert col(trace, "ts_ns", "aten::zeros") - col(trace, "ts_ns", "aten::empty") == 26000


def test_small_fractional_us(tmp_path: Path) -> None:
    """Relative µs with a fraction (ns traces without an absolute base) convert exactly too."""
    b = TraceBuilder()
    b.op("x", 12.345, 0.5)
    b.op("y", 4458676522690.655, 156.777, tid=2)
    trace = b.load(tmp_path)
    assert col(trace, "ts_ns", "x") == 12345 and col(trace, "dur_ns", "x") == 500
    assert col(trace, "ts_ns", "y") == 4458676522690655 and col(trace, "dur_ns", "y") == 156777


# ---- the canonical micro trace (new schema) ---------------------------------------------------

def _micro(b: TraceBuilder) -> TraceBuilder:
    """Two steps on one thread, hand-computable nesting, launches, an orphan kernel, memory (µs).

    ProfilerStep#1 [0, 1000)          ProfilerStep#2 [1000, 2000)
      A [10, 510) ext 1                  E [1100, 1200) ext 77
        B [20, 220)                        cudaMemcpyAsync [1120, 1130) → memcpy [1400, 1450)
          cudaLaunchKernel [50, 60) → K1 [300, 400)
          C [100, 150)                   K4 [1600, 1650): no runtime call, External id 77
        D [300, 400)
          cudaLaunchKernel2 [350, 360) → K2 [1050, 1450): ends after step 1's host end
    memory at 5 (step 1 only), 120 (in C), 250 (in A, between B and D), 2500 (outside everything)
    """
    b.thread_name("python main")
    b.step(1, 0, 1000)
    b.op("A", 10, 500, **kargs({"External id": 1}))
    b.op("B", 20, 200)
    b.launch_kernel("K1", launch_ts=50, launch_dur=10, ts=300, dur=100, runtime="cudaLaunchKernel",
                    grid=[4, 2, 1], block=[128, 1, 1], **kargs({"registers per thread": 32}))
    b.op("C", 100, 50)
    b.op("D", 300, 100)
    b.launch_kernel("K2", launch_ts=350, launch_dur=10, ts=1050, dur=400, runtime="cudaLaunchKernel2")
    b.step(2, 1000, 1000)
    b.op("E", 1100, 100, **kargs({"External id": 77}))
    b.launch_kernel("Memcpy HtoD (Pageable -> Device)", launch_ts=1120, launch_dur=10, ts=1400, dur=50,
                    runtime="cudaMemcpyAsync", cat="gpu_memcpy", bytes=4096)
    b.gpu("K4", 1600, 50, corr=999_999, **kargs({"External id": 77}))
    b.memory(5, 512, total_allocated=512, total_reserved=2048, addr=11)  # in step 1 only
    b.memory(120, 1024, total_allocated=1536, total_reserved=2048, addr=12)  # in C
    b.memory(250, -512, total_allocated=1024, total_reserved=2048, addr=11)  # in A (between B and D)
    b.memory(2500, 64, total_allocated=1088, total_reserved=2048, addr=13)  # outside everything
    return b


@pytest.fixture
def micro(tmp_path: Path) -> Trace:
    return _micro(TraceBuilder()).load(tmp_path)


def test_kinds_new_schema(micro: Trace) -> None:
    assert col(micro, "kind", "A") == EventKind.CPU_OP
    assert col(micro, "kind", "ProfilerStep#1") == EventKind.USER_ANNOTATION
    assert col(micro, "kind", "cudaLaunchKernel") == EventKind.RUNTIME
    assert col(micro, "kind", "K1") == EventKind.KERNEL
    assert col(micro, "kind", "Memcpy HtoD (Pageable -> Device)") == EventKind.MEMCPY
    assert len(micro.events) == 2 + 5 + 3 + 4  # steps, ops A-E, runtime calls, GPU activities
    assert not micro.diagnostics


def test_nesting_parent_depth_self(micro: Trace) -> None:
    parent = {n: (micro.events["parent"][row(micro, n)]) for n in ("ProfilerStep#1", "A", "B", "C", "D")}
    assert parent["ProfilerStep#1"] == -1
    assert parent["A"] == row(micro, "ProfilerStep#1")
    assert parent["B"] == row(micro, "A") and parent["D"] == row(micro, "A")
    assert parent["C"] == row(micro, "B")
    assert col(micro, "parent", "cudaLaunchKernel") == row(micro, "B")
    assert col(micro, "parent", "E") == row(micro, "ProfilerStep#2")
    depth = {n: col(micro, "depth", n) for n in ("ProfilerStep#1", "A", "B", "C", "D", "cudaLaunchKernel")}
    assert depth == {"ProfilerStep#1": 0, "A": 1, "B": 2, "C": 3, "D": 2, "cudaLaunchKernel": 3}
    self_us = {n: col(micro, "self_ns", n) // US for n in ("ProfilerStep#1", "A", "B", "C", "D")}
    assert self_us == {"ProfilerStep#1": 500, "A": 200, "B": 140, "C": 50, "D": 90}
    assert col(micro, "parent", "K1") == -1 and col(micro, "self_ns", "K1") == 100 * US


def test_ranks_written_out_of_order_load_in_sort_order_and_nest(tmp_path: Path) -> None:
    builders = []
    for rank in (1, 0):  # files found in either order; events written latest first, threads interleaved
        b = TraceBuilder(rank=rank, world_size=2)
        b.op(f"inner{rank}", 20, 10, tid=200)
        b.op(f"outer{rank}", 10, 50, tid=200)
        b.op(f"other{rank}", 5, 100, tid=100)
        b.op(f"same_start{rank}", 10, 30, tid=200)
        builders.append(b)
    trace = load_ranks(builders, tmp_path)
    ev = trace.events
    assert derive.time_order(ev["track"], ev["ts_ns"], ev["dur_ns"]) is None
    assert trace.ranks[0].rank == 0 and ev["rank"].tolist() == sorted(ev["rank"].tolist())
    for r in (0, 1):
        assert col(trace, "parent", f"same_start{r}") == row(trace, f"outer{r}")
        assert col(trace, "parent", f"inner{r}") == row(trace, f"same_start{r}")
        assert col(trace, "depth", f"inner{r}") == 2 and col(trace, "depth", f"other{r}") == 0
        assert col(trace, "self_ns", f"outer{r}") == 20 * US


def test_runtime_kernel_link_by_correlation(micro: Trace) -> None:
    assert col(micro, "launch", "K1") == row(micro, "cudaLaunchKernel")
    assert col(micro, "launch", "K2") == row(micro, "cudaLaunchKernel2")
    assert col(micro, "launch", "Memcpy HtoD (Pageable -> Device)") == row(micro, "cudaMemcpyAsync")
    assert col(micro, "launch", "K4") == -1  # its correlation id matches no runtime call
    assert col(micro, "corr", "K1") == col(micro, "corr", "cudaLaunchKernel") >= 0


def test_op_link(micro: Trace) -> None:
    assert col(micro, "op", "cudaLaunchKernel") == row(micro, "B")  # innermost enclosing cpu_op
    assert col(micro, "op", "K1") == row(micro, "B")  # the op of its launch
    assert col(micro, "op", "K2") == row(micro, "D")
    assert col(micro, "op", "Memcpy HtoD (Pageable -> Device)") == row(micro, "E")
    assert col(micro, "op", "K4") == row(micro, "E")  # no launch: by External id
    assert col(micro, "ext_id", "K4") == 77


def test_steps_stretched_to_last_gpu_activity(micro: Trace) -> None:
    st = micro.steps
    assert st["step"].tolist() == [1, 2]
    assert st["start_ns"].tolist() == [0, 1000 * US]
    assert st["host_end_ns"].tolist() == [1000 * US, 2000 * US]
    assert st["end_ns"].tolist() == [1450 * US, 2000 * US]  # K2, launched in step 1, ends at 1450
    assert st["row"].tolist() == [row(micro, "ProfilerStep#1"), row(micro, "ProfilerStep#2")]
    step = {n: col(micro, "step", n) for n in ("A", "C", "cudaLaunchKernel2", "K1", "K2", "E",
                                               "Memcpy HtoD (Pageable -> Device)", "K4")}
    # K2 starts in step 2's host window but belongs to step 1, which launched it
    assert step == {"A": 1, "C": 1, "cudaLaunchKernel2": 1, "K1": 1, "K2": 1, "E": 2,
                    "Memcpy HtoD (Pageable -> Device)": 2, "K4": 2}


def test_kernel_and_copy_args(micro: Trace) -> None:
    k1 = row(micro, "K1")
    ev = micro.events
    assert (ev["grid_x"][k1], ev["grid_y"][k1], ev["grid_z"][k1]) == (4, 2, 1)
    assert (ev["block_x"][k1], ev["block_y"][k1], ev["block_z"][k1]) == (128, 1, 1)
    assert ev["regs"][k1] == 32
    cp = row(micro, "Memcpy HtoD (Pageable -> Device)")
    assert ev["bytes"][cp] == 4096
    assert ev["copy_kind"][cp] == MemcpyKind.H2D
    assert ev["pageable"][cp] == 1


def test_tracks(micro: Trace) -> None:
    tr = micro.tracks
    gpu = micro.events["track"][row(micro, "K1")]
    cpu = micro.events["track"][row(micro, "A")]
    assert tr["kind"][gpu] == TrackKind.GPU_STREAM
    assert (tr["device"][gpu], tr["stream"][gpu]) == (0, 7)
    assert tr["kind"][cpu] == TrackKind.CPU_THREAD
    assert micro.strings.decode(np.array([tr["name"][cpu]]))[0] == "python main"
    assert micro.events["track"][row(micro, "K4")] == gpu


def test_memory_events_attached_to_enclosing_op(micro: Trace) -> None:
    mem = micro.memory
    assert mem["ts_ns"].tolist() == [5 * US, 120 * US, 250 * US, 2500 * US]
    assert mem["bytes"].tolist() == [512, 1024, -512, 64]
    assert mem["total_allocated"].tolist() == [512, 1536, 1024, 1088]
    assert mem["total_reserved"].tolist() == [2048] * 4
    assert mem["addr"].tolist() == [11, 12, 11, 13]
    assert mem["op"].tolist() == [row(micro, "ProfilerStep#1"), row(micro, "C"), row(micro, "A"), -1]
    assert mem["device_type"].tolist() == [1] * 4


def test_memory_events_attach_to_ops_of_their_own_thread(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("main_outer", 0, 100, tid=1)
    b.op("main_inner", 10, 20, tid=1)
    b.op("bwd_outer", 0, 100, tid=2)  # the same times on another thread
    b.op("bwd_inner", 40, 20, tid=2)
    b.memory(15, 8, 8, 64, tid=1)  # in main_inner
    b.memory(15, 8, 16, 64, tid=2)  # in bwd_outer only
    b.memory(45, 8, 24, 64, tid=2)  # in bwd_inner
    b.memory(45, 8, 32, 64, tid=1)  # in main_outer only
    b.memory(150, 8, 40, 64, tid=2)  # after everything
    trace = b.load(tmp_path)
    mem = trace.memory
    got = {int(a): int(o) for a, o in zip(mem["total_allocated"].tolist(), mem["op"].tolist())}
    assert got == {8: row(trace, "main_inner"), 16: row(trace, "bwd_outer"), 24: row(trace, "bwd_inner"),
                   32: row(trace, "main_outer"), 40: -1}


def test_rank_metadata(tmp_path: Path) -> None:
    b = TraceBuilder(rank=3, world_size=8)
    b.op("x", 0, 1)
    trace = b.load(tmp_path)
    assert trace.rank_ids == [3]
    info = trace.rank_info(3)
    assert (info.world_size, info.backend) == (8, "nccl")
    assert info.devices[0].name == "Tesla V100-SXM2-32GB" and info.devices[0].sm_count == 80
    assert info.platform == "cpu"  # no GPU activity in this file


# ---- old (2021, PyTorch 1.9) schema ---------------------------------------------------------

def test_old_schema(tmp_path: Path) -> None:
    b = OldTraceBuilder()
    b.step(5, 0, 1000)
    b.op("aten::conv2d", 10, 500, **kargs({"External id": 42}))
    b.launch_kernel("implicit_convolve_sgemm", launch_ts=20, launch_dur=5, ts=600, dur=700, ext_id=42,
                    runtime="cudaLaunchKernel")
    b.launch_kernel("Memset (Device)", launch_ts=30, launch_dur=5, ts=1400, dur=10, cat="Memset",
                    runtime="cudaMemsetAsync", ext_id=42, bytes=128)
    b.launch_kernel("Memcpy DtoH (Device -> Pageable)", launch_ts=40, launch_dur=5, ts=1500, dur=10,
                    cat="Memcpy", runtime="cudaMemcpyAsync", ext_id=42, bytes=64)
    b.flow(1001, 20, "s")
    b.flow(1001, 600, "f", pid=0, tid="stream 7")
    trace = b.load(tmp_path)
    assert col(trace, "kind", "ProfilerStep#5") == EventKind.CPU_OP
    assert col(trace, "kind", "aten::conv2d") == EventKind.CPU_OP
    assert col(trace, "kind", "cudaLaunchKernel") == EventKind.RUNTIME
    assert col(trace, "kind", "implicit_convolve_sgemm") == EventKind.KERNEL
    assert col(trace, "kind", "Memset (Device)") == EventKind.MEMSET
    assert col(trace, "kind", "Memcpy DtoH (Device -> Pageable)") == EventKind.MEMCPY
    assert col(trace, "copy_kind", "Memcpy DtoH (Device -> Pageable)") == MemcpyKind.D2H
    assert col(trace, "ext_id", "implicit_convolve_sgemm") == 42  # "external id", lower case
    assert col(trace, "ext_id", "cudaLaunchKernel") == 42
    assert col(trace, "ext_id", "aten::conv2d") == 42  # "External id" on Operator
    assert col(trace, "launch", "implicit_convolve_sgemm") == row(trace, "cudaLaunchKernel")
    assert col(trace, "op", "implicit_convolve_sgemm") == row(trace, "aten::conv2d")
    assert trace.steps["step"].tolist() == [5]
    assert trace.steps["end_ns"].tolist() == [1510 * US]
    gpu = trace.events["track"][row(trace, "implicit_convolve_sgemm")]
    assert trace.tracks["kind"][gpu] == TrackKind.GPU_STREAM and trace.tracks["stream"][gpu] == 7
    assert len(trace.flows) == 2 and set(trace.flows["flow_id"].tolist()) == {1001}
    assert trace.ranks[0].platform == "cuda"
    assert not trace.diagnostics


# ---- counters and flows -----------------------------------------------------------------------

def test_counters_value_series(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("x", 0, 10)
    b.counter("stepscope.cpu_pct", 1, value=37.5)
    b.counter("stepscope.cpu_pct", 2.5, value=40.0)
    trace = b.load(tmp_path)
    c = trace.counters
    assert c["ts_ns"].tolist() == [1000, 2500]
    assert c["value"].tolist() == [37.5, 40.0]
    assert set(trace.names(c["name"]).tolist()) <= {"stepscope.cpu_pct", "stepscope.cpu_pct.value"}


def test_counters_several_series(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.counter("gpu", 1, util=7.0, mem=3.0)
    trace = b.load(tmp_path)
    got = dict(zip(trace.names(trace.counters["name"]).tolist(), trace.counters["value"].tolist()))
    assert got == {"gpu.util": 7.0, "gpu.mem": 3.0}


def test_flows(tmp_path: Path) -> None:
    b = TraceBuilder()
    rt, _k = b.launch_kernel("k", launch_ts=10, launch_dur=5, ts=20, dur=5)
    corr = rt["args"]["correlation"]
    b.flow(corr, 10, "s")
    b.flow(corr, 20, "f", pid=0, tid=7)
    b.flow(5, 30, "s", cat="fwdbwd")
    b.flow(5, 40, "f", cat="fwdbwd")
    trace = b.load(tmp_path)
    fl = trace.flows
    order = np.lexsort((fl["ts_ns"],))
    assert fl["ts_ns"][order].tolist() == [10 * US, 20 * US, 30 * US, 40 * US]
    assert fl["flow_id"][order].tolist() == [corr, corr, 5, 5]
    assert fl["phase"][order].tolist() == [ord("s"), ord("f"), ord("s"), ord("f")]
    assert trace.names(fl["cat"][order]).tolist() == ["ac2g", "ac2g", "fwdbwd", "fwdbwd"]
    assert fl["track"][order][1] == trace.events["track"][row(trace, "k")]


# ---- out-of-range kernel args ---------------------------------------------------------------------

@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_out_of_range_kernel_args_are_not_wrapped(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.gpu("huge_grid", 0, 10, grid=[10**12, 1, 1], block=[128, 1, 1])
    b.gpu("huge_bps", 20, 10, **kargs({"blocks per SM": 1e300}))
    trace = b.load(tmp_path)
    assert col(trace, "grid_x", "huge_grid") >= 0, "an out-of-range grid must not wrap to a negative value"
    assert trace.diagnostics, "the out-of-range values were not counted"
