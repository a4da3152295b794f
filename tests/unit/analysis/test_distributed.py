"""Distributed view of one rank: computation / communication / overlap / other, collective bandwidth."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.comm import CollType
from stepscope.analysis.distributed import bus_factor, compute_distributed
from tests.builders import TraceBuilder

US = 1000
COLL_ARGS = {"Collective name": "allreduce", "In msg nelems": 1000, "Out msg nelems": 1000, "dtype": "Float",
             "Group size": 4, "Process Group Name": "0"}
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"


def test_split_of_the_step_and_bandwidth(tmp_path: Path) -> None:
    """Step [0,100]; compute [10,50]; all-reduce of 1000 floats over 4 ranks [30,80].

    computation 50-30 = 20, communication 80-50 = 30, overlap 20, other 100-70 = 30;
    overlap ratio 20/50 = 40 %; S = 4000 B in 50 µs → algbw 0.08 GB/s, busbw × 2·3/4 = 0.12 GB/s.
    """
    b = TraceBuilder(rank=0, world_size=4)
    b.step(1, ts=0, dur=100)
    b.launch_kernel("sgemm", launch_ts=1, launch_dur=2, ts=10, dur=40)
    b.op("record_param_comms", ts=3, dur=5, **COLL_ARGS)
    b.launch_kernel(NCCL, launch_ts=4, launch_dur=2, ts=30, dur=50, stream=20)
    r = compute_distributed(b.load(tmp_path), 0)
    assert r.step.tolist() == [1]
    assert (r.computation_ns[0], r.communication_ns[0], r.overlap_ns[0], r.other_ns[0]) == (
        20 * US, 30 * US, 20 * US, 30 * US)
    assert r.overlap_ratio_pct == pytest.approx(40.0)
    assert (r.kernel_count, r.comm_kernel_count) == (2, 1)
    assert r.comm_bytes.tolist() == [4000]
    assert r.algbw_gbps[0] == pytest.approx(0.08)
    assert r.busbw_gbps[0] == pytest.approx(0.12)
    c = r.collectives
    assert (c.coll_type, c.pg_name, c.count.tolist(), c.bytes_total.tolist()) == (["allreduce"], ["0"], [1], [4000])
    assert c.busbw_gbps[0] == pytest.approx(0.12)
    # a single rank: the same collective is matched by size across steps (here itself): no wait
    assert (r.wait_ns.tolist(), r.transfer_ns.tolist()) == ([0], [50 * US])


def test_bus_factors_follow_nccl_tests() -> None:
    t = np.array([CollType.ALLREDUCE, CollType.ALLGATHER, CollType.REDUCE_SCATTER, CollType.ALLTOALL,
                  CollType.BROADCAST, CollType.SENDRECV], np.int32)
    f = bus_factor(t, np.full(6, 8, np.int32))
    assert f.tolist() == pytest.approx([1.75, 0.875, 0.875, 0.875, 1.0, 1.0])
    assert np.isnan(bus_factor(t[:1], np.array([-1], np.int32))[0])


def test_without_communication_it_is_not_applicable(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step(1, ts=0, dur=10)
    b.launch_kernel("sgemm", launch_ts=1, launch_dur=1, ts=2, dur=3)
    with pytest.raises(NotApplicable):
        compute_distributed(b.load(tmp_path), 0)
