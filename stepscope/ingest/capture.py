"""Graph capture traces: the ops that launched each node of a CUDA / HIP graph, merged into the replay.

A graph replay (``cudaGraphLaunch`` / ``hipGraphLaunch``) runs every kernel of the graph under the
launch's correlation id: the replay trace knows the kernels and the launch, not the ops that made
them — those ran once, while the graph was captured. vLLM (and TraceLens's tests) save a trace of
the capture beside the replay: ``capture_traces/*.pt.trace.json[.gz]`` next to the replay file. In
it, each ``*StreamBeginCapture`` … ``*StreamEndCapture`` window on a thread holds one launch call
per node, in the order the nodes were recorded, each inside the op that issued it.

:func:`attach_captures` reads those traces, lists each window's launch calls (their ops' names, in
order) and gives every replayed GPU activity the name of the op at its node index
(``events.capture_op``, and which instance of it: ``events.capture_seq``): graph launch *k* of a
rank (in time order) is matched to the next capture window (in capture order, wrapping) with the
same number of nodes, among the capture files whose name gives that rank
(``graph_capture_rank_<r>…``), or all of them when no name gives one. A launch that matches no
window keeps ``capture_op`` absent, and a diagnostic says how many did not match.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from stepscope.model.derive import is_graph_launch
from stepscope.model.diagnostics import Diagnostic, DiagnosticsBuilder
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]
CAPTURE_DIR = "capture_traces"
_TRACE_NAME = re.compile(r"\.json(?:\.gz)?$")
_RANK = re.compile(r"rank[_-]?(\d+)")
_BEGIN = re.compile(r"^(?:cuda|hip|cu)StreamBeginCapture")
_END = re.compile(r"^(?:cuda|hip|cu)StreamEndCapture")
_NODE = re.compile(r"Launch(?:Cooperative)?Kernel|MemcpyAsync|MemsetAsync|Memcpy\w*Async|Memset\w*Async")


def capture_files(files: Sequence[str]) -> list[str]:
    """The capture traces saved beside replay ``files`` (``capture_traces/`` in each file's folder)."""
    out: list[str] = []
    for d in sorted({Path(f).parent / CAPTURE_DIR for f in files}):
        if d.is_dir():
            out += [str(p) for p in sorted(d.iterdir()) if p.is_file() and _TRACE_NAME.search(p.name)
                    and "capture" in p.name]
    return out


def _is_node_launch(name: str) -> bool:
    return _NODE.search(name) is not None and not is_graph_launch(name)


def _is_begin(name: str) -> bool:
    return _BEGIN.match(name) is not None


def _is_end(name: str) -> bool:
    return _END.match(name) is not None


def capture_windows(cap: Trace) -> list[list[tuple[str, int]]]:
    """Per capture window, in capture order: per node launch call, the name of the op around it ('' without
    one) and that op's instance (its ordinal among the window's ops, -1 without one)."""
    ev = cap.events
    calls = np.flatnonzero(np.isin(ev["kind"], [int(EventKind.RUNTIME), int(EventKind.DRIVER)]))
    name = ev["name"][calls]
    begin, end = calls[cap.strings.mask(_is_begin)[name]], calls[cap.strings.mask(_is_end)[name]]
    launches = calls[cap.strings.mask(_is_node_launch)[name]]
    out: list[tuple[int, list[tuple[str, int]]]] = []
    for b in begin.tolist():  # per capture window
        same = end[(ev["track"][end] == ev["track"][b]) & (ev["ts_ns"][end] >= ev["ts_ns"][b])]
        if len(same) == 0:
            continue
        stop = int(ev["ts_ns"][same].min())
        inside = launches[(ev["track"][launches] == ev["track"][b]) & (ev["ts_ns"][launches] >= ev["ts_ns"][b])
                          & (ev["ts_ns"][launches] <= stop)]
        inside = inside[np.argsort(ev["ts_ns"][inside], kind="stable")]
        op = ev["op"][inside]
        names = cap.strings.decode(ev["name"][np.maximum(op, 0)])
        seq = np.unique(op[op >= 0], return_inverse=True)[1].reshape(-1)
        ordinal = np.full(len(op), -1, np.int64)
        ordinal[op >= 0] = seq
        out.append((int(ev["ts_ns"][b]), [(str(n) if o >= 0 else "", q)
                                          for n, o, q in zip(names, op.tolist(), ordinal.tolist())]))
    return [w for _, w in sorted(out, key=lambda t: t[0])]


def match_windows(counts: Sequence[int], windows: Sequence[int]) -> list[int]:
    """For each graph launch's node count (in launch order), the capture window it replays: the next
    window (from the last match on, wrapping) with as many nodes; -1 when none has."""
    out: list[int] = []
    at = 0
    for c in counts:  # per graph launch
        hit = next((w % len(windows) for w in range(at, at + len(windows)) if windows[w % len(windows)] == c), -1)
        out.append(hit)
        if hit >= 0:
            at = hit + 1
    return out


def capture_rank(path: str) -> int | None:
    """The rank a capture trace's file name gives (``graph_capture_rank_3.<ts>.pt.trace.json.gz`` → 3)."""
    m = _RANK.search(Path(path).name)
    return int(m.group(1)) if m else None


def _match(trace: Trace, launches: I64, counts: I64, windows: list[tuple[int | None, int]]) -> I64:
    """Per graph launch, the index of its capture window (-1 none): each rank's launches in time order
    against that rank's windows (all windows when no file names a rank)."""
    ev = trace.events
    hit = np.full(len(launches), -1, np.int64)
    named = any(r is not None for r, _ in windows)
    for rank in np.unique(ev["rank"][launches]).tolist():  # per rank
        mine = [i for i, (r, _) in enumerate(windows) if not named or r == rank]
        idx = np.flatnonzero(ev["rank"][launches] == rank)
        idx = idx[np.argsort(ev["ts_ns"][launches[idx]], kind="stable")]
        got = np.array(match_windows(counts[idx].tolist(), [windows[i][1] for i in mine]), np.int64)
        hit[idx] = np.where(got >= 0, np.array([*mine, -1], np.int64)[got], -1)
    return hit


def attach_captures(trace: Trace, files: Sequence[str], parse: Callable[[str], Trace]) -> Trace:
    """``trace`` with ``events.capture_op`` / ``capture_seq`` filled from the capture traces ``files``
    (each read by ``parse``) and a diagnostic saying how many graph launches were matched."""
    ev = trace.events
    node = ev["graph_node"]
    if not files or not (node >= 0).any():
        return trace
    read = [(capture_rank(f), w) for f in files for w in capture_windows(parse(f))]
    if not read:
        return trace
    windows = [w for _, w in read]
    g = np.flatnonzero(node >= 0)
    launches, inv = np.unique(ev["launch"][g], return_inverse=True)
    inv = inv.reshape(-1)
    hit = _match(trace, launches.astype(np.int64), np.bincount(inv).astype(np.int64),
                 [(r, len(w)) for r, w in read])
    offsets = np.cumsum([0, *[len(w) for w in windows]])
    nodes = [node_op for w in windows for node_op in w]
    flat = trace.strings.intern_many([n for n, _ in nodes]) if nodes else np.zeros(0, np.int32)
    flat = np.where(np.array([n != "" for n, _ in nodes], bool), flat, -1).astype(np.int32)
    seq = np.array([q for _, q in nodes], np.int32)
    win = hit[inv]
    ok = win >= 0
    capture_op = np.full(len(ev), -1, np.int32)
    capture_seq = np.full(len(ev), -1, np.int32)
    at = offsets[win[ok]] + node[g[ok]]
    capture_op[g[ok]] = flat[at]
    capture_seq[g[ok]] = seq[at]
    matched = int((hit >= 0).sum())
    diag = Diagnostic("graph-capture-merged", "info" if matched == len(launches) else "warning",
                      len(launches), f"{matched} of {len(launches)} graph launches matched to the "
                      f"{len(windows)} capture windows of {', '.join(Path(f).name for f in files)}; their "
                      f"{int(ok.sum())} GPU activities are named by the ops that launched them at capture",
                      trace.source)
    diags = DiagnosticsBuilder(source=trace.source)  # in the builder's order, as every trace's are
    diags.extend((*trace.diagnostics, diag))
    return dataclasses.replace(trace, events=ev.with_columns(capture_op=capture_op, capture_seq=capture_seq),
                               diagnostics=diags.freeze())
