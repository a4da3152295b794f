"""Terminal views of the distributed analysis (per rank) and of the cross-rank verdict."""

from __future__ import annotations

import numpy as np
from rich.console import Console

from stepscope.analysis.bundle import RankResults
from stepscope.analysis.comm_matrix import CommMatrix
from stepscope.analysis.distributed import DistributedResult
from stepscope.analysis.exposed_comm import ExposedComm
from stepscope.analysis.registry import BREAKDOWN, DISTRIBUTED, SOFTWARE
from stepscope.analysis.stragglers import ClusterResult
from stepscope.report.fmt import imbalance_text
from stepscope.report.verdict_texts import CPU_PART_WORDS
from stepscope.report.views._deep import gbps, ms, nbytes, pct, step_label, table


def show_distributed(rr: RankResults, console: Console, top: int, platform: str = "cuda") -> bool:
    """The distributed view of a rank; one whose collectives run on the host (no communication
    kernel: gloo on the CPU) gets the communication its step breakdown counts instead. False when
    the rank communicates not at all."""
    r = rr.get(DISTRIBUTED)
    if r is not None:
        render_distributed(r, console, top)
        return True
    bd, sw = rr.get(BREAKDOWN), rr.get(SOFTWARE)
    comm = float(bd.avg_category_ns[bd.categories.index("communication")]) if bd is not None else 0.0
    if bd is None or comm <= 0:
        return False
    where = ", ".join(w for w in (sw.comm_backend if sw is not None else None,
                                  "on the CPU" if sw is not None and not sw.has_device else None) if w)
    # a CPU-only rank has no kernels to miss
    kernels = "" if sw is not None and not sw.has_device else "no communication kernels: "
    console.print(f"[bold]rank {rr.rank}: distributed[/bold]: {kernels}the collectives run on the "
                  f"host{f' ({where})' if where else ''}; {ms(comm)} ms per step inside them, "
                  f"{pct(100.0 * comm / bd.avg_step_ns)} of the step (the step breakdown's Comm: the time in the "
                  "collectives, waiting for the other ranks included)")
    return True


def render_distributed(r: DistributedResult, console: Console, top: int) -> None:
    t = table(f"rank {r.rank}: computation vs communication (ms)", "step", "step", "computation",
              "communication", "overlap", "other", "wait", "transfer")
    for i in range(len(r.step)):  # per step
        t.add_row(step_label(int(r.step[i])), ms(r.step_ns[i]), ms(r.computation_ns[i]),
                  ms(r.communication_ns[i]), ms(r.overlap_ns[i]), ms(r.other_ns[i]), ms(r.wait_ns[i]),
                  ms(r.transfer_ns[i]))
    console.print(t)
    console.print(f"  overlap ratio |comm ∩ compute| / |comm| = {pct(r.overlap_ratio_pct)}; "
                  f"{r.comm_kernel_count} communication of {r.kernel_count} kernels; "
                  f"wait/transfer by {r.wait_method}")
    c = r.collectives
    t = table(f"rank {r.rank}: collectives", "type", "group", "count", "bytes", "time ms", "mean latency ms",
              "algbw GB/s", "busbw GB/s", right_from=2)
    for i in range(min(top, len(c.count))):  # per collective group
        t.add_row(c.coll_type[i], c.pg_name[i] or "-", f"{c.count[i]:,}", nbytes(float(c.bytes_total[i])),
                  ms(c.time_ns[i]), ms(c.mean_latency_ns[i]), gbps(float(c.algbw_gbps[i])),
                  gbps(float(c.busbw_gbps[i])))
    console.print(t)


LABELS = {"kernel_count": "kernels", "compute_ns": "compute", "step_ns": "step time"}


