"""What the Ascend text export's summaries add to a rank, beside or instead of ``trace_view.json``.

* ``communication_matrix.json``: every (step, collective/p2p, op, group, src-dst link) entry as the
  profiler wrote it (transport, transit size in MB = 10^6 B, transit time in ms, bandwidth in GB/s,
  op name), kept as columns in the rank's metadata (``ascend_comm_matrix``) for the cluster's
  communication matrix (:mod:`stepscope.analysis.comm_matrix`).
* ``step_trace_time.csv``: the profiler's own per-step split (computing, communication not
  overlapped, free ..., µs), kept as it is (``ascend_step_trace_time``) to compare with.
* ``communication.json``: the collectives' process groups (``op@group`` keys), and the collectives
  themselves where ``kernel_details.csv`` has no HCCL rows.
* ``operator_memory.csv`` → the memory table (+size at allocation, −size at release; the CSV pairs
  the two itself, so each allocation's row number stands for its address); ``memory_record.csv`` →
  counters (the allocator totals per component, MB).
* ``profiler_info_N.json``: the rank (``rank_id``); with the ``*_ascend_pt`` directory name, that the
  run is PyTorch's (torch_npu), as the summaries name no PyTorch op.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from stepscope.errors import TraceFormatError
from stepscope.ingest.readers.ascend_files import Cells, present, profiler_info, rank_of_info, read_csv, read_json
from stepscope.ingest.readers.batch import Repair

Cols = dict[str, npt.NDArray[Any]]
MATRIX_FILE, COMM_FILE, STEP_FILE = "communication_matrix.json", "communication.json", "step_trace_time.csv"
OP_MEMORY_FILE, MEMORY_RECORD_FILE = "operator_memory.csv", "memory_record.csv"
SIDE_FILES = (MATRIX_FILE, COMM_FILE, STEP_FILE, OP_MEMORY_FILE, MEMORY_RECORD_FILE)
LINK = re.compile(r"^(\d+)\s*-\s*(\d+)$")
MIB = 1 << 20
T = TypeVar("T")


def trace_view_dir(path: str) -> Path | None:
    """The ``ASCEND_PROFILER_OUTPUT`` directory of an Ascend ``trace_view.json`` (None for any other file)."""
    p = Path(path)
    return p.parent if p.name == "trace_view.json" and p.parent.name == "ASCEND_PROFILER_OUTPUT" else None


def optional(read: Callable[[], T], repairs: list[Repair]) -> T | None:
    """What ``read`` gives, or None when its summary is unreadable: a summary beside the trace adds
    to it, so a damaged one is a warning (naming the file), not the end of the load."""
    try:
        return read()
    except TraceFormatError as exc:
        repairs.append(("ascend-summary-unreadable", "warning", str(exc), 1))
        return None


def side_files(out_dir: Path) -> list[Path]:
    """The summaries of one ``ASCEND_PROFILER_OUTPUT`` that exist, and the run's profiler_info files."""
    found = [out_dir / n for n in SIDE_FILES if (out_dir / n).is_file()]
    return found + sorted(p for p in out_dir.parent.glob("profiler_info*.json") if p.is_file())


def side_meta(out_dir: Path, repairs: list[Repair]) -> dict[str, Any]:
    """Rank metadata from the summaries beside a trace: the matrix, the step summary, the rank."""
    meta: dict[str, Any] = {}
    if (out_dir / MATRIX_FILE).is_file():
        meta["ascend_comm_matrix"] = optional(lambda: comm_matrix(out_dir / MATRIX_FILE, repairs), repairs) or {}
    if (out_dir / STEP_FILE).is_file():
        cols = optional(lambda: read_csv(out_dir / STEP_FILE, ("Step",)), repairs) or {}
        meta["ascend_step_trace_time"] = {k: v.tolist() for k, v in cols.items()}
    info = profiler_info(out_dir.parent)
    rank = rank_of_info(info)
    if rank is not None:
        meta["distributedInfo"] = {"rank": rank, "backend": "hccl"}
    if out_dir.parent.name.endswith("_ascend_pt") or "ProfilerActivity" in str(info.get("config", "")):
        meta["framework"] = "pytorch"  # torch_npu's profiler wrote it (MindSpore's runs end in _ascend_ms)
    return meta


def _groups(doc: Any, path: Path) -> dict[str, Any]:
    """step → {"collective" | "p2p" → {op key → value}} of a communication*.json document."""
    if not isinstance(doc, dict):
        raise TraceFormatError("not an Ascend communication summary (a JSON object by step)", path)
    out: dict[str, Any] = {}
    for step, kinds in doc.items():  # a few steps × 2 kinds
        if isinstance(kinds, dict):
            for kind in ("collective", "p2p"):
                ops = kinds.get(kind)
                if isinstance(ops, dict):
                    out[f"{step}\0{kind}"] = ops
    return out


def comm_matrix(path: Path, repairs: list[Repair]) -> dict[str, list[Any]]:
    """communication_matrix.json → one column per field, one row per (step, kind, op, link) entry."""
    cols: dict[str, list[Any]] = {k: [] for k in ("step", "kind", "op", "group", "src", "dst", "transport",
                                                 "size_mb", "time_ms", "bandwidth_gbps", "op_name")}
    skipped = 0
    for key, ops in _groups(read_json(path), path).items():  # the document's entries, a few hundred per rank
        step, kind = key.split("\0")
        for op_key, links in ops.items():
            op, _, group = str(op_key).partition("@")
            for link, v in (links.items() if isinstance(links, dict) else ()):
                m = LINK.match(str(link))
                if m is None or not isinstance(v, dict):
                    skipped += 1
                    continue
                for k, x in (("step", step), ("kind", kind), ("op", op), ("group", group),
                             ("src", int(m.group(1))), ("dst", int(m.group(2))),
                             ("transport", str(v.get("Transport Type", ""))), ("size_mb", _num(v, "Transit Size(MB)")),
                             ("time_ms", _num(v, "Transit Time(ms)")), ("bandwidth_gbps", _num(v, "Bandwidth(GB/s)")),
                             ("op_name", str(v.get("Op Name", "")))):
                    cols[k].append(x)
    if skipped:
        why = f"{path.name}: {skipped} entries that are not a 'src-dst' link of numbers were skipped"
        repairs.append(("ascend-matrix-entry-skipped", "warning", why, skipped))
    return cols


