"""The Kineto communication matrix of param_dlrm/dlrm_8rank_v100 against the raw JSON read with the
standard library: each all-to-all op (``nccl:all_to_all``, Input Dims × Input type) runs as one
``ncclKernel_SendRecv`` kernel; the trace names no peer and no group, so each op's input bytes are
split evenly over ranks 0..7 of ``distributedInfo`` (basis "world"), and each cell's time is the
sum of the source rank's SendRecv kernels (docs/analyses/comm_matrix.md#kineto-traces)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.analysis.comm_matrix import compute_comm_matrix

RUN = "param_dlrm/dlrm_8rank_v100"
ELEM = {"float": 4, "int": 4, "long int": 8}


def _raw_rank(path: Path) -> tuple[int, int, int, int]:
    """(rank, world, Σ all-to-all input bytes, Σ duration ns of the SendRecv kernels under them)."""
    with gzip.open(path) as f:
        doc = json.loads(f.read())
    ev: list[dict[str, Any]] = doc["traceEvents"]
    ops = [e for e in ev if e.get("name") == "nccl:all_to_all"]
    launch_ts = {e["args"]["correlation"]: (e["ts"], e["tid"]) for e in ev
                 if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    nbytes, dur_ns = 0, 0
    for op in ops:  # per all-to-all op: its size and its kernels
        dims, types = op["args"]["Input Dims"], op["args"]["Input type"]
        nbytes += sum(d[0] * ELEM[t] for d, t in zip(dims, types) if d)
        for k in ev:  # the kernels launched inside it
            if k.get("cat") == "kernel" and "SendRecv" in k["name"]:
                ts, tid = launch_ts[k["args"]["correlation"]]
                if tid == op["tid"] and op["ts"] <= ts <= op["ts"] + op["dur"]:
                    dur_ns += round(k["dur"] * 1000)
    info = doc["distributedInfo"]
    return int(info["rank"]), int(info["world_size"]), nbytes, dur_ns


def test_dlrm_all_to_all_cells_equal_the_raw_json(shared_traces: Path) -> None:
    files = sorted((shared_traces / RUN).glob("*.json.gz"))
    raw = {r: (w, b, t) for r, w, b, t in map(_raw_rank, files)}
    assert sorted(raw) == list(range(8)) and {w for w, _, _ in raw.values()} == {8}
    m = compute_comm_matrix(stepscope.load(shared_traces / RUN))
    lk = m.links
    got = {(int(lk.src[i]), int(lk.dst[i])): (int(lk.bytes[i]), int(lk.time_ns[i])) for i in range(len(lk))}
    want = {(s, d): (b // 8, t) for s, (_, b, t) in raw.items() for d in range(8)}
    assert got == want
    assert set(lk.op.tolist()) == {"all_to_all"} and set(lk.basis.tolist()) == {"world"}
    assert lk.count.tolist() == [5] * 64 and m.unplaced_count == 0
    assert raw[0][1:] == (64_448, 3_999_000)  # rank 0: 2 x 6144 float + 24 long + 384 int + 3392 int
    for i in range(len(lk)):  # per cell: bandwidth = bytes / time
        assert float(lk.bandwidth_gbps[i]) == pytest.approx(lk.bytes[i] / lk.time_ns[i])


def test_the_document_lists_the_largest_links_and_says_how_many(shared_traces: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A world-wide all-to-all has ranks² links: the document lists the MAX_DOC_LINKS largest (here
    5 of DLRM's 64) and the total; the typed result keeps every link."""
    from stepscope.analysis.bundle import analyze
    from stepscope.report import json_deep

    trace = stepscope.load(shared_traces / RUN)
    full = compute_comm_matrix(trace).links
    monkeypatch.setattr(json_deep, "MAX_DOC_LINKS", 5)
    sec = json_deep.comm_matrix_section(analyze(trace, names=["comm_matrix"]))
    assert sec is not None and sec["links_total"] == len(full.src) == 64
    assert [(x["src"], x["dst"], x["bytes"]) for x in sec["links"]] == \
        [(int(full.src[i]), int(full.dst[i]), int(full.bytes[i])) for i in range(5)]
    assert sorted(full.bytes.tolist(), reverse=True)[:5] == [x["bytes"] for x in sec["links"]]
