"""Column names, dtypes, units and the small enums of the canonical model.

Every reader produces these columns and nothing else; every analysis reads them.
Times are int64 nanoseconds (``*_ns``); string columns hold int32 ids into the
trace's :class:`~stepscope.model.strings.StringPool` (``-1`` = absent);
row-link columns hold int32 row indices into the same event table (``-1`` = none).
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np


class EventKind(IntEnum):
    """Canonical event kinds (the tb_plugin ``EventTypeMap`` idea: raw categories → one enum)."""

    OTHER = 0
    CPU_OP = 1  # cpu_op / Operator: an aten op or any host op
    USER_ANNOTATION = 2  # record_function / user_annotation (ProfilerStep#N is one too in new traces)
    PYTHON_FUNCTION = 3  # python_function (with_stack); "nn.Module: X" frames are modules
    RUNTIME = 4  # cuda_runtime / hip runtime / Runtime: cudaLaunchKernel, cudaMemcpyAsync ...
    DRIVER = 5  # cuda_driver: cuLaunchKernel ...
    KERNEL = 6  # GPU kernel
    MEMCPY = 7  # GPU memcpy
    MEMSET = 8  # GPU memset
    GPU_USER_ANNOTATION = 9  # gpu_user_annotation: a record_function range projected onto a stream
    TRACE = 10  # profiler bookkeeping ("PyTorch Profiler (0)")
    INSTANT = 11  # instant events other than [memory]
    OVERHEAD = 12  # profiler overhead events
    COMMUNICATION = 13  # host-side communication ops known as such by the reader (e.g. HCCL on NPU)


#: Kinds that run on the device.
GPU_KINDS = (EventKind.KERNEL, EventKind.MEMCPY, EventKind.MEMSET)
#: Kinds that live on host threads and nest.
HOST_KINDS = (
    EventKind.CPU_OP,
    EventKind.USER_ANNOTATION,
    EventKind.PYTHON_FUNCTION,
    EventKind.RUNTIME,
    EventKind.DRIVER,
    EventKind.OVERHEAD,
    EventKind.COMMUNICATION,
)


class TrackKind(IntEnum):
    """What a track (a lane of events) is."""

    OTHER = 0
    CPU_THREAD = 1
    GPU_STREAM = 2


class MemcpyKind(IntEnum):
    """Direction of a copy, from its name."""

    UNKNOWN = 0
    H2D = 1
    D2H = 2
    D2D = 3
    H2H = 4
    P2P = 5


#: Event table columns: name -> (dtype, fill value for "absent").
EVENT_COLUMNS: dict[str, tuple[type[np.generic], int | float]] = {
    "ts_ns": (np.int64, 0),  # start, ns since the trace's time base
    "dur_ns": (np.int64, 0),  # duration, ns (0 for instants)
    "kind": (np.int8, 0),  # EventKind
    "name": (np.int32, -1),  # string id
    "cat": (np.int32, -1),  # raw category string id
    "track": (np.int32, -1),  # row in the track table
    "rank": (np.int32, 0),  # denormalised from track for speed
    "step": (np.int32, -1),  # step number N of ProfilerStep#N (stretched for GPU work), -1 outside steps
    "corr": (np.int64, -1),  # correlation id (runtime <-> GPU activity)
    "ext_id": (np.int64, -1),  # External id (host op <-> runtime/GPU)
    "parent": (np.int32, -1),  # enclosing host event on the same thread
    "depth": (np.int16, 0),  # nesting depth on its thread (0 = top level)
    "self_ns": (np.int64, 0),  # dur_ns minus the children's dur_ns (host events); dur_ns otherwise
    "launch": (np.int32, -1),  # GPU activity -> its runtime call row
    "op": (np.int32, -1),  # runtime call / GPU activity -> innermost enclosing CPU_OP row of the launch
    "graph_node": (np.int32, -1),  # GPU activity replayed by a CUDA/HIP graph launch -> its index in that launch
    "capture_op": (np.int32, -1),  # string id: the CPU op that launched this graph node at capture (capture trace)
    "capture_seq": (np.int32, -1),  # that op's instance: its ordinal among the ops of its capture window
    "grid_x": (np.int32, 0),
    "grid_y": (np.int32, 0),
    "grid_z": (np.int32, 0),
    "block_x": (np.int32, 0),
    "block_y": (np.int32, 0),
    "block_z": (np.int32, 0),
    "regs": (np.int32, -1),  # registers per thread
    "shmem_bytes": (np.int32, -1),  # shared memory per block (static + dynamic)
    "blocks_per_sm": (np.float32, np.nan),  # as recorded by the trace
    "occupancy_pct": (np.float32, np.nan),  # "est. achieved occupancy %" as recorded
    "bytes": (np.int64, -1),  # memcpy / memset size
    "copy_kind": (np.int8, 0),  # MemcpyKind for memcpy
    "pageable": (np.int8, -1),  # 1 pageable host memory involved, 0 pinned/device, -1 unknown
    "input_dims": (np.int32, -1),  # string id of the JSON text of "Input Dims"
    "input_types": (np.int32, -1),  # string id of the JSON text of "Input type"
    "concrete_inputs": (np.int32, -1),  # string id of the JSON text of "Concrete Inputs" (scalars as text)
    "call_stack": (np.int32, -1),  # string id of "Call stack" (';'-separated frames)
    "seq": (np.int64, -1),  # Sequence number (forward <-> backward)
    "fwd_tid": (np.int64, -1),  # Fwd thread id
    "flops": (np.float64, np.nan),
    "coll_name": (np.int32, -1),  # collective name (allreduce, all_gather ...)
    "in_nelems": (np.int64, -1),
    "out_nelems": (np.int64, -1),
    "coll_dtype": (np.int32, -1),
    "group_size": (np.int32, -1),
    "pg_name": (np.int32, -1),
    "pg_desc": (np.int32, -1),
    "pg_ranks": (np.int32, -1),
    "src_rank": (np.int32, -1),  # point-to-point recv: the sender's global rank ("Src Rank", PyTorch >= 2.4)
    "dst_rank": (np.int32, -1),  # point-to-point send: the receiver's global rank ("Dst Rank")
}

TRACK_COLUMNS: dict[str, tuple[type[np.generic], int | float]] = {
    "rank": (np.int32, 0),
    "kind": (np.int8, 0),  # TrackKind
    "pid": (np.int32, -1),  # string id of the raw pid (pids may be strings)
    "tid": (np.int32, -1),  # string id of the raw tid
    "device": (np.int32, -1),  # GPU device index for GPU streams
    "stream": (np.int64, -1),  # stream id for GPU streams
    "name": (np.int32, -1),  # thread / stream display name
}

MEMORY_COLUMNS: dict[str, tuple[type[np.generic], int | float]] = {
    "ts_ns": (np.int64, 0),
    "rank": (np.int32, 0),
    "track": (np.int32, -1),
    "device_type": (np.int8, -1),  # 0 CPU, 1 CUDA/GPU, other values as recorded
    "device": (np.int32, -1),
    "addr": (np.int64, 0),
    "bytes": (np.int64, 0),  # + alloc, - free
    "total_allocated": (np.int64, -1),
    "total_reserved": (np.int64, -1),
    "op": (np.int32, -1),  # innermost host event enclosing the allocation on its thread
}

COUNTER_COLUMNS: dict[str, tuple[type[np.generic], int | float]] = {
    "ts_ns": (np.int64, 0),
    "rank": (np.int32, 0),
    "name": (np.int32, -1),  # "<event name>.<arg key>"
    "value": (np.float64, np.nan),
}

FLOW_COLUMNS: dict[str, tuple[type[np.generic], int | float]] = {
    "ts_ns": (np.int64, 0),
    "rank": (np.int32, 0),
    "track": (np.int32, -1),
    "cat": (np.int32, -1),
    "flow_id": (np.int64, -1),
    "phase": (np.int8, 0),  # ord('s'), ord('f'), ord('t')
}

STEP_COLUMNS: dict[str, tuple[type[np.generic], int | float]] = {
    "rank": (np.int32, 0),
    "step": (np.int32, -1),  # N of ProfilerStep#N
    "row": (np.int32, -1),  # the step's host event row
    "start_ns": (np.int64, 0),
    "host_end_ns": (np.int64, 0),
    "end_ns": (np.int64, 0),  # stretched to the end of the last GPU activity launched in the step (TB)
}

#: the columns of each table that hold string ids (decoded by ``Trace.to_arrow``, remapped by the readers)
STRING_ID_COLUMNS: dict[str, tuple[str, ...]] = {
    "events": ("name", "cat", "input_dims", "input_types", "concrete_inputs", "call_stack", "coll_name", "coll_dtype",
               "pg_name", "pg_desc", "pg_ranks", "capture_op"),
    "tracks": ("pid", "tid", "name"), "memory": (), "counters": ("name",), "flows": ("cat",), "steps": ()}

TABLE_SCHEMAS = {
    "events": EVENT_COLUMNS,
    "tracks": TRACK_COLUMNS,
    "memory": MEMORY_COLUMNS,
    "counters": COUNTER_COLUMNS,
    "flows": FLOW_COLUMNS,
    "steps": STEP_COLUMNS,
}
