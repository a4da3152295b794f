"""Inference phases of one rank: serving steps (no ProfilerStep) split into prefill and decode where
the trace's annotations say which is which.

What counts as a phase step (host ranges, ``record_function`` / ``user_annotation`` or CPU ops):

* vLLM's ``execute_<tokens>_context_<n>(sq<q>sk<k>…)_generation_<m>(sq<q>sk<k>…)``: one model
  execution with ``n`` prefill (context) requests holding ``q`` query tokens and ``m`` decode
  (generation) requests holding ``q`` tokens. Prefill when ``m`` is 0, decode when ``n`` is 0, and
  **mixed** when both ran in one forward (chunked prefill): the trace then has one set of kernels
  for both, and their time cannot be split between the phases;
* otherwise, annotations (``record_function`` ranges) named ``prefill`` or ``decode`` (a word of the
  name, any case, e.g. ``prefill_step``, ``llm.decode``), the outermost of nested ones; their tokens
  are unknown.

Per step: its host range, the device work launched inside it (every GPU activity whose launch call
lies in the range, graph replays included), and its time = range start to the later of the range's
end and its last device work's end; its device span = first to last device work. Per phase: steps,
tokens, time, device time and span, and the device span per token where the tokens are known (the
device's time for the step: a window cut from a longer session can show the step's work queued
behind work from before it, which the host range's time would count). Without such ranges the
analysis does not apply: the trace does not show its phases, and none is guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import I64, rank_rows
from stepscope.model.schema import GPU_KINDS, EventKind
from stepscope.model.trace import Trace
from stepscope.model.tree import nearest_marked_ancestor

VLLM = re.compile(r"^execute_(?P<tokens>\d+)_context_(?P<ctx>\d+)\(sq(?P<ctx_q>\d+)[^)]*\)"
                  r"_generation_(?P<gen>\d+)\(sq(?P<gen_q>\d+)")
NAMED = re.compile(r"(?:^|[^a-z])(?P<phase>prefill|decode)(?:[^a-z]|$)", re.IGNORECASE)
PHASES = ("prefill", "decode", "mixed")


def parse_step(name: str) -> tuple[str, int, int, int, int] | None:
    """(phase, prefill requests, prefill tokens, decode requests, decode tokens) a range name shows;
    counts are -1 where the name does not give them; None for a name that shows no phase."""
    m = VLLM.match(name)
    if m is not None:
        ctx, gen = int(m.group("ctx")), int(m.group("gen"))
        phase = "mixed" if ctx and gen else "prefill" if ctx else "decode" if gen else ""
        return (phase, ctx, int(m.group("ctx_q")), gen, int(m.group("gen_q"))) if phase else None
    n = NAMED.search(name)
    if n is None:
        return None
    return n.group("phase").lower(), -1, -1, -1, -1


def _is_vllm(name: str) -> bool:
    return VLLM.match(name) is not None


def _is_named(name: str) -> bool:
    return parse_step(name) is not None


@dataclass(frozen=True)
class PhaseSteps:
    """One row per phase step (in time order)."""

    name: tuple[str, ...]
    phase: tuple[str, ...]  # prefill | decode | mixed
    start_ns: I64
    host_ns: I64  # the range's own duration
    time_ns: I64  # range start to the later of its end and its last device work's end
    device_ns: I64  # summed duration of the device work launched inside
    device_span_ns: I64  # first start to last end of that work (0 without any)
    kernels: I64
    prefill_requests: I64  # -1 unknown
    prefill_tokens: I64
    decode_requests: I64
    decode_tokens: I64


@dataclass(frozen=True)
class PhaseResult:
    """Prefill / decode steps of one rank."""

    rank: int
    steps: PhaseSteps
    source: str  # "vllm" (execute_… ranges with counts) or "names" (prefill / decode ranges)

    def phase_rows(self, phase: str) -> I64:
        return np.flatnonzero(np.array(self.steps.phase, dtype=object) == phase).astype(np.int64)

    def tokens(self, phase: str) -> int:
        """Tokens of a phase's steps (both kinds for mixed steps); -1 when not known."""
        rows = self.phase_rows(phase)
        s = self.steps
        tok = np.where(s.prefill_tokens[rows] >= 0, s.prefill_tokens[rows], 0) + np.where(
            s.decode_tokens[rows] >= 0, s.decode_tokens[rows], 0)
        known = (s.prefill_tokens[rows] >= 0) | (s.decode_tokens[rows] >= 0)
        return int(tok.sum()) if len(rows) and bool(known.all()) else -1

    def per_token_ns(self, phase: str) -> float | None:
        """Device span of a phase's steps per token; None when the tokens are not known."""
        tok = self.tokens(phase)
        return float(self.steps.device_span_ns[self.phase_rows(phase)].sum()) / tok if tok > 0 else None


