"""GEMM calls of one rank and their shapes (needs ``record_shapes``): the N and K dimensions that
Tensor-Core GEMMs want aligned (SPEC §6 row gemm-dims-not-multiple-of-8).

Inside the rank's steps (the whole trace without steps), every ``aten::mm`` / ``addmm`` / ``bmm`` /
``baddbmm`` / ``matmul`` / ``linear`` call with recorded ``Input Dims``, each GEMM counted once: a call
with such a GEMM call beneath it (``aten::linear`` calling ``aten::addmm``) is the same GEMM and is
left out, so each GEMM is counted at the innermost op, the one that launches its kernels. Per call:
its N and K (parsed once per distinct shape text: the second operand's last dimension and the first's
last; ``addmm`` / ``baddbmm`` skip the bias, ``linear`` reads the weight ``[N, K]``), whether its
inputs are half precision (``Half`` / ``BFloat16`` in ``Input type``), and the time of the kernels it
launched (the kernels whose nearest counted GEMM call is that call).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import I64, B, in_step_rows, kept_steps, step_kernels
from stepscope.analysis.platform import NO_PYTORCH_OPS, hint_for
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace
from stepscope.model.tree import nearest_marked_ancestor

GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear")
HALF = ("Half", "BFloat16")


def is_gemm_op(name: str) -> bool:
    return name in GEMM_OPS


def _is_half(types: str) -> bool:
    return any(h in types for h in HALF)


def gemm_nk(op: str, dims_text: str) -> tuple[int, int] | None:
    """(N, K) of a GEMM call from its ``Input Dims`` JSON text; None when it cannot tell."""
    try:
        dims = [d for d in json.loads(dims_text) if isinstance(d, list)]
        if op in ("aten::addmm", "aten::baddbmm"):
            dims = dims[1:]
        if len(dims) < 2 or len(dims[0]) < 2 or len(dims[1]) < 1:
            return None
        a, b = dims[0], dims[1]
        if op == "aten::linear":
            return (int(b[0]), int(a[-1])) if len(b) == 2 else None
        return (int(b[-1]), int(a[-1]))
    except (ValueError, TypeError, RecursionError):
        return None


def compact_json(text: str) -> str:
    """``Input Dims`` text as one short line (``[[1,141,512],[30522,512]]``); unchanged when not JSON."""
    try:
        return json.dumps(json.loads(text), separators=(",", ":"))
    except (ValueError, RecursionError):
        return text


@dataclass(frozen=True)
class GemmShape:
    """Calls of one (op, input dims, half or not), most kernel time first."""

    op: str
    dims: str
    n: int  # -1 when the dims do not tell
    k: int
    half: bool
    calls: int
    kernel_ns: int


@dataclass(frozen=True)
class GemmDimsResult:
    """One row per GEMM call with recorded shapes inside the steps (in row order)."""

    rank: int
    step_count: int  # steps the per-step numbers average over (0 without steps)
    compute_major: int | None  # compute capability of the device (NVIDIA), None when unknown
    kernel_ns: int  # every kernel inside the steps
    rows: I64  # the calls' op rows
    op: I64  # index into ``ops``
    ops: tuple[str, ...]
    dims: I64  # index into ``dims_texts`` (in string-id order), compacted JSON
    dims_texts: tuple[str, ...]
    known: B  # whether the dims tell N and K
    n: I64  # -1 when they do not
    k: I64
    half: B  # fp16 / bf16 inputs
    call_kernel_ns: I64  # time of the kernels each call launched
    kernel_rows: I64  # the kernels the calls launched
    kernel_call: I64  # per kernel, the call (row of the arrays above) that launched it

    def kernels_of(self, calls: B) -> I64:
        """The kernels launched by the chosen calls (a mask over the calls)."""
        out: I64 = self.kernel_rows[calls[self.kernel_call]]
        return out

    def misaligned(self, align: int) -> B:
        """Half-precision calls whose N or K is not a multiple of ``align``."""
        out: B = self.half & self.known & ((self.n % align != 0) | (self.k % align != 0))
        return out

    def shapes(self) -> list[GemmShape]:
        """The calls grouped by (op, dims, half), most kernel time first."""
        key = np.stack([self.op, self.dims, self.half.astype(np.int64)])
        uniq, first, inv = np.unique(key, axis=1, return_index=True, return_inverse=True)
        inv = np.asarray(inv).reshape(-1)
        calls = np.bincount(inv, minlength=uniq.shape[1])
        time = np.bincount(inv, weights=self.call_kernel_ns, minlength=uniq.shape[1])
        order = np.argsort(-time, kind="stable")
        return [GemmShape(self.ops[int(uniq[0, j])], self.dims_texts[int(uniq[1, j])], int(self.n[first[j]]),
                          int(self.k[first[j]]), bool(uniq[2, j]), int(calls[j]), int(time[j]))
                for j in order.tolist()]  # per distinct shape


@per_rank
def compute_gemm_dims(trace: Trace, rank: int) -> GemmDimsResult:
    """The rank's GEMM calls with recorded shapes: N, K, half precision, kernel time."""
    ev, pool = trace.events, trace.strings
    ops, counted = _innermost_gemm_calls(trace, rank)
    k = step_kernels(trace, rank)
    launcher = ev["op"][k].astype(np.int64)
    owner = np.full(len(k), -1, np.int64)
    owner[launcher >= 0] = nearest_marked_ancestor(ev["parent"], launcher[launcher >= 0], counted, include_self=True)
    pos = np.minimum(np.searchsorted(ops, owner), len(ops) - 1)
    mine = ops[pos] == owner
    kernel_ns = np.bincount(pos[mine], weights=ev["dur_ns"][k][mine], minlength=len(ops)).astype(np.int64)
    op_names, op = np.unique(ev["name"][ops], return_inverse=True)
    dims_ids, dims = np.unique(ev["input_dims"][ops], return_inverse=True)
    known, n, kk = _nk(trace, ev["name"][ops], ev["input_dims"][ops])
    dev = trace.device_of_rank(rank)
    return GemmDimsResult(
        rank=rank, step_count=len(kept_steps(trace, rank)),
        compute_major=dev.compute_major if dev is not None else None,
        kernel_ns=int(ev["dur_ns"][k].sum()), rows=ops.astype(np.int64), op=np.asarray(op, np.int64).reshape(-1),
        ops=tuple(str(s) for s in pool.decode(op_names)), dims=np.asarray(dims, np.int64).reshape(-1),
        dims_texts=tuple(compact_json(str(s)) for s in pool.decode(dims_ids)), known=known, n=n, k=kk,
        half=pool.mask(_is_half)[ev["input_types"][ops]], call_kernel_ns=kernel_ns,
        kernel_rows=k[mine], kernel_call=pos[mine].astype(np.int64))


