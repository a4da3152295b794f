"""Launch links from flow events where GPU activities carry no correlation id (model/flow_links.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stepscope.model.trace import Trace
from tests.builders import TraceBuilder


def _names(trace: Trace, rows: np.ndarray) -> list[str]:
    return [trace.strings[int(n)] for n in trace.events["name"][rows]]


def _launcher_of(trace: Trace, kernel: str) -> str:
    ev = trace.events
    (row,) = np.flatnonzero(ev["name"] == trace.strings.find(kernel))
    return "" if ev["launch"][row] < 0 else trace.strings[int(ev["name"][ev["launch"][row]])]


def test_flows_link_what_the_args_do_not(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step(1, ts=0, dur=200)
    b.op("aten::mm", ts=5, dur=30)
    # the launch, and a zero-length call that starts with it: the flow starts at both (the longer is the launch)
    b.add(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", pid=b.pid, tid=b.tid, ts=10, dur=4, args={})
    b.add(ph="X", cat="cuda_runtime", name="cudaPeekAtLastError", pid=b.pid, tid=b.tid, ts=10, dur=0, args={})
    b.gpu("gemm_no_corr", ts=40, dur=20)
    b.flow(7, ts=10, phase="s")
    b.flow(7, ts=40, phase="f", pid=0, tid=7)
    # a recorded link is kept as it is, whatever flows say
    b.launch_kernel("recorded", launch_ts=50, launch_dur=3, ts=70, dur=10)
    b.flow(8, ts=20, phase="s")  # (inside aten::mm, on no runtime call: links nothing)
    b.flow(8, ts=70, phase="f", pid=0, tid=7)
    # an id started twice on the rank says nothing sure: its kernel stays unlinked
    b.add(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", pid=b.pid, tid=b.tid, ts=100, dur=4, args={})
    b.add(ph="X", cat="cuda_runtime", name="cudaMemsetAsync", pid=b.pid, tid=b.tid, ts=110, dur=4, args={})
    b.gpu("twice", ts=120, dur=5)
    b.flow(9, ts=100, phase="s")
    b.flow(9, ts=110, phase="s")
    b.flow(9, ts=120, phase="f", pid=0, tid=7)
    # a flow of another category with the same id as a launch's binds no launch
    b.gpu("other_cat", ts=130, dur=5)
    b.flow(7, ts=130, phase="f", pid=0, tid=7, cat="fwdbwd")
    trace = b.load(tmp_path)
    assert _launcher_of(trace, "gemm_no_corr") == "cudaLaunchKernel"
    assert _launcher_of(trace, "recorded") == "cudaLaunchKernel"
    assert _launcher_of(trace, "twice") == "" and _launcher_of(trace, "other_cat") == ""
    ev = trace.events
    (k,) = np.flatnonzero(ev["name"] == trace.strings.find("gemm_no_corr"))
    assert _names(trace, np.array([ev["op"][k]])) == ["aten::mm"]  # the op that launched it, through the link
    (d,) = [d for d in trace.diagnostics if d.name == "launch-linked-by-flow"]
    assert d.count == 1 and d.severity == "info"


def test_a_trace_with_correlation_ids_is_left_as_it_is(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("k", launch_ts=10, launch_dur=3, ts=20, dur=10)
    b.flow(1001, ts=10, phase="s")
    b.flow(1001, ts=20, phase="f", pid=0, tid=7)
    trace = b.load(tmp_path)
    assert _launcher_of(trace, "k") == "cudaLaunchKernel"
    assert not [d for d in trace.diagnostics if d.name == "launch-linked-by-flow"]


def test_one_call_that_launched_several_activities_links_them_all(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.add(ph="X", cat="cuda_runtime", name="cudaGraphLaunch", pid=b.pid, tid=b.tid, ts=10, dur=5, args={})
    b.gpu("node_a", ts=20, dur=5)
    b.gpu("node_b", ts=30, dur=5)
    b.flow(3, ts=10, phase="s")
    b.flow(3, ts=20, phase="f", pid=0, tid=7)
    b.flow(3, ts=30, phase="f", pid=0, tid=7)
    trace = b.load(tmp_path)
    assert _launcher_of(trace, "node_a") == _launcher_of(trace, "node_b") == "cudaGraphLaunch"
    (d,) = [d for d in trace.diagnostics if d.name == "launch-linked-by-flow"]
    assert d.count == 2


def test_no_new_id_above_the_bits_the_launch_link_keys_on(tmp_path: Path) -> None:
    """A recorded id at the top of the 44 bits the launch link keys on leaves no room for new ones
    that could not collide: the flow-only kernel stays unlinked, the recorded link stays."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.add(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", pid=b.pid, tid=b.tid, ts=5, dur=2,
          args={"correlation": (1 << 44) - 2})
    b.gpu("recorded", ts=8, dur=2, corr=(1 << 44) - 2)
    b.add(ph="X", cat="cuda_runtime", name="cudaMemsetAsync", pid=b.pid, tid=b.tid, ts=20, dur=2, args={})
    b.gpu("flow_only", ts=30, dur=2)
    b.flow(5, ts=20, phase="s")
    b.flow(5, ts=30, phase="f", pid=0, tid=7)
    trace = b.load(tmp_path)
    assert _launcher_of(trace, "recorded") == "cudaLaunchKernel" and _launcher_of(trace, "flow_only") == ""
