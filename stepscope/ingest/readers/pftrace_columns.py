"""The packets of a ``.pftrace`` (:class:`.pftrace_decode.Packets`) as the decoded-chunk columns the
Kineto path makes (``kineto_columns.events_to_columns``), so that the same splitting into the
model's tables (``assemble.split_chunk``), the same kinds and the same args columns apply.

Slices are paired here, vectorised: per track, begins and ends in time order (ties in packet
order, as Perfetto's sorter keeps them) with a stack discipline — each begin's level is the depth
after it, each end's the depth before it, and within one (track, level) begins and ends alternate,
so a begin is closed by the next element of its (track, level) when that is an end.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from stepscope.ingest.readers.interning import intern_strings, ordered_strings
from stepscope.ingest.readers.kineto_columns import args_columns, event_groups
from stepscope.ingest.readers.kineto_decode import RawArgs
from stepscope.ingest.readers.pftrace_decode import Packets, Track

I64 = npt.NDArray[np.int64]
Cols = dict[str, npt.NDArray[Any]]
_ARGS = msgspec.json.Decoder(list[RawArgs | None])
_ONE_ARGS = msgspec.json.Decoder(RawArgs)
FLOW_CAT = "ac2g"  # the flows PyTorch's backend writes are its async CPU-to-GPU (ac2g) links


def pair_slices(track: I64, ts: I64, order: I64, n_begins: int) -> tuple[I64, int, int]:
    """For rows ``[0, n_begins)`` (begins) and the rest (ends), each begin's end timestamp (-1 when
    it never ends), the number of begins left open and of ends that closed nothing."""
    n = len(ts)
    delta = np.where(np.arange(n) < n_begins, 1, -1)
    srt = np.lexsort((order, ts, track))
    tr, d = track[srt], delta[srt]
    start = np.ones(n, bool)
    start[1:] = tr[1:] != tr[:-1]
    seg = np.cumsum(start) - 1
    c = np.cumsum(d)
    c -= (c - d)[start][seg]  # depth after each event, per track
    big = 2 * n + 2
    low = np.minimum.accumulate(c - seg * big) + seg * big  # lowest depth so far, per track
    lost = np.maximum(0, -low)  # ends so far that closed nothing
    lost_before = np.where(start, 0, np.r_[0, lost[:-1]])
    stray = (d < 0) & (lost > lost_before)
    level = c + lost + np.where(d < 0, 1, 0)
    keep = np.flatnonzero(~stray)
    k_srt, k_tr, k_level = srt[keep], tr[keep], level[keep]
    grp = np.lexsort((np.arange(len(keep)), k_level, k_tr))
    g_row, g_tr, g_level = k_srt[grp], k_tr[grp], k_level[grp]
    is_begin = g_row < n_begins
    closes = np.zeros(len(grp), bool)
    closes[:-1] = is_begin[:-1] & ~is_begin[1:] & (g_tr[1:] == g_tr[:-1]) & (g_level[1:] == g_level[:-1])
    end_ts = np.full(n_begins, -1, np.int64)
    at = np.flatnonzero(closes)
    end_ts[g_row[at]] = ts[g_row[at + 1]]
    return end_ts, int(is_begin.sum()) - len(at), int(stray.sum())


def thread_of(tracks: dict[int, Track]) -> dict[int, tuple[str, str]]:
    """Each track's (pid, tid) as the JSON trace names them: its own thread descriptor's or its
    nearest ancestor's; a process track's pid with tid 0; a bare track its uuid as the tid."""
    out: dict[int, tuple[str, str]] = {}

    def resolve(uuid: int, seen: int = 0) -> tuple[str, str]:
        got = out.get(uuid)
        if got is not None:
            return got
        t = tracks.get(uuid)
        if t is None or seen > 64:
            res = ("0", str(uuid))
        elif t.tid is not None:
            res = (str(t.pid), str(t.tid))
        elif t.parent and t.parent in tracks:
            res = resolve(t.parent, seen + 1)
        else:
            res = (str(t.pid), "0") if t.pid is not None else ("0", str(uuid))
        out[uuid] = res
        return res

    for uuid in tracks:  # per track, not per event
        resolve(uuid)
    return out


def infer_cat(name: str, args: dict[str, Any] | None) -> str:
    """A category for a slice that carries none (PyTorch's CUPTI backend writes names and args
    only): GPU activity has a device and a stream, runtime calls a CUPTI callback id."""
    a = args or {}
    if "stream" in a and "device" in a:
        if name.startswith("Memcpy"):
            return "gpu_memcpy"
        if name.startswith("Memset"):
            return "gpu_memset"
        return "kernel" if "grid" in a or "correlation" in a else "gpu_user_annotation"
    if "cbid" in a:
        return "cuda_driver" if name.startswith("cu") and not name.startswith("cuda") else "cuda_runtime"
    if name.startswith("ProfilerStep#"):
        return "user_annotation"
    return "python_function" if "Python id" in a else "cpu_op"


def decode_args(rows: list[dict[str, Any] | None]) -> tuple[list[Any], int]:
    """The rows' args as the Kineto reader's args structs (through their JSON text, so that raw
    values such as ``Input Dims`` get the very text the JSON reader keeps), and how many rows'
    args could not be read."""
    try:
        return _ARGS.decode(json.dumps(rows, ensure_ascii=False)), 0
    except (msgspec.MsgspecError, ValueError, TypeError):
        pass
    out: list[Any] = []
    bad = 0
    for r in rows:  # rare: one row's args at a time, the unreadable ones dropped and counted
        try:
            out.append(None if r is None else _ONE_ARGS.decode(json.dumps(r, ensure_ascii=False)))
        except (msgspec.MsgspecError, ValueError, TypeError):
            out.append(None)
            bad += 1
    return out, bad


def to_columns(pk: Packets) -> tuple[Cols, list[str], dict[str, int]]:
    """Every slice, instant, flow step, thread / process name and counter sample as decoded-chunk
    columns with local string ids (and those strings), and counts of what could not be used."""
    lost: dict[str, int] = {}
    rows = _slices(pk, lost) + pk.stages + pk.instants
    where = thread_of(pk.tracks)
    table: dict[str, int] = {}
    n_ev = len(rows)
    pid_tid = [where.get(r[2]) or ("0", str(r[2])) for r in rows]
    names = [r[3] for r in rows]
    n_slices = n_ev - len(pk.instants)
    cats = [r[4] or infer_cat(r[3], r[5]) for r in rows[:n_slices]] + [r[4] for r in pk.instants]
    ph = np.r_[np.full(n_slices, ord("X")), np.full(len(pk.instants), ord("i"))].astype(np.int32)
    ts = np.fromiter((r[1] for r in rows), np.int64, n_ev)
    dur = np.r_[np.array([r[8] for r in rows[:n_slices]], np.int64), np.zeros(len(pk.instants), np.int64)]
    meta = _meta_rows(pk.tracks, where)
    flows = _flow_rows(rows, where)
    all_names = names + [m[0] for m in meta] + [FLOW_CAT] * len(flows[0])
    cols: Cols = {
        "ph": np.r_[ph, np.full(len(meta), ord("M")), flows[3]].astype(np.int32),
        "cat": intern_strings(cats + [""] * len(meta) + [FLOW_CAT] * len(flows[0]), table),
        "name": intern_strings(all_names, table),
        "pid": intern_strings([p for p, _ in pid_tid] + [m[1] for m in meta] + flows[1], table),
        "tid": intern_strings([t for _, t in pid_tid] + [m[2] for m in meta] + flows[2], table),
        "ts_ns": np.r_[ts, np.zeros(len(meta), np.int64), flows[4]].astype(np.int64),
        "dur_ns": np.r_[dur, np.zeros(len(meta) + len(flows[0]), np.int64)].astype(np.int64),
        "flow_id": np.r_[np.full(n_ev + len(meta), -1), flows[0]].astype(np.int64),
    }
    n = len(cols["ph"])
    cols["ts_ok"] = np.ones(n, bool)
    cols["label"] = np.r_[np.full(n_ev, -1, np.int32), intern_strings([m[3] for m in meta], table),
                          np.full(len(flows[0]), -1, np.int32)].astype(np.int32)
    strings = ordered_strings(table)
    args, lost["args-unreadable"] = decode_args([r[5] for r in rows] + [None] * (n - n_ev))
    cols.update(args_columns(args, event_groups(cols["ph"], cols["cat"], cols["name"], strings), table))
    _counters(pk, cols, table)
    return cols, ordered_strings(table), lost


def _slices(pk: Packets, lost: dict[str, int]) -> list[tuple[Any, ...]]:
    """The begins that an end closes, each with its duration appended; the others counted."""
    nb = len(pk.begins)
    if nb == 0:
        lost["slice-end-unmatched"] = len(pk.ends)
        return []
    track = np.fromiter((r[2] for r in pk.begins), np.int64, nb)
    ts = np.fromiter((r[1] for r in pk.begins), np.int64, nb)
    order = np.fromiter((r[0] for r in pk.begins), np.int64, nb)
    ends = np.array(pk.ends, np.int64).reshape(-1, 3)
    end_ts, open_, stray = pair_slices(np.r_[track, ends[:, 2]], np.r_[ts, ends[:, 1]],
                                       np.r_[order, ends[:, 0]], nb)
    lost["slice-unterminated"], lost["slice-end-unmatched"] = open_, stray
    dur = (end_ts - ts).tolist()
    return [(*r, d) for r, d, ok in zip(pk.begins, dur, (end_ts >= 0).tolist()) if ok]


def _meta_rows(tracks: dict[int, Track], where: dict[int, tuple[str, str]]) -> list[tuple[str, str, str, str]]:
    """(name, pid, tid, label) of a ``thread_name`` row per named thread and a ``process_name`` row
    per named process, as the JSON trace's metadata events."""
    out: dict[tuple[str, str, str], str] = {}
    for uuid, t in tracks.items():  # per track
        if t.tid is not None and t.thread_name is not None:
            pid, tid = where[uuid]
            out[("thread_name", pid, tid)] = t.thread_name
        elif t.tid is None and t.pid is not None and t.process_name is not None:
            out[("process_name", str(t.pid), "0")] = t.process_name
    return [(k[0], k[1], k[2], v) for k, v in out.items()]