def _innermost_gemm_calls(trace: Trace, rank: int) -> tuple[I64, B]:
    """The rank's GEMM calls with recorded shapes inside the steps, each GEMM once: a call with another
    such call beneath it (``linear`` over its ``addmm``, ``matmul`` over its ``mm``) is left out. Also,
    per event row, whether it is one of them."""
    ev = trace.events
    ops = in_step_rows(trace, rank, (int(EventKind.CPU_OP),))
    ops = ops[trace.strings.mask(is_gemm_op)[ev["name"][ops]] & (ev["input_dims"][ops] >= 0)]
    if len(ops) == 0:
        raise NotApplicable("no GEMM ops with recorded input shapes " + hint_for(trace, "(record_shapes=True)",
                                                                                 f"({NO_PYTORCH_OPS})"))
    counted = np.zeros(len(ev), bool)
    counted[ops] = True
    outer = nearest_marked_ancestor(ev["parent"], ops, counted)  # the GEMM call each one sits under
    counted[outer[outer >= 0]] = False
    return ops[counted[ops]], counted


def _nk(trace: Trace, names: npt.NDArray[np.int32], dims: npt.NDArray[np.int32]) -> tuple[B, I64, I64]:
    """Per call, whether the dims tell N and K, and N and K (-1 when not), parsed once per distinct
    (op, dims text)."""
    pool = trace.strings
    pairs, inv = np.unique(np.stack([names, dims]), axis=1, return_inverse=True)
    known = np.zeros(pairs.shape[1], bool)
    n = np.full(pairs.shape[1], -1, np.int64)
    k = np.full(pairs.shape[1], -1, np.int64)
    for j, (name_id, dims_id) in enumerate(pairs.T.tolist()):  # per distinct (op, shape), not per event
        nk = gemm_nk(pool[name_id], pool[dims_id])
        if nk is not None:
            known[j], (n[j], k[j]) = True, nk
    inv = np.asarray(inv).reshape(-1)
    return known[inv], n[inv], k[inv]
