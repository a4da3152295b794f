"""A larger batch (``--batch FROM:TO``) on micro traces whose predicted steps are computed by hand (µs).

What grows is found from the recorded input shapes: an op with a dimension equal to the batch
size computes per sample; on the CPU its own time grows (its children without the dimension keep
theirs), on a GPU its kernels grow and its host time (dispatch, launch) does not. The DataLoader
fetches the larger batch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.whatif.batch import LargerBatch
from stepscope.analysis.whatif.options import batch_of, transforms_of
from stepscope.analysis.whatif.simulate import simulate
from stepscope.errors import UsageError
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder

US = 1000
DIMS = "Input Dims"


def _cpu(tmp_path: Path) -> Trace:
    """Step [0,100]: DataLoader [0,30]; aten::linear on a [32, 256] batch [30,70] with a weight
    transpose aten::t [32,36] inside it (no batch dimension); the optimizer's aten::add_ [70,90];
    untraced Python [90,100]. No device."""
    b = TraceBuilder(device=None)
    b.step(1, ts=0, dur=100)
    b.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts=0, dur=30)
    b.op("aten::linear", ts=30, dur=40, **{DIMS: [[32, 256], [256, 256], [256]]})
    b.op("aten::t", ts=32, dur=4, **{DIMS: [[256, 256]]})
    b.op("aten::add_", ts=70, dur=20, **{DIMS: [[256, 256], [256, 256], []]})
    return b.load(tmp_path)


def test_cpu_batch_doubles_the_loader_and_the_batch_ops_own_time(tmp_path: Path) -> None:
    """The DataLoader 30 → 60; aten::linear's own 36 µs → 72 (aten::t's 4 kept); the optimizer's 20
    and the untraced 10 kept: 60 + 72 + 4 + 20 + 10 = 166 µs."""
    w = simulate(_cpu(tmp_path), [LargerBatch(32, 2.0)])
    assert (w.ranks[0].predicted_ns // US).tolist() == [166]
    assert w.samples_factor == 2.0
    assert w.throughput_change_pct() == pytest.approx((2 * 100 / 166 - 1) * 100)


def test_a_dimension_of_another_size_is_not_the_batch(tmp_path: Path) -> None:
    """Told the batch is 64, no op has such a dimension: only the DataLoader grows (30 → 60)."""
    w = simulate(_cpu(tmp_path), [LargerBatch(64, 2.0)])
    assert (w.ranks[0].predicted_ns // US).tolist() == [130]


def _gpu(tmp_path: Path) -> Trace:
    """Step [0,100]: aten::linear on a [32, 256] batch [0,20] launches k1 (cudaLaunchKernel [5,8] →
    [10,60]); aten::add_ on a parameter [20,30] launches k2 ([22,25] → [60,70], queued behind k1);
    cudaStreamSynchronize [30,75] returns 5 after k2; host [75,100]."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.op("aten::linear", ts=0, dur=20, **{DIMS: [[32, 256], [256, 256]]})
    b.launch_kernel("gemm", launch_ts=5, launch_dur=3, ts=10, dur=50)
    b.op("aten::add_", ts=20, dur=10, **{DIMS: [[256], [256], []]})
    b.launch_kernel("add", launch_ts=22, launch_dur=3, ts=60, dur=10)
    b.add(ph="X", cat=b.RUNTIME_CAT, name="cudaStreamSynchronize", pid=b.pid, tid=b.tid, ts=30, dur=45, args={})
    return b.load(tmp_path)


def test_gpu_batch_doubles_the_kernels_of_batch_ops_not_their_host_time(tmp_path: Path) -> None:
    """gemm 50 → 100 µs: [10,110]; add (its op has no batch dimension) keeps 10: [110,120]; the sync
    returns 5 after it (125), the host's last 25 µs: 150. The ops' host time (dispatch) is kept."""
    w = simulate(_gpu(tmp_path), [LargerBatch(32, 2.0)])
    assert (w.ranks[0].predicted_ns // US).tolist() == [150]


def test_a_trace_without_shapes_is_refused(tmp_path: Path) -> None:
    b = TraceBuilder(device=None)
    b.step(1, ts=0, dur=100)
    b.op("aten::linear", ts=30, dur=40)
    with pytest.raises(NotApplicable, match="no input shapes"):
        simulate(b.load(tmp_path), [LargerBatch(32, 2.0)])


@pytest.mark.parametrize("text", ["32", "32:", ":64", "0:64", "32:x", "1:2000", "-1:2"])
def test_bad_batch_options_are_one_line_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match="--batch takes FROM:TO"):
        batch_of(text, "--batch")


def test_batch_option_first_among_the_changes() -> None:
    """A larger batch comes first, so remedies named with it apply to the larger batch's step."""
    changes = transforms_of(4, None, False, (), None, (), False, (), "32:96")
    assert changes[0] == LargerBatch(32, 3.0) and changes[1].name == "loader-workers"
