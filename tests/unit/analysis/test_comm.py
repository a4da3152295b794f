"""The communication classification table: by kernel name, by launching op, sizes from three sources."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stepscope.analysis._memo import Memo
from stepscope.analysis.comm import CollType, classify, collective_of, dims_nelems, dtype_bytes, is_comm_kernel_name
from tests.builders import TraceBuilder


def test_names_of_libraries_and_collectives() -> None:
    assert is_comm_kernel_name("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)")
    assert is_comm_kernel_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t")
    assert is_comm_kernel_name("rccl_AllReduce_kernel")
    assert is_comm_kernel_name("hcom_allReduce__123")
    assert is_comm_kernel_name("gloo::allreduce")
    assert is_comm_kernel_name("void vllm::cross_device_reduce_1stage<float, 8>")
    assert not is_comm_kernel_name("void at::native::vectorized_elementwise_kernel<4>")
    assert not is_comm_kernel_name("reduce_kernel<512, 1>")  # a plain reduction is not a collective
    assert collective_of("nccl:all_to_all") == CollType.ALLTOALL
    assert collective_of("c10d::_reduce_scatter_base_") == CollType.REDUCE_SCATTER
    assert collective_of("ncclKernel_Broadcast_RING_LL_Sum_int8_t") == CollType.BROADCAST
    assert collective_of("record_param_comms") == CollType.OTHER


def test_size_parsers() -> None:
    assert dims_nelems("[[6144]]") == 6144
    assert dims_nelems("[[2, 3], [4]]") == 10
    assert dims_nelems("[[], []]") == -1
    assert dtype_bytes("Float") == 4
    assert dtype_bytes('["c10::BFloat16", ""]') == 2
    assert dtype_bytes("mystery") == -1


ALLGATHER_ARGS = {"Collective name": "allgather", "In msg nelems": 100, "Out msg nelems": 400, "dtype": "Half",
                  "Group size": 4, "Process Group Name": "7"}


def test_sizes_from_the_kernel_own_args(tmp_path: Path) -> None:
    b = TraceBuilder(rank=0, world_size=4)
    b.step(1, ts=0, dur=100)
    b.launch_kernel("ncclDevKernel_AllGather_RING_LL", launch_ts=2, launch_dur=1, ts=10, dur=10, stream=20,
                    **ALLGATHER_ARGS)
    trace = b.load(tmp_path)
    c = classify(trace)
    k = int(np.flatnonzero(c.is_comm)[0])
    assert (c.in_bytes[k], c.out_bytes[k], c.group_size[k]) == (200, 800, 4)


def test_kernels_by_name_by_op_and_copies_inside_c10d_ops(tmp_path: Path) -> None:
    b = TraceBuilder(rank=0, world_size=4)
    b.step(1, ts=0, dur=200)
    # 1) an NCCL kernel launched inside record_param_comms, which carries the sizes
    b.op("record_param_comms", ts=1, dur=3, **ALLGATHER_ARGS)
    b.launch_kernel("ncclDevKernel_AllGather_RING_LL", launch_ts=2, launch_dur=1, ts=10, dur=10, stream=20)
    # 2) a custom all-to-all kernel known only by the nccl:all_to_all annotation that launched it
    b.op("record_param_comms", ts=20, dur=20)
    b.op("nccl:all_to_all", ts=21, dur=10, cat="user_annotation", **{"Input Dims": [[6144]], "Input type": ["float"]})
    b.launch_kernel("my_fast_a2a_kernel", launch_ts=22, launch_dur=2, ts=30, dur=10, stream=20)
    # 3) a copy kernel launched by aten::copy_ inside a c10d op is computation
    b.op("c10d::allgather_", ts=50, dur=20)
    b.op("aten::copy_", ts=51, dur=10)
    b.launch_kernel("void at::native::elementwise_kernel<copy>", launch_ts=52, launch_dur=2, ts=60, dur=5)
    trace = b.load(tmp_path)
    ev = trace.events
    c = classify(trace)
    kernels = np.flatnonzero(ev["kind"] == 6)
    names = [str(trace.strings[int(i)]) for i in ev["name"][kernels]]
    comm = dict(zip(names, c.is_comm[kernels].tolist()))
    assert comm == {"ncclDevKernel_AllGather_RING_LL": True, "my_fast_a2a_kernel": True,
                    "void at::native::elementwise_kernel<copy>": False}
    nccl, custom = kernels[names.index("ncclDevKernel_AllGather_RING_LL")], kernels[names.index("my_fast_a2a_kernel")]
    assert c.coll_type[nccl] == CollType.ALLGATHER and not c.by_op[nccl]
    assert (c.in_bytes[nccl], c.out_bytes[nccl], c.group_size[nccl]) == (200, 800, 4)
    assert trace.strings[int(c.pg_name[nccl])] == "7"
    assert c.coll_type[custom] == CollType.ALLTOALL and c.by_op[custom]
    assert (c.in_bytes[custom], c.out_bytes[custom]) == (6144 * 4, 6144 * 4)
    assert trace.strings[int(ev["name"][c.comm_op[custom]])] == "nccl:all_to_all"
    with Memo().active():
        assert classify(trace) is classify(trace)  # computed once per bundle build
