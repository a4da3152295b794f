"""Roofline and model FLOP utilisation: per operator shape and per kernel, the FLOPs and bytes moved
(:mod:`stepscope.analysis.op_costs`), the device time, the achieved TFLOP/s and TB/s, the arithmetic
intensity and the bound (compute or memory) against the device's peaks (:mod:`stepscope.analysis.peaks`);
per step the FLOPs known, the model FLOP utilisation and how much of the device time the FLOPs cover.

An op counts when its FLOPs are known (recorded, or from its shapes) and no op around it counts
(the outermost wins: ``aten::linear`` over its ``aten::addmm``), so no FLOP is counted twice. Its
device time is the busy time of the device rows it or any op inside it launched. A call is in the
step its op started in.

MFU = Σ over the step's calls of FLOPs ÷ peak(call's element type), ÷ step time: the share of the
step the device would need at peak for the FLOPs it did (the usual FLOPs ÷ (time × peak) when one
type is used). An unknown device, or an element type the device row gives no peak for, gives no
bound and no MFU — never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._groups import group_keys
from stepscope.analysis.attention_shapes import AttentionShapeTable, attention_shapes
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.categories_tracelens import launchers
from stepscope.analysis.common import rank_rows, step_windows, window_of
from stepscope.analysis.frames import TableResult
from stepscope.analysis.op_costs import KINDS, costed_name, row_costs
from stepscope.analysis.op_time import OpTime, op_time
from stepscope.analysis.peaks import DevicePeak, device_peak, element_type
from stepscope.analysis.platform import NO_PYTORCH_OPS, hint_for
from stepscope.model.schema import GPU_KINDS, EventKind
from stepscope.model.trace import DeviceInfo, Trace
from stepscope.model.uniq import unique_texts

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
S = npt.NDArray[np.object_]


@dataclass(frozen=True)
class RooflineTable(TableResult):
    """One row per op name and shapes (device time > 0), most time first. Rates are the group's
    FLOPs (bytes) over its summed device time; peak columns NaN where no peak is known."""

    name: S
    input_dims: S
    dtype: S  # the peak table's element type ('' unknown)
    kind: S  # GEMM | convolution | attention | recorded
    recorded: npt.NDArray[np.bool_]  # FLOPs from the trace's flops arg
    calls: I64
    gflops: F64  # per call
    mbytes: F64  # per call, MB (10^6 bytes); NaN unknown
    time_ns: I64
    tflops: F64  # achieved TFLOP/s
    tbps: F64  # achieved TB/s
    intensity: F64  # FLOP / byte
    peak_tflops: F64
    ridge: F64  # FLOP / byte where the roofs meet
    bound: S  # compute | memory | '' (unknown)
    roof_pct: F64  # achieved ÷ the roof at its intensity (min(peak, intensity × bandwidth))
    peak_pct: F64  # achieved ÷ peak FLOP/s

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class KernelRoofline(TableResult):
    """Per kernel name: the FLOPs and bytes of the ops that launched it, shared among an op's device
    rows in proportion to their durations; most time first."""

    name: S
    count: I64
    time_ns: I64
    gflops: F64
    tflops: F64
    tbps: F64
    intensity: F64
    peak_pct: F64  # FLOPs at each op's peak ÷ time; NaN without peaks

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class StepFlops(TableResult):
    """Per step window: FLOPs known, MFU and the share of device time the FLOPs cover."""

    step: I32
    time_ns: I64
    tflop: F64
    mfu_pct: F64  # NaN without a known peak (calls of a type without a peak count for nothing)
    covered_pct: F64  # device busy time inside costed ops ÷ all device busy time of the step
    busy_ns: I64  # all device busy time of the step (union)
    covered_ns: I64  # the part inside costed ops

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class RooflineView:
    """The roofline of one rank."""

    rank: int
    device: str  # the trace's device name ('' none recorded)
    peak: DevicePeak | None  # None: unknown device, no bound
    bandwidth_tbps: float  # NaN unknown
    ops: RooflineTable
    kernels: KernelRoofline
    steps: StepFlops
    mfu_pct: float  # over all steps; NaN without a peak
    covered_pct: float
    sdpa: AttentionShapeTable  # TraceLens's SDPA_fwd / SDPA_bwd rows


def rank_device(trace: Trace, rank: int) -> DeviceInfo | None:
    """The device the rank's GPU work ran on (its streams' device index), else its first device."""
    info = next((r for r in trace.ranks if r.rank == rank), None)
    if info is None or not info.devices:
        return None
    tr = trace.tracks
    dev = tr["device"][(tr["rank"] == rank) & (tr["device"] >= 0)]
    if len(dev):
        common = int(np.bincount(dev).argmax())
        return next((d for d in info.devices if d.index == common), info.devices[0])
    return info.devices[0]


def _is_tf32(name: str) -> bool:
    return "tf32" in name.lower()


def element_types(trace: Trace, ot: OpTime, torch_types: S, kinds: I64, tf32_convs: bool) -> S:
    """The peak table's element type of each call: its operands' type, except fp32 work that ran on
    TF32 tensor cores — a call one of whose kernels says ``tf32`` in its name, and, with
    ``tf32_convs`` (an NVIDIA part with TF32), every fp32 convolution (PyTorch's default
    ``torch.backends.cudnn.allow_tf32 = True``)."""
    uniq, inv = unique_texts(torch_types)
    out = np.array([element_type(t) or "" for t in uniq.tolist()], dtype=object)[inv]  # per type
    says = trace.strings.mask(_is_tf32)[trace.events["name"][ot.rows]]
    tf32 = np.bincount(ot.owner, weights=says, minlength=len(ot.op)) > 0
    if tf32_convs:
        tf32 |= kinds == KINDS.index("convolution")
    out[(out == "fp32") & tf32] = "tf32"
    return out


def _peaks_of(peak: DevicePeak | None, etype: S) -> F64:
    """Peak TFLOP/s of each element type (NaN unknown)."""
    out = np.full(len(etype), np.nan)
    if peak is None:
        return out
    for t in unique_texts(etype)[0].tolist():  # per distinct element type
        p = peak.peak_tflops(t)
        out[etype == t] = np.nan if p is None else p
    return out


@dataclass(frozen=True)
class _Costs:
    """FLOPs, bytes, kind, torch element type and whether recorded, per row of some index."""

    flops: F64
    nbytes: F64
    kind: I64
    dtype: S
    recorded: npt.NDArray[np.bool_]

    def at(self, rows: I64) -> _Costs:
        return _Costs(self.flops[rows], self.nbytes[rows], self.kind[rows], self.dtype[rows], self.recorded[rows])


def _chosen(trace: Trace, rows: I64) -> tuple[npt.NDArray[np.bool_], I64, _Costs]:
    """Mask (over event rows) of the ops whose FLOPs are known; the costed op rows, ascending, and their costs."""
    ev = trace.events
    ops = rows[(ev["kind"][rows] == int(EventKind.CPU_OP))]
    flops_arg = ev["flops"][ops]
    ops = ops[trace.strings.mask(costed_name)[ev["name"][ops]] | (np.isfinite(flops_arg) & (flops_arg > 0))]
    rc = row_costs(trace, ops)
    chosen = np.zeros(len(ev["name"]), bool)
    chosen[ops] = np.isfinite(rc.flops) & (rc.flops > 0)
    return chosen, ops, _Costs(rc.flops, rc.nbytes, rc.kind, rc.dtype, rc.recorded)


def _bound(tflops: F64, tbps: F64, intensity: F64, peak: F64, bandwidth: float) -> tuple[F64, S, F64, F64]:
    """Ridge point, bound, % of the roof and % of peak of each row (NaN / '' without a peak)."""
    ridge = peak / bandwidth if np.isfinite(bandwidth) else np.full(len(peak), np.nan)
    known = np.isfinite(ridge) & np.isfinite(intensity)
    bound = np.where(known, np.where(intensity >= ridge, "compute", "memory"), "").astype(object)
    roof = np.minimum(peak, intensity * bandwidth)
    with np.errstate(invalid="ignore", divide="ignore"):
        roof_pct = np.where(known, tflops / roof * 100.0, np.nan)
        peak_pct = tflops / peak * 100.0
    return ridge, bound, roof_pct, peak_pct


def _rates(flops: npt.ArrayLike, nbytes: npt.ArrayLike, time_ns: npt.ArrayLike) -> tuple[F64, F64, F64]:
    f, b = np.asarray(flops, np.float64), np.asarray(nbytes, np.float64)
    secs = np.maximum(np.asarray(time_ns, np.float64), 1.0) / 1e9
    with np.errstate(invalid="ignore", divide="ignore"):
        return f / secs / 1e12, b / secs / 1e12, np.where(b > 0, f / b, np.nan)


def _op_table(trace: Trace, ot: OpTime, c: _Costs, etype: S, peak: DevicePeak | None,
              bandwidth: float) -> RooflineTable:
    ev, pool = trace.events, trace.strings
    flops, nbytes, kind, rec = c.flops, c.nbytes, c.kind, c.recorded
    ids = unique_texts(etype)[1]
    keys, inv = group_keys(ev["name"][ot.op], ev["input_dims"][ot.op], ev["input_types"][ot.op],
                           ev["concrete_inputs"][ot.op], kind, rec, ids)
    g = len(keys[0])
    calls = np.bincount(inv, minlength=g).astype(np.int64)
    first = np.full(g, len(inv), np.int64)
    np.minimum.at(first, inv, np.arange(len(inv)))
    f_sum = np.bincount(inv, weights=flops, minlength=g)
    b_sum = np.bincount(inv, weights=nbytes, minlength=g)  # NaN stays NaN: bytes unknown
    time = np.rint(np.bincount(inv, weights=ot.busy_ns, minlength=g)).astype(np.int64)
    tflops, tbps, intensity = _rates(f_sum, b_sum, time)
    et = etype[first]
    peak_t = _peaks_of(peak, et)
    ridge, bound, roof_pct, peak_pct = _bound(tflops, tbps, intensity, peak_t, bandwidth)
    o = np.argsort(-time, kind="stable")
    o = o[time[o] > 0]
    return RooflineTable(
        name=pool.decode(keys[0].astype(np.int32))[o], input_dims=pool.decode(keys[1].astype(np.int32))[o],
        dtype=et[o], kind=np.array(KINDS, dtype=object)[keys[4][o]], recorded=keys[5][o].astype(bool),
        calls=calls[o], gflops=f_sum[o] / calls[o] / 1e9, mbytes=b_sum[o] / calls[o] / 1e6, time_ns=time[o],
        tflops=tflops[o], tbps=tbps[o], intensity=intensity[o], peak_tflops=peak_t[o], ridge=ridge[o],
        bound=bound[o], roof_pct=roof_pct[o], peak_pct=peak_pct[o])


def _kernel_table(trace: Trace, ot: OpTime, flops: F64, nbytes: F64, peak_t: F64) -> KernelRoofline:
    ev = trace.events
    kernel = ev["kind"][ot.rows] == int(EventKind.KERNEL)  # copies and memsets take no share of the FLOPs
    rows, owner = ot.rows[kernel], ot.owner[kernel]
    dur = ev["dur_ns"][rows].astype(np.float64)
    op_dur = np.bincount(owner, weights=dur, minlength=len(ot.op))
    share = dur / np.maximum(op_dur[owner], 1.0)
    f, b = flops[owner] * share, nbytes[owner] * share
    (names,), inv = group_keys(ev["name"][rows])
    g = len(names)
    time = np.rint(np.bincount(inv, weights=dur, minlength=g)).astype(np.int64)
    f_sum, b_sum = np.bincount(inv, weights=f, minlength=g), np.bincount(inv, weights=b, minlength=g)
    at_peak = np.bincount(inv, weights=np.nan_to_num(f / (peak_t[owner] * 1e12)), minlength=g).astype(float)
    if np.isnan(peak_t).all():
        at_peak[:] = np.nan  # no peak: no % of it
    tflops, tbps, intensity = _rates(f_sum, b_sum, time)
    o = np.argsort(-time, kind="stable")
    return KernelRoofline(name=trace.strings.decode(names.astype(np.int32))[o],
                          count=np.bincount(inv, minlength=g).astype(np.int64)[o], time_ns=time[o],
                          gflops=f_sum[o] / 1e9, tflops=tflops[o], tbps=tbps[o], intensity=intensity[o],
                          peak_pct=at_peak[o] / np.maximum(time[o], 1) * 1e9 * 100.0)


def _steps(trace: Trace, rank: int, ot: OpTime, device_rows: I64, flops: F64, peak_t: F64) -> StepFlops:
    ev = trace.events
    wins = step_windows(trace, rank)
    w = window_of(wins, ev["ts_ns"][ot.op])
    ok = w >= 0
    n = len(wins)
    tflop = np.bincount(w[ok], weights=flops[ok], minlength=n) / 1e12
    at_peak = np.bincount(w[ok], weights=np.nan_to_num(flops[ok] / (peak_t[ok] * 1e12)), minlength=n).astype(float)
    if np.isnan(peak_t).all():
        at_peak[:] = np.nan  # no peak at all: no MFU (a type without a peak alone just adds nothing)
    ts = ev["ts_ns"]
    allv = intervals.union(ts[device_rows], ts[device_rows] + ev["dur_ns"][device_rows])
    cov = intervals.union(ts[ot.rows], ts[ot.rows] + ev["dur_ns"][ot.rows])
    busy = intervals.covered_in_windows(allv, wins.start_ns, wins.end_ns).astype(np.float64)
    covered = intervals.covered_in_windows(cov, wins.start_ns, wins.end_ns).astype(np.float64)
    dur = wins.dur_ns.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mfu, cov_pct = at_peak / (dur / 1e9) * 100.0, np.where(busy > 0, covered / busy * 100, 0.0)
    return StepFlops(step=wins.step.astype(np.int32), time_ns=wins.dur_ns.astype(np.int64), tflop=tflop,
                     mfu_pct=mfu, covered_pct=cov_pct, busy_ns=np.rint(busy).astype(np.int64),
                     covered_ns=np.rint(covered).astype(np.int64))


def compute_roofline(trace: Trace, rank: int) -> RooflineView:
    """The roofline of one rank; NotApplicable without device work or without any op of known FLOPs."""
    rows = rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))
    if len(rows) == 0:
        raise NotApplicable("no GPU activity in this trace (CPU-only run, or profiled without device activity)")
    device_rows, _, _ = launchers(trace, rows)
    chosen, costed, costs = _chosen(trace, rank_rows(trace, rank))
    ot = op_time(trace, device_rows, chosen, outermost=True)
    if len(ot.op) == 0:
        raise NotApplicable("no operator with known FLOPs launched device work " + hint_for(
            trace, "(record_shapes=False, or no GEMM / convolution / attention op, and no flops recorded)",
            f"({NO_PYTORCH_OPS})"))
    dev = rank_device(trace, rank)
    peak = device_peak(dev)
    bandwidth = peak.bandwidth_tbps if peak is not None else float("nan")
    mine = costs.at(np.searchsorted(costed, ot.op))  # every owning op is a costed one
    has_tf32 = peak is not None and peak.peak_tflops("tf32") is not None
    nvidia_tf32 = dev is not None and dev.vendor == "nvidia" and has_tf32
    etype = element_types(trace, ot, mine.dtype, mine.kind, nvidia_tf32)
    flops, nbytes, peak_t = mine.flops, mine.nbytes, _peaks_of(peak, etype)
    steps = _steps(trace, rank, ot, device_rows, flops, peak_t)
    total_s = steps.time_ns.sum() / 1e9
    at_peak = float(np.sum(steps.mfu_pct / 100.0 * steps.time_ns / 1e9))
    busy_all = float(steps.busy_ns.sum())
    return RooflineView(
        rank=rank, device=dev.name if dev is not None else "", peak=peak, bandwidth_tbps=bandwidth,
        ops=_op_table(trace, ot, mine, etype, peak, bandwidth),
        kernels=_kernel_table(trace, ot, flops, nbytes, peak_t), steps=steps,
        mfu_pct=at_peak / total_s * 100.0 if total_s > 0 else float("nan"),
        covered_pct=100.0 * float(steps.covered_ns.sum()) / busy_all if busy_all > 0 else 0.0,
        sdpa=attention_shapes(trace, rows))
