"""Assemble per-file tables into one linked :class:`Trace` (ranks, tracks, steps, links)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.ingest.assemble import FileTables, finish_file
from stepscope.ingest.readers import ascend
from stepscope.ingest.readers.batch import FileBatch
from stepscope.ingest.sanitize import sanitize_events
from stepscope.model import derive
from stepscope.model.diagnostics import DiagnosticsBuilder
from stepscope.model.flow_links import correlations_from_flows
from stepscope.model.iterations import iteration_steps
from stepscope.model.schema import (
    COUNTER_COLUMNS,
    EVENT_COLUMNS,
    FLOW_COLUMNS,
    MEMORY_COLUMNS,
    STEP_COLUMNS,
    TRACK_COLUMNS,
    TrackKind,
)
from stepscope.model.steps import assign_steps, find_steps
from stepscope.model.strings import StringPool
from stepscope.model.table import Table
from stepscope.model.trace import WORLD_SIZE_MAX, DeviceInfo, RankInfo, Trace
from stepscope.runtime.parallel import concat_columns, run_both

RANK_IN_NAME = re.compile(r"(?:worker|rank)[-_]?(\d+)", re.IGNORECASE)
ASCEND_DIR = re.compile(r"(\d+)_ascend_pt$")
Cols = dict[str, npt.NDArray[Any]]
#: ranks the model holds: int32, with room above for the ids given to files that repeat a rank
RANK_MIN, RANK_MAX = -(2**31), 2**31 - 1 - (1 << 20)


def rank_of(meta: dict[str, Any], path: str, fallback: int, diags: DiagnosticsBuilder | None = None) -> int:
    """Rank from ``distributedInfo``, else from the file name (worker3, rank-3), else the file order.

    A rank that does not fit the model's int32 rank columns (2^40, 2^63 ...) is not taken; the
    ``distributedInfo`` one is reported as ``rank-out-of-range``."""
    info = meta.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        if _fits_rank(info["rank"]):
            return int(info["rank"])
        if diags is not None:
            diags.add("rank-out-of-range", "warning", f"distributedInfo.rank {info['rank']} is not a usable rank id "
                      "(beyond int32); rank taken from the file name or order", source=path)
    p = Path(path)
    m = RANK_IN_NAME.search(p.name)
    if m and _fits_rank(m.group(1)):
        return int(m.group(1))
    for parent in p.parents[:3]:  # Ascend: rank3_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json
        m = ASCEND_DIR.search(parent.name)
        if m and _fits_rank(m.group(1)):
            return int(m.group(1))
    return fallback


def _fits_rank(rank: int | str) -> bool:
    """Whether a rank (an int, or digits from a file name) fits the int32 rank columns."""
    if isinstance(rank, str):
        return len(rank) <= 9
    return RANK_MIN <= rank <= RANK_MAX


def _int_field(props: dict[str, Any]) -> Any:
    """Getter of integer device properties; a value that is not an integer reads as unknown (None)."""
    def get(key: str) -> int | None:
        v = props.get(key)
        if isinstance(v, bool):
            return None
        if isinstance(v, int):
            return v
        if isinstance(v, str) and v.strip().isdigit():
            return int(v)
        return None
    return get


#: metadata keys only the ROCm (roctracer) build of Kineto writes
_ROCM_META = ("roctracer_version", "hip_runtime_version", "hip_driver_version")


def _devices(meta: dict[str, Any]) -> tuple[DeviceInfo, ...]:
    props = meta.get("deviceProperties")
    if not isinstance(props, list):
        return ()
    rocm = any(k in meta for k in _ROCM_META)
    out = []
    for i, p in enumerate(props):
        if not isinstance(p, dict):
            continue
        name = str(p.get("name", ""))
        g = _int_field(p)
        amd = rocm or g("warpSize") == 64 or bool(re.search(r"AMD|Instinct|Radeon|MI\d{3}", name))
        vendor = str(p["vendor"]) if isinstance(p.get("vendor"), str) else ("amd" if amd else "nvidia")
        if not name and vendor == "amd":  # ROCm traces of some builds leave the name empty: say what is known
            name = f"AMD GPU (gfx{g('computeMajor')}.{g('computeMinor')}, {g('numSms')} CUs)"
        index = g("id")
        out.append(DeviceInfo(
            index=index if index is not None else i, name=name, total_memory_bytes=g("totalGlobalMem"),
            compute_major=g("computeMajor"), compute_minor=g("computeMinor"), sm_count=g("numSms"),
            max_threads_per_block=g("maxThreadsPerBlock"), max_threads_per_sm=g("maxThreadsPerMultiprocessor"),
            regs_per_block=g("regsPerBlock"), regs_per_sm=g("regsPerMultiprocessor"), warp_size=g("warpSize"),
            shared_mem_per_block=g("sharedMemPerBlock"), shared_mem_per_sm=g("sharedMemPerMultiprocessor"),
            shared_mem_per_block_optin=g("sharedMemPerBlockOptin"), vendor=vendor))
    return tuple(out)


def world_size_of(dist: dict[str, Any], path: str, diags: DiagnosticsBuilder | None = None) -> int | None:
    """``distributedInfo.world_size`` when it is a whole number in 1 .. :data:`WORLD_SIZE_MAX`, else
    None (reported as ``world-size-invalid``: text, a list, 0, 2^40 ...)."""
    world = dist.get("world_size")
    if world is None:
        return None
    if isinstance(world, int) and not isinstance(world, bool) and 1 <= world <= WORLD_SIZE_MAX:
        return world
    if diags is not None:
        diags.add("world-size-invalid", "warning", f"distributedInfo.world_size {str(world)[:40]!r} is not a usable "
                  f"world size (a whole number 1..{WORLD_SIZE_MAX}); ignored", source=path)
    return None


def rank_info(b: FileBatch, rank: int, span: str, has_gpu: bool, ascend_hw: bool = False,
              diags: DiagnosticsBuilder | None = None) -> RankInfo:
    meta = b.meta
    dist = meta.get("distributedInfo") if isinstance(meta.get("distributedInfo"), dict) else {}
    devices = _devices(meta)
    platform = "cpu" if not has_gpu else ("rocm" if devices and devices[0].vendor == "amd" else "cuda")
    if ascend_hw or meta.get("format") in ("ascend-db", "ascend-csv"):  # text export, database or summaries
        platform = "ascend"
        devices = devices or (DeviceInfo(index=0, name="Ascend NPU", vendor="ascend"),)
    keep = {k: v for k, v in meta.items() if k not in ("deviceProperties", "distributedInfo", "traceEvents")}
    base = meta.get("baseTimeNanoseconds")
    return RankInfo(rank=rank, source=b.path, world_size=world_size_of(dist, b.path, diags) if dist else None,
                    backend=dist.get("backend") if dist else None, devices=devices,
                    distributed=dict(dist or {}), metadata=keep,
                    time_base_ns=int(base) if isinstance(base, int) else 0, span=span, platform=platform)


def _diagnose_file(b: FileBatch, diags: DiagnosticsBuilder) -> None:
    if b.n_events == 0 and b.complete:
        diags.add("no-events", "info", "the trace holds no events", source=b.path)
    for name, example in b.dropped:
        diags.add(name, "error", example, source=b.path)
    for name, severity, example, count in b.repairs:
        diags.add(name, severity, example, count, source=b.path)
    if not b.complete:
        diags.add("truncated-file", "error",
                  f"the events array never closes: {b.lost_bytes} bytes after the last complete event "
                  f"were dropped ({b.n_events} complete events kept)", source=b.path)
    if b.meta_error:
        diags.add("metadata-unreadable", "warning", b.meta_error, source=b.path)


def diagnose_ranks(ranks: list[RankInfo], diags: DiagnosticsBuilder) -> None:
    """Say when the run claims more ranks than it holds (a missing file is not an error)."""
    worlds = {r.world_size for r in ranks if isinstance(r.world_size, int) and r.world_size > 1}
    if len(worlds) == 1 and 1 < len(ranks) < next(iter(worlds)):
        world = next(iter(worlds))  # may be absurd (2^63): missing ranks are counted, not listed
        have = {r.rank for r in ranks if 0 <= r.rank < world}
        first = list(itertools.islice((r for r in range(world) if r not in have), 11))
        shown = ", ".join(map(str, first[:10])) + (" ..." if len(first) > 10 else "")
        diags.add("ranks-missing", "info", f"world size {world} but {len(ranks)} rank files: missing {shown}",
                  min(world - len(have), 2**62))


def _offset(ft: FileTables, rank: int, track_base: int, pool: StringPool) -> None:
    for tab in (ft.events, ft.memory, ft.flows):
        if tab:
            tab["track"] = tab["track"] + track_base
            tab["rank"] = np.full(len(tab["track"]), rank, np.int32)
    if ft.counters:
        ft.counters["rank"] = np.full(len(ft.counters["ts_ns"]), rank, np.int32)
    if ft.tracks:
        ft.tracks["rank"] = np.full(len(ft.tracks["kind"]), rank, np.int32)
        names = [ft.thread_names.get((p, t), ft.thread_names.get((p, -1), -1))
                 for p, t in zip(ft.tracks["pid"].tolist(), ft.tracks["tid"].tolist())]  # per track
        ft.tracks["name"] = np.array(names, np.int32)


def _table(schema: Any, parts: list[Cols]) -> Table:
    parts = [p for p in parts if p]
    if not parts:
        return Table.empty(schema)
    lengths = [len(next(iter(p.values()))) for p in parts]
    names = [k for k in schema if any(k in p for p in parts)]
    if len(parts) == 1:  # one file: its columns as they are (cast where needed), no copy
        return Table(schema, {k: parts[0][k] for k in names if k in parts[0]}, lengths[0])
    typed = [{k: np.asarray(p[k], schema[k][0]) for k in names if k in p} for p in parts]
    cols = concat_columns(typed, names, lambda k, n: np.full(n, schema[k][1], schema[k][0]))
    return Table(schema, cols, sum(lengths))


def build_trace(batches: list[tuple[FileBatch, int, str]], pool: StringPool, diags: DiagnosticsBuilder,
                source: str) -> Trace:
    """Split, offset and concatenate every file, then derive all links once."""
    tables: list[FileTables] = []
    ranks: list[RankInfo] = []
    device_steps: list[tuple[int, int, int, int]] = []
    base = 0
    for b, rank, span in batches:
        _diagnose_file(b, diags)
        device_steps += [(rank, *s) for s in b.device_steps]
        ft = finish_file(b.parts)
        b.parts = []
        ft.events = sanitize_events(ft.events, diags, b.path)
        if ascend.is_ascend(ft, pool):
            ascend.normalize(ft, pool)
        _offset(ft, rank, base, pool)
        base += len(ft.tracks.get("kind", []))
        has_gpu = bool(ft.tracks) and bool((ft.tracks["kind"] == TrackKind.GPU_STREAM).any())
        ranks.append(rank_info(b, rank, span, has_gpu, ascend.is_ascend(ft, pool), diags))
        tables.append(ft)
    diagnose_ranks(ranks, diags)
    ev = _table(EVENT_COLUMNS, [t.events for t in tables])
    tracks = _table(TRACK_COLUMNS, [t.tracks for t in tables])
    return _link(ev, tracks, tables, pool, diags, tuple(ranks), source, device_steps)


def with_device_steps(steps: Table, found: list[tuple[int, int, int, int]]) -> Table:
    """The ProfilerStep steps, plus the (rank, step, start, end) that readers found on the device for
    ranks without any (a file with no host timeline); such a step has no host event (``row`` -1)."""
    have = set(steps["rank"].tolist())
    extra = [s for s in found if s[0] not in have]
    if not extra:
        return steps
    rank, step, start, end = (np.array(c, np.int64) for c in zip(*extra))
    cols = {k: np.concatenate([steps[k], v.astype(STEP_COLUMNS[k][0])]) for k, v in
            (("rank", rank), ("step", step), ("row", np.full(len(rank), -1)), ("start_ns", start),
             ("host_end_ns", end), ("end_ns", end))}
    order = np.lexsort((cols["start_ns"], cols["rank"]))
    return Table(STEP_COLUMNS, {k: v[order] for k, v in cols.items()})


def _link(ev: Table, tracks: Table, tables: list[FileTables], pool: StringPool, diags: DiagnosticsBuilder,
          ranks: tuple[RankInfo, ...], source: str, device_steps: list[tuple[int, int, int, int]]) -> Trace:
    # every file's events arrive in sort order (``finish_file``) and each file's track ids follow
    # the previous file's: the trace is in :func:`derive.sort_order` as built, nothing to re-sort
    flows = _table(FLOW_COLUMNS, [t.flows for t in tables])
    corr = correlations_from_flows(ev, flows, diags)  # GPU activities without a correlation id
    if corr is not None:
        ev = ev.with_columns(corr=corr)

    def launches_and_steps() -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], Table]:
        launch = derive.link_launches(ev, diags)
        return (launch, *assign_steps(ev, with_device_steps(find_steps(ev, pool), device_steps), launch))

    # links that do not depend on each other are derived side by side: parents ‖ launches and steps,
    # then (depths, self times) ‖ (ops, memory)
    parent, (launch, step_of, steps) = run_both(lambda: derive.nest_parents(ev, diags), launches_and_steps, len(ev))
    looped = iteration_steps(ev, pool, parent, steps, diags)  # ranks without ProfilerStep: a repeating range
    if looped is not None:
        step_of, steps = assign_steps(ev, looped, launch)

    def ops_and_memory() -> tuple[npt.NDArray[np.int32], Table]:
        op = derive.link_ops(ev, parent, launch)
        mem = _table(MEMORY_COLUMNS, [t.memory for t in tables])
        if len(mem):
            mem = mem.with_columns(op=derive.innermost_host_event(ev, parent, mem["track"], mem["ts_ns"]))
            mem = mem.take(np.lexsort((mem["ts_ns"], mem["rank"])))
        return op, mem

    (depth, self_ns), (op, mem) = run_both(lambda: (derive.nest_depths(parent), derive.self_times(ev, parent)),
                                           ops_and_memory, len(ev))
    ev = ev.with_columns(parent=parent, depth=depth, self_ns=self_ns, launch=launch, op=op, step=step_of,
                         graph_node=derive.link_graph_nodes(ev, launch, pool))
    counters = _table(COUNTER_COLUMNS, [t.counters for t in tables])
    return Trace(events=ev, tracks=tracks, steps=steps, memory=mem, counters=counters, flows=flows,
                 strings=pool, ranks=ranks, diagnostics=diags.freeze(), source=source)