def _num(v: dict[str, Any], key: str) -> float:
    x = v.get(key)
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else float("nan")


def comm_ops(out_dir: Path) -> tuple[dict[str, str], Cols]:
    """communication.json: each collective's group by op name, and the collectives as columns
    (name, start µs, elapse ms) for a kernel_details.csv without HCCL rows."""
    path = out_dir / COMM_FILE
    if not path.is_file():
        return {}, {}
    group: dict[str, str] = {}
    rows: list[tuple[str, int, float, float]] = []
    for key, ops in _groups(read_json(path), path).items():
        step = re.sub(r"\D", "", key.split("\0")[0])
        for op_key, info in ops.items():  # one entry per collective, plus the "Total Op Info"
            op, at, g = str(op_key).partition("@")
            times = info.get("Communication Time Info") if isinstance(info, dict) else None
            if not at or not isinstance(times, dict):
                continue
            group[op] = g
            rows.append((op, int(step) if step and len(step) < 10 else -1, _num(times, "Start Timestamp(us)"),
                         _num(times, "Elapse Time(ms)")))
    name, step_id, start, elapse = zip(*rows) if rows else ((), (), (), ())
    return group, {"name": np.array(name, dtype=str), "step": np.array(step_id, np.int64),
                   "start_us": np.array(start, np.float64), "elapse_ms": np.array(elapse, np.float64)}


def op_memory(out_dir: Path, cells: Cells) -> Cols:
    """operator_memory.csv → memory rows: an allocation (+bytes) and, when recorded, its release (−bytes)."""
    path = out_dir / OP_MEMORY_FILE
    if not path.is_file():
        return {}
    cols = read_csv(path, ("Size(KB)", "Allocation Time(us)"))
    at, ok = cells.us_to_ns(cols, "Allocation Time(us)")
    size = np.round(cells.floats(cols, "Size(KB)") * 1024)
    ok &= np.isfinite(size)
    rel_col = cols.get("Release Time(us)", np.full(len(at), "", dtype=str))
    released = present(rel_col) & ok
    rel, rel_ok = cells.us_to_ns({"Release Time(us)": np.where(released, rel_col, "0")}, "Release Time(us)")
    released &= rel_ok
    addr = np.arange(1, len(at) + 1, dtype=np.int64)
    device = _npu_index(cols.get("Device Type"), len(at))

    def side(rows: npt.NDArray[np.bool_], ts: npt.NDArray[np.int64], sign: int, when: str) -> Cols:
        return {"ts_ns": ts[rows], "bytes": (sign * size[rows]).astype(np.int64), "addr": addr[rows],
                "device": device[rows], "total_allocated": _mib(cells, cols, f"{when} Total Allocated(MB)")[rows],
                "total_reserved": _mib(cells, cols, f"{when} Total Reserved(MB)")[rows]}

    alloc, free = side(ok, at, 1, "Allocation"), side(released, rel, -1, "Release")
    out = {k: np.concatenate([alloc[k], free[k]]) for k in alloc}
    out["device_type"] = np.ones(len(out["ts_ns"]), np.int8)
    return out


def _mib(cells: Cells, cols: dict[str, Any], name: str) -> npt.NDArray[np.int64]:
    """A MiB total as bytes, -1 where absent."""
    mb = cells.floats(cols, name) if name in cols else np.full(len(next(iter(cols.values()))), np.nan)
    return np.where(np.isfinite(mb), np.round(np.nan_to_num(mb) * MIB), -1).astype(np.int64)


def _npu_index(col: npt.NDArray[Any] | None, n: int) -> npt.NDArray[np.int32]:
    """Device index from "NPU:3" text (-1 for the host or unknown)."""
    if col is None:
        return np.full(n, -1, np.int32)
    num = np.char.partition(col.astype(str), ":")[:, 2] if n else np.zeros(0, dtype=str)
    npu = np.char.startswith(col.astype(str), "NPU") & np.char.isdigit(num) & (np.char.str_len(num) < 9)
    return np.where(npu, np.where(npu, num, "0").astype(np.int64), -1).astype(np.int32)


def memory_counters(out_dir: Path, cells: Cells) -> Cols:
    """memory_record.csv → counters named ``memory_record/<component>.<total column>`` (MB)."""
    path = out_dir / MEMORY_RECORD_FILE
    if not path.is_file():
        return {}
    cols = read_csv(path, ("Component", "Timestamp(us)"))
    ts, ok = cells.us_to_ns(cols, "Timestamp(us)")
    parts: list[Cols] = []
    for total in ("Total Allocated(MB)", "Total Reserved(MB)", "Total Active(MB)"):  # three columns
        if total not in cols:
            continue
        value = cells.floats(cols, total)
        rows = ok & np.isfinite(value)
        names = np.char.add(np.char.add("memory_record/", cols["Component"][rows]), f".{total}")
        parts.append({"ts_ns": ts[rows], "name": names, "value": value[rows]})
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}
