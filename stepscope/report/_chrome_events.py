"""The text of each kind of chrome-trace record the export writes: events, flows, steps, counters.

Each method takes a chunk of rows (numpy) and returns bytes: records prefixed with ``",\\n"``, so
they append after the metadata that opens the events array. See :mod:`stepscope.report.export`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from stepscope.ingest.normalize import kind_of_category
from stepscope.model.schema import GPU_KINDS, EventKind, TrackKind
from stepscope.model.trace import Trace
from stepscope.report import _chrome_text as ct

I64 = npt.NDArray[np.int64]
PID_PER_RANK = 1000
STEPS_PID_OFFSET = 999
#: the category written for a kind whose raw category would read back as another kind
CANONICAL_CATEGORY = {EventKind.CPU_OP: "cpu_op", EventKind.USER_ANNOTATION: "user_annotation",
                      EventKind.PYTHON_FUNCTION: "python_function", EventKind.RUNTIME: "cuda_runtime",
                      EventKind.DRIVER: "cuda_driver", EventKind.KERNEL: "kernel", EventKind.MEMCPY: "gpu_memcpy",
                      EventKind.MEMSET: "gpu_memset", EventKind.GPU_USER_ANNOTATION: "gpu_user_annotation",
                      EventKind.TRACE: "Trace", EventKind.INSTANT: "cpu_instant_event",
                      EventKind.OVERHEAD: "overhead"}
#: (JSON key, event column) of integer args written when >= 0
_INT_ARGS = (("correlation", "corr"), ("External id", "ext_id"), ("registers per thread", "regs"),
             ("shared memory", "shmem_bytes"), ("bytes", "bytes"), ("Sequence number", "seq"),
             ("Fwd thread id", "fwd_tid"), ("In msg nelems", "in_nelems"), ("Out msg nelems", "out_nelems"),
             ("Group size", "group_size"), ("Src Rank", "src_rank"), ("Dst Rank", "dst_rank"))
#: float args written when finite
_FLOAT_ARGS = (("blocks per SM", "blocks_per_sm"), ("est. achieved occupancy %", "occupancy_pct"),
               ("flops", "flops"))
#: string args (JSON-quoted) and args whose string already is JSON text (written raw)
_STR_ARGS = (("Call stack", "call_stack"), ("Collective name", "coll_name"), ("dtype", "coll_dtype"),
             ("Process Group Name", "pg_name"), ("Process Group Description", "pg_desc"))
_RAW_ARGS = (("Input Dims", "input_dims"), ("Input type", "input_types"), ("Concrete Inputs", "concrete_inputs"),
             ("Process Group Ranks", "pg_ranks"))


def track_pids(trace: Trace) -> I64:
    """pid of every track: ``rank × 1000`` for host threads, ``+ 1 + device`` for GPU streams."""
    tr = trace.tracks
    gpu = tr["kind"] == int(TrackKind.GPU_STREAM)
    base = tr["rank"].astype(np.int64) * PID_PER_RANK
    return np.where(gpu, base + 1 + np.maximum(tr["device"].astype(np.int64), 0), base)


def track_label(trace: Trace, t: int) -> str:
    """A track's display name: "stream 7" for GPU streams, the thread's name or "thread <tid>"."""
    tr, s = trace.tracks, trace.strings
    if int(tr["kind"][t]) == TrackKind.GPU_STREAM:
        return f"stream {int(tr['stream'][t])}"
    return s[int(tr["name"][t])] or f"thread {s[int(tr['tid'][t])]}"


class EventText:
    """Builds record text for one trace (strings encoded once)."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.js = ct.JsonStrings(trace.strings)
        self.pids = track_pids(trace)
        self.cat_kind = trace.strings.map(kind_of_category, np.int16, missing=-1)
        canon = [CANONICAL_CATEGORY.get(EventKind(k), "") for k in range(len(EventKind))]
        self.canon = pa.array([f'"{c}"' for c in canon])
        self.has_canon = np.array([bool(c) for c in canon])

    def events(self, rows: I64) -> bytes:
        """``X`` (or ``i`` for instants) records of these rows."""
        ev = self.trace.events
        kind, track = ev["kind"][rows], ev["track"][rows]
        inst = kind == EventKind.INSTANT
        parts: list[ct.Part] = [
            '{"ph":"', pc.if_else(pa.array(inst), "i", "X"), '","cat":', self._categories(rows, kind),
            ',"name":', self.js.take(ev["name"][rows]), ',"pid":', ct.ints(self.pids[track]),
            ',"tid":', ct.ints(track), ',"ts":', ct.micros(ev["ts_ns"][rows]),
            pc.if_else(pa.array(inst), ',"s":"t"', ct.join(',"dur":', ct.micros(ev["dur_ns"][rows]))),
            ',"args":{', self._args(rows, kind, track), "}}"]
        return ct.rows_text(parts, len(rows))

    def _categories(self, rows: I64, kind: npt.NDArray[np.int8]) -> pa.Array:
        """The raw category when it reads back as the same kind, else the kind's canonical one."""
        cat = self.trace.events["cat"][rows]
        same = (self.cat_kind[cat] == kind) | ~self.has_canon[kind]
        return pc.if_else(pa.array(same), self.js.take(cat), self.canon.take(pa.array(kind.astype(np.int64))))

    def _args(self, rows: I64, kind: npt.NDArray[np.int8], track: npt.NDArray[np.int32]) -> ct.Part:
        """The args object's body: only the args each row has (``,"key":value`` pieces)."""
        ev, tr = self.trace.events, self.trace.tracks
        gpu = np.isin(kind, [int(k) for k in GPU_KINDS])
        t = track[gpu]
        pieces: list[ct.Part] = [ct.optional(gpu, ',"device":', ct.ints(tr["device"][t]),
                                             ',"stream":', ct.ints(tr["stream"][t]))]
        m = ev["grid_x"][rows] > 0
        r = rows[m]
        pieces.append(ct.optional(m, ',"grid":', ct.grid(ev["grid_x"][r], ev["grid_y"][r], ev["grid_z"][r]),
                                  ',"block":', ct.grid(ev["block_x"][r], ev["block_y"][r], ev["block_z"][r])))
        for key, col in _INT_ARGS:
            v = ev[col][rows]
            pieces.append(ct.optional(v >= 0, f',"{key}":', ct.ints(v[v >= 0])))
        for key, col in _FLOAT_ARGS:
            f = ev[col][rows]
            pieces.append(ct.optional(np.isfinite(f), f',"{key}":', ct.floats(f[np.isfinite(f)])))
        for key, col in _STR_ARGS:
            sid = ev[col][rows]
            pieces.append(ct.optional(sid >= 0, f',"{key}":', self.js.take(sid[sid >= 0])))
        for key, col in _RAW_ARGS:
            sid = ev[col][rows]
            pieces.append(ct.optional(sid >= 0, f',"{key}":', self.js.take(sid[sid >= 0], raw=True)))
        arrays = [p for p in pieces if not isinstance(p, str)]
        if not arrays:
            return ""
        return pc.utf8_slice_codeunits(ct.join(*arrays), 1)  # drop the leading comma

    def flows(self, gpu: I64) -> bytes:
        """``s`` at each launch call, ``f`` (binding to the enclosing slice) at its GPU activity."""
        ev = self.trace.events
        src = ev["launch"][gpu].astype(np.int64)
        fid = ct.ints(gpu)
        out = b""
        for ph, rows, bp in (("s", src, ""), ("f", gpu, ',"bp":"e"')):
            track = ev["track"][rows]
            parts: list[ct.Part] = [f'{{"ph":"{ph}","id":', fid, ',"pid":', ct.ints(self.pids[track]),
                                    ',"tid":', ct.ints(track), ',"ts":', ct.micros(ev["ts_ns"][rows]),
                                    f',"cat":"ac2g","name":"ac2g"{bp}}}']
            out += ct.rows_text(parts, len(rows))
        return out

    def steps(self, rank: int, step: I64, start: I64, end: I64) -> bytes:
        """Async slices (``b`` / ``e``) "step N" on the rank's steps process."""
        pid = rank * PID_PER_RANK + STEPS_PID_OFFSET
        out = b""
        for ph, ts in (("b", start), ("e", end)):
            parts: list[ct.Part] = [f'{{"ph":"{ph}","cat":"stepscope_step","name":"step ', ct.ints(step),
                                    '","id":', ct.ints(step), f',"pid":{pid},"tid":0,"ts":', ct.micros(ts), "}"]
            out += ct.rows_text(parts, len(step))
        return out

    def memory(self, rows: I64) -> bytes:
        """Kineto ``[memory]`` instants of these rows of the memory table (on their host thread), so
        the allocator curves, allocations and per-op memory read back the same."""
        mem = self.trace.memory
        track = mem["track"][rows].astype(np.int64)
        pid = np.where(track >= 0, self.pids[np.maximum(track, 0)], mem["rank"][rows].astype(np.int64) * PID_PER_RANK)
        total_a, total_r = mem["total_allocated"][rows], mem["total_reserved"][rows]
        parts: list[ct.Part] = [
            '{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":', ct.ints(pid),
            ',"tid":', ct.ints(np.maximum(track, 0)), ',"ts":', ct.micros(mem["ts_ns"][rows]),
            ',"args":{"Device Type":', ct.ints(mem["device_type"][rows]), ',"Device Id":', ct.ints(mem["device"][rows]),
            ',"Addr":', ct.ints(mem["addr"][rows]), ',"Bytes":', ct.ints(mem["bytes"][rows]),
            ct.optional(total_a >= 0, ',"Total Allocated":', ct.ints(total_a[total_a >= 0])),
            ct.optional(total_r >= 0, ',"Total Reserved":', ct.ints(total_r[total_r >= 0])), "}}"]
        return ct.rows_text(parts, len(rows))

    def counter(self, pid: int, name: str, ts: I64, value: npt.NDArray[np.float64]) -> bytes:
        """``C`` samples of one counter track."""
        label = ct.JsonStrings.encode(name)
        parts: list[ct.Part] = [f'{{"ph":"C","name":{label},"pid":{pid},"tid":0,"ts":', ct.micros(ts),
                                ',"args":{"value":', ct.floats(value), "}}"]
        return ct.rows_text(parts, len(ts))
