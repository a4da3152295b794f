"""The communication matrix of a Kineto trace: point-to-point and all-to-all kernels in their
(src, dst) cells, each byte once (docs/analyses/comm_matrix.md#kineto-traces).

The hand-made 3-rank run (world 3, float = 4 bytes, µs):

* rank 0: a send of 1000 floats to rank 1 (``Dst Rank`` 1), 10 µs; an all-to-all of 3000 floats in
  group [0, 1, 2], 30 µs → 4000 bytes to each member.
* rank 1: the matching recv from rank 0 (``Src Rank`` 0, 12 µs: the receiver's view, not counted —
  rank 0 is in the trace); a ``batch_isend_irecv`` SendRecv recorded as "coalesced" in the two-rank
  group [1, 2] sending 500 floats, receiving 250, 20 µs; an all-to-all of 6000 floats, 40 µs.
* rank 2: the other side of the coalesced kernel (sends 250 floats, receives 500; 22 µs); a recv of
  200 floats from rank 5 (not profiled: the receiver's view is the only one), 7 µs; a send naming no
  peer in a three-rank group (unplaced), 9 µs; an all-to-all of 300 floats, 15 µs.

Cells (src, dst, op, peer from: bytes, µs): (0,1,p2p,recorded: 4000, 10); (0,d,a2a,group: 4000, 30)
for d = 0, 1, 2; (1,2,p2p,group: 2000, 20); (1,d,a2a: 8000, 40); (2,1,p2p,group: 1000, 22);
(5,2,p2p,recorded: 800, 7); (2,d,a2a: 400, 15). Unplaced: 1 kernel, 9 µs.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from rich.console import Console

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.comm_matrix import compute_comm_matrix
from stepscope.analysis.registry import COMM_MATRIX
from stepscope.model.trace import Trace
from stepscope.report.views.distributed import render_comm_matrix
from tests.builders import TraceBuilder, kargs, load_ranks

US = 1000
SENDRECV = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
ALL = "[0, 1, 2]"


def _kernel(b: TraceBuilder, t: list[int], dur: int, coll: str, n_in: int, n_out: int, group: str,
            **peer: int) -> None:
    t[0] += 100
    args = {"Collective name": coll, "In msg nelems": n_in, "Out msg nelems": n_out, "dtype": "Float",
            "Group size": len(group.split(",")), "Process Group Name": group, "Process Group Ranks": group}
    args.update({("Dst Rank" if k == "dst" else "Src Rank"): v for k, v in peer.items()})
    b.launch_kernel(SENDRECV, launch_ts=t[0], launch_dur=1, ts=t[0] + 5, dur=dur, stream=20, **kargs(args))


def three_ranks(tmp_path: Path) -> Trace:
    bs = [TraceBuilder(rank=r, world_size=3) for r in range(3)]
    t = [0]
    _kernel(bs[0], t, 10, "send", 1000, 1000, ALL, dst=1)
    _kernel(bs[0], t, 30, "all_to_all", 3000, 3000, ALL)
    _kernel(bs[1], t, 12, "recv", 1000, 1000, ALL, src=0)
    _kernel(bs[1], t, 20, "coalesced", 500, 250, "[1, 2]")
    _kernel(bs[1], t, 40, "all_to_all", 6000, 6000, ALL)
    _kernel(bs[2], t, 22, "coalesced", 250, 500, "[1, 2]")
    _kernel(bs[2], t, 7, "recv", 200, 200, ALL, src=5)
    _kernel(bs[2], t, 9, "send", 100, 100, ALL)
    _kernel(bs[2], t, 15, "all_to_all", 300, 300, ALL)
    return load_ranks(bs, tmp_path)


EXPECTED = {
    (0, 1, "p2p", "recorded"): (4000, 10), (1, 2, "p2p", "group"): (2000, 20), (2, 1, "p2p", "group"): (1000, 22),
    (5, 2, "p2p", "recorded"): (800, 7),
    **{(0, d, "all_to_all", "group"): (4000, 30) for d in range(3)},
    **{(1, d, "all_to_all", "group"): (8000, 40) for d in range(3)},
    **{(2, d, "all_to_all", "group"): (400, 15) for d in range(3)},
}


def _cells(trace: Trace) -> dict[tuple[int, int, str, str], tuple[int, int]]:
    lk = compute_comm_matrix(trace).links
    return {(int(lk.src[i]), int(lk.dst[i]), str(lk.op[i]), str(lk.basis[i])):
            (int(lk.bytes[i]), int(lk.time_ns[i]) // US) for i in range(len(lk))}


def test_each_transfer_lands_in_its_cell_once(tmp_path: Path) -> None:
    trace = three_ranks(tmp_path)
    assert _cells(trace) == EXPECTED
    m = compute_comm_matrix(trace)
    assert (m.unplaced_count, m.unplaced_time_ns) == (1, 9 * US)
    assert m.links.count.tolist() == [1] * 13 and m.ranks == (0, 1, 2)
    i = [(int(s), int(d), str(o)) for s, d, o in zip(m.links.src, m.links.dst, m.links.op)].index((0, 1, "p2p"))
    assert float(m.links.bandwidth_gbps[i]) == pytest.approx(4000 / (10 * US))


def test_each_ranks_pickled_record_gives_the_same_matrix(tmp_path: Path) -> None:
    trace = three_ranks(tmp_path)
    records = {r: pickle.loads(pickle.dumps(COMM_MATRIX.per_rank(trace, r))) for r in trace.rank_ids}
    # summed per (src, dst, op, basis) on the rank: all-to-all 3 sent + 2 received; p2p rank 0: 0->1; rank 1:
    # 0->1 (its recv), 1->2 and 2->1 (coalesced); rank 2: 2->1 and 1->2 (coalesced), 5->2 (its recv)
    assert [len(records[r][1]) for r in (0, 1, 2)] == [6, 8, 8]
    lk = COMM_MATRIX.combine(records).links
    got = {(int(lk.src[i]), int(lk.dst[i]), str(lk.op[i]), str(lk.basis[i])): (int(lk.bytes[i]),
                                                                               int(lk.time_ns[i]) // US)
           for i in range(len(lk))}
    assert got == EXPECTED


def test_the_view_says_which_peers_come_from_the_group(tmp_path: Path) -> None:
    console = Console(record=True, width=200)
    render_comm_matrix(compute_comm_matrix(three_ranks(tmp_path)), console, 20)
    text = console.export_text()
    assert "peer from 'group'" in text and "1 kernels (0.009 ms)" in text
    assert "group collectives" in text


def test_no_p2p_or_all_to_all_is_not_applicable(tmp_path: Path) -> None:
    bs = [TraceBuilder(rank=r, world_size=2) for r in range(2)]
    for b in bs:
        b.launch_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", launch_ts=1, launch_dur=1, ts=5, dur=10,
                        **kargs({"Collective name": "allreduce", "In msg nelems": 10, "Out msg nelems": 10,
                                 "dtype": "Float", "Process Group Ranks": "[0, 1]"}))
    with pytest.raises(NotApplicable):
        compute_comm_matrix(load_ranks(bs, tmp_path))