def compute_phases(trace: Trace, rank: int) -> PhaseResult:
    """Prefill / decode / mixed steps from the trace's annotations (see the module docstring)."""
    ev, pool = trace.events, trace.strings
    host = rank_rows(trace, rank, (int(EventKind.USER_ANNOTATION), int(EventKind.CPU_OP)))
    names = ev["name"][host]
    vllm = host[pool.mask(_is_vllm)[names]]
    named = host[pool.mask(_is_named)[names] & (ev["kind"][host] == EventKind.USER_ANNOTATION)]
    rows, source = (vllm, "vllm") if len(vllm) else (named, "names")
    if len(rows) == 0:
        raise NotApplicable("no prefill / decode annotation (vLLM execute_… ranges, prefill / decode "
                            "ranges): the trace does not show its inference phases")
    marked = np.zeros(len(ev), bool)
    marked[rows] = True
    rows = rows[nearest_marked_ancestor(ev["parent"], rows, marked) < 0]  # the outermost
    rows = rows[np.argsort(ev["ts_ns"][rows], kind="stable")]
    ids, inv = np.unique(ev["name"][rows], return_inverse=True)
    inv = inv.reshape(-1)
    texts = [str(s) for s in pool.decode(ids)]  # per distinct name
    parsed = [parse_step(s) or ("", -1, -1, -1, -1) for s in texts]
    gpu = rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))
    gpu = gpu[ev["launch"][gpu] >= 0]
    marked[:] = False
    marked[rows] = True
    owner = nearest_marked_ancestor(ev["parent"], ev["launch"][gpu].astype(np.int64), marked)
    inside = owner >= 0
    at = np.searchsorted(np.sort(rows), owner[inside])
    idx = np.argsort(rows, kind="stable")[at]
    n, dur = len(rows), ev["dur_ns"][gpu[inside]]
    end = ev["ts_ns"][rows] + ev["dur_ns"][rows]
    np.maximum.at(end, idx, ev["ts_ns"][gpu[inside]] + dur)
    first = np.full(n, np.iinfo(np.int64).max, np.int64)
    last = np.zeros(n, np.int64)
    np.minimum.at(first, idx, ev["ts_ns"][gpu[inside]])
    np.maximum.at(last, idx, ev["ts_ns"][gpu[inside]] + dur)
    kernels = np.bincount(idx, minlength=n).astype(np.int64)
    col = np.array([p[1:] for p in parsed], np.int64).reshape(len(ids), 4)[inv]
    steps = PhaseSteps(
        name=tuple(np.array(texts, dtype=object)[inv].tolist()),
        phase=tuple(np.array([p[0] for p in parsed], dtype=object)[inv].tolist()),
        start_ns=ev["ts_ns"][rows], host_ns=ev["dur_ns"][rows], time_ns=end - ev["ts_ns"][rows],
        device_ns=np.bincount(idx, weights=dur, minlength=n).astype(np.int64),
        device_span_ns=np.where(kernels > 0, last - first, 0), kernels=kernels, prefill_requests=col[:, 0],
        prefill_tokens=col[:, 1], decode_requests=col[:, 2], decode_tokens=col[:, 3])
    return PhaseResult(rank=rank, steps=steps, source=source)
