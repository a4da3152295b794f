"""Ascend PyTorch profiler output (``*_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json``).

The file is chrome-trace JSON (often a bare list, timestamps as decimal strings) that the Kineto
path reads as is; what differs is that an event's kind is given by its *process*: "Ascend
Hardware" rows are device tasks on NPU streams, "HCCL" group rows are collectives (its "Plane"
rows are their sub-tasks, not counted twice), "CANN" rows are runtime calls. Host ops are tied
to their device tasks through the ``async_npu`` flows (start on the op, end on the task).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.ingest.assemble import FileTables
from stepscope.ingest.readers.ascend_summaries import side_meta, trace_view_dir
from stepscope.ingest.readers.batch import FileBatch
from stepscope.model.schema import EventKind, TrackKind
from stepscope.model.strings import StringPool
from stepscope.model.uniq import unique

Cols = dict[str, npt.NDArray[Any]]
PROCESS_KINDS = {"Ascend Hardware": EventKind.KERNEL, "HCCL": EventKind.KERNEL, "CANN": EventKind.RUNTIME,
                 "Overlap Analysis": EventKind.TRACE}
LINK_FLOW_CATS = ("async_npu",)
#: device tasks that are neither computation nor data movement: HCCL's own tasks on the
#: communication stream (the collective itself is the HCCL group row) and stream control
CONTROL_TASKS = frozenset({"Notify Wait", "Notify Record", "Write Value", "SDMA", "RDMA", "Reduce_Inline",
                           "EVENT_RECORD", "EVENT_WAIT", "PLACE_HOLDER_SQE", "PROFILING_ENABLE",
                           "PROFILING_DISABLE", "Memcpy"})
COPY_TASKS = frozenset({"MEMCPY_ASYNC"})


def add_side_meta(b: FileBatch) -> None:
    """Put what the summaries beside an Ascend ``trace_view.json`` say into its metadata (the
    communication matrix, the profiler's step summary, the rank: see :mod:`.ascend_summaries`)."""
    out_dir = trace_view_dir(b.path)
    if out_dir is not None and b.n_events:
        found = side_meta(out_dir, b.repairs)
        b.meta = {**found, **b.meta} if "distributedInfo" in b.meta else {**b.meta, **found}


def is_ascend(ft: FileTables, pool: StringPool) -> bool:
    return any(pool[v] == "Ascend Hardware" for (p, t), v in ft.thread_names.items() if t == -1)


def normalize(ft: FileTables, pool: StringPool) -> None:
    """Give Ascend events and tracks their canonical kinds, and link host ops to device tasks."""
    tracks, ev = ft.tracks, ft.events
    if not tracks or not ev:
        return
    n = len(tracks["kind"])
    proc = [pool[ft.thread_names.get((p, -1), -1)] for p in tracks["pid"].tolist()]  # per track
    thread = [pool[ft.thread_names.get((p, t), -1)] for p, t in zip(tracks["pid"].tolist(), tracks["tid"].tolist())]
    track_kind = np.array([int(PROCESS_KINDS.get(p, EventKind.OTHER)) for p in proc], np.int8)
    planes = np.array([p == "HCCL" and t.startswith("Plane") for p, t in zip(proc, thread)])
    track_kind[planes] = int(EventKind.OTHER)
    override = track_kind[ev["track"]]
    ev["kind"] = np.where((ev["kind"] == EventKind.OTHER) & (override != 0), override, ev["kind"]).astype(np.int8)
    task = ev["kind"] == EventKind.KERNEL
    control = pool.mask(lambda s: s in CONTROL_TASKS)[ev["name"]]
    copies = pool.mask(lambda s: s in COPY_TASKS)[ev["name"]]
    ev["kind"] = np.where(task & control, int(EventKind.OTHER),
                          np.where(task & copies, int(EventKind.MEMCPY), ev["kind"])).astype(np.int8)
    device = np.isin(track_kind, [int(EventKind.KERNEL)])
    tracks["kind"] = np.where(device, int(TrackKind.GPU_STREAM), tracks["kind"]).astype(np.int8)
    tracks["device"] = np.where(device, 0, tracks["device"]).astype(np.int32)
    tracks["stream"] = np.where(device, np.arange(n), tracks["stream"])
    runtime = track_kind == EventKind.RUNTIME
    tracks["kind"] = np.where(runtime, int(TrackKind.CPU_THREAD), tracks["kind"]).astype(np.int8)
    _link_by_flows(ev, ft.flows, pool)


def _link_by_flows(ev: Cols, flows: Cols, pool: StringPool) -> None:
    """Give both ends of each op → task flow the same External id, so the op link derives as usual."""
    if not flows:
        return
    cats = np.array([pool.find(c) for c in LINK_FLOW_CATS], np.int32)
    sel = np.isin(flows["cat"], cats) & (flows["flow_id"] >= 0)
    fid, ph, trk, ts = flows["flow_id"][sel], flows["phase"][sel], flows["track"][sel], flows["ts_ns"][sel]
    order = np.lexsort((ev["ts_ns"], ev["track"]))
    e_trk, e_ts = ev["track"][order], ev["ts_ns"][order]
    if "ext_id" not in ev:  # no op or task carried args: the column was never made (fuzzing, issue 21)
        ev["ext_id"] = np.full(len(ev["ts_ns"]), -1, np.int64)
    for phase in (ord("s"), ord("f")):
        m = ph == phase
        rows = _exact(e_trk, e_ts, trk[m], ts[m])
        ok = rows >= 0
        target = order[rows[ok]]
        ev["ext_id"][target] = fid[m][ok] & ((1 << 43) - 1)


def _exact(e_trk: npt.NDArray[Any], e_ts: npt.NDArray[Any], q_trk: npt.NDArray[Any],
           q_ts: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """Row (in the sorted order) of the first event on track q_trk starting exactly at q_ts, else -1."""
    out = np.full(len(q_ts), -1, np.int64)
    for t in unique(q_trk).tolist():  # per track, vectorised within
        rows = np.flatnonzero(e_trk == t)
        q = np.flatnonzero(q_trk == t)
        if len(rows) == 0:
            continue
        pos = np.searchsorted(e_ts[rows], q_ts[q])
        pos_c = np.minimum(pos, len(rows) - 1)
        hit = e_ts[rows][pos_c] == q_ts[q]
        out[q[hit]] = rows[pos_c[hit]]
    return out