def _flow_rows(rows: list[tuple[Any, ...]], where: dict[int, tuple[str, str]]) -> \
        tuple[I64, list[str], list[str], npt.NDArray[np.int32], I64]:
    """One flow step per flow id on a slice. An id that some slice ends (``terminating_flow_ids``)
    ends there ("f") and starts at its first other step ("s", then "t"); an id only ever continued
    (``flow_ids``, as PyTorch's backend writes them) starts at its first step, ends at its last and
    steps in between."""
    got = [(fid, r[1], r[0], r[2], False) for r in rows for fid in r[6]]  # rows with flows only
    got += [(fid, r[1], r[0], r[2], True) for r in rows for fid in r[7]]
    if not got:
        return np.zeros(0, np.int64), [], [], np.zeros(0, np.int32), np.zeros(0, np.int64)
    fid = np.array([g[0] for g in got], np.uint64).astype(np.int64)
    ts = np.array([g[1] for g in got], np.int64)
    order = np.array([g[2] for g in got], np.int64)
    srt = np.lexsort((order, ts, np.array([g[4] for g in got], bool), fid))  # an id's ends after its other steps
    f, term = fid[srt], np.array([got[i][4] for i in srt.tolist()], bool)
    first = np.r_[True, f[1:] != f[:-1]]
    last = np.r_[f[1:] != f[:-1], True]
    starts = np.flatnonzero(first)
    ended = np.repeat(np.maximum.reduceat(term, starts), np.diff(np.r_[starts, len(f)]))
    plain = np.where(first & ~last, ord("s"), np.where(last & ~first, ord("f"), ord("t")))
    plain = np.where(first & last, ord("s"), plain)
    phase = np.where(ended, np.where(term, ord("f"), np.where(first, ord("s"), ord("t"))), plain).astype(np.int32)
    where_of = [where.get(got[i][3]) or ("0", str(got[i][3])) for i in srt.tolist()]
    return f, [w[0] for w in where_of], [w[1] for w in where_of], phase, ts[srt]


def _counters(pk: Packets, cols: Cols, table: dict[str, int]) -> None:
    """Counter samples: the series is the counter track's name."""
    if not pk.counters:
        return
    arr = np.array([(c[0], c[1]) for c in pk.counters], np.int64).reshape(-1, 2)
    names = {u: (t.name or t.thread_name or str(u)) for u, t in pk.tracks.items()}
    cols["ctr_ts_ns"] = arr[:, 0]
    cols["ctr_name"] = intern_strings([names.get(int(u), str(int(u))) for u in arr[:, 1].tolist()], table)
    cols["ctr_value"] = np.array([c[2] for c in pk.counters], np.float64)