def render_cluster(r: ClusterResult, console: Console, top: int) -> None:
    """The ranks' work per average step; a job without device work (no rank ran a kernel: a CPU-only job) is
    compared on its host work, said as its verdict says it, without the device's columns (all 0 there)."""
    device = bool(r.kernel_count.max(initial=0) > 0 or r.comm_ns.max(initial=0) > 0)
    cols = (("kernels", "compute ms", "step ms", "comm kernels ms", "wait in comm kernels ms", "transfer ms") if device
            else (f"{CPU_PART_WORDS['host']} ms", "step ms"))
    t = table("ranks (per average step)", "rank", *cols, "more work in")
    for i, rank in enumerate(r.ranks):  # per rank
        reasons = ", ".join(LABELS.get(m, m) for m in r.slow_reasons.get(rank, []))
        style = "bold red" if rank in r.slow_reasons else ""
        cells = ((f"{r.kernel_count[i]:,.0f}", ms(r.compute_ns[i]), ms(r.step_ns[i]), ms(r.comm_ns[i]),
                  ms(r.wait_ns[i]), ms(r.transfer_ns[i])) if device
                 else (ms(r.host_ns[i]) if i < len(r.host_ns) else "-", ms(r.step_ns[i])))
        t.add_row(str(rank), *cells, reasons, style=style)
    console.print(t)
    more = "none"
    if r.slow_ranks:
        more = "[bold red]" + ", ".join(map(str, r.slow_ranks)) + "[/bold red] (" + "; ".join(
            f"rank {rank}: " + ", ".join(f"{LABELS.get(k, k)} +{v:.0f} %" for k, v in r.excess_pct[rank].items()
                                         if v > 0)
            for rank in r.slow_ranks) + " vs the median)"
    metrics = "kernels, compute, step time" if device else "step time"
    console.print(f"  ranks with more work ({metrics}): {more}; "
                  f"{imbalance_text(pct(r.imbalance_pct), r.imbalance_of)}")


def render_comm_matrix(m: CommMatrix, console: Console, top: int) -> None:
    lk = m.links
    t = table(f"communication matrix (from the {m.source} of ranks {', '.join(map(str, m.ranks))}; "
              f"top {min(top, len(lk))} of {len(lk)} links)", "src", "dst", "transport", "op", "peer from", "count",
              "bytes", "time ms", "bandwidth GB/s", right_from=5)
    for i in range(min(top, len(lk))):  # per link
        t.add_row(str(lk.src[i]), str(lk.dst[i]), str(lk.transport[i]) or "-", str(lk.op[i]) or "all",
                  str(lk.basis[i]), f"{lk.count[i]:,}", nbytes(float(lk.bytes[i])), ms(lk.time_ns[i]),
                  gbps(float(lk.bandwidth_gbps[i])))
    console.print(t)
    for note in matrix_notes(m):
        console.print(f"  {note}")


def matrix_notes(m: CommMatrix) -> list[str]:
    """What the reader must know of how the cells were placed (peers not recorded, kernels left out)."""
    basis = set(m.links.basis.tolist())
    out = []
    if "group" in basis:
        out.append("peer from 'group': the trace names no Src/Dst Rank; the peer is the other rank of a "
                   "two-rank group, or (all-to-all) each member of the op's group, splits taken as even")
    if "world" in basis:
        out.append("peer from 'world': the trace names no process group; all-to-all split evenly over "
                   "ranks 0..world-1 of distributedInfo")
    if m.unplaced_count:
        out.append(f"{m.unplaced_count:,} kernels ({ms(m.unplaced_time_ns)} ms) name no peer or group: not in a cell")
    if m.source != "Ascend profiler communication_matrix.json":
        out.append("group collectives (all-reduce, all-gather ...) have no cell: the trace does not record "
                   "their ring / tree (see --view slow_links)")
    return out


def render_exposed_comm(e: ExposedComm, console: Console, top: int) -> None:
    """Every rank's steps: communication exposed (not hidden by the rank's compute) and overlapped."""
    r = e.steps
    rows = range(len(r)) if len(r) <= top else np.argsort(-r.exposed_ns, kind="stable")[:top].tolist()
    shown = "" if len(r) <= top else f"; the {top} most exposed of {len(r)}, --top for more"
    t = table(f"communication exposed vs overlapped with compute, per rank and step (ms; exposed and overlapped are "
              f"the distributed view's communication and overlap{shown})", "rank", "step", "step", "all comm",
              "exposed", "overlapped", "exposed % of step", "overlapped % of comm", right_from=2)
    for i in rows:  # per rank and step, at most top
        t.add_row(str(r.rank[i]), step_label(int(r.step[i])), ms(r.step_ns[i]), ms(r.comm_ns[i]), ms(r.exposed_ns[i]),
                  ms(r.overlapped_ns[i]), pct(float(r.exposed_pct[i])), pct(float(r.overlapped_pct[i])))
    console.print(t)
    k = e.ranks
    i = int(k.exposed_ns.argmax())
    console.print(f"  most exposed: rank {int(k.rank[i])}, {ms(k.exposed_ns[i])} ms over its steps "
                  f"({pct(float(k.exposed_pct[i]))} of its step time; {pct(float(k.overlapped_pct[i]))} of its "
                  "communication overlapped)")
