"""Pipeline bubbles and all-to-all imbalance on the shared real traces.

No shared trace is pipeline-parallel (SOURCES.md, "Still not found": no permissively licensed
multi-rank trace with pipeline send / recv), so the pipeline analysis must say so on each of them.
PARAM DLRM (8 × V100) exchanges its embeddings with all-to-all: five ``nccl:all_to_all`` ops a rank
in ProfilerStep#10, each one NCCL SendRecv kernel. The oracle reads the raw JSON with the standard
library (kernel names and durations, the ops' ``Input Dims``), independently of stepscope.
"""

from __future__ import annotations

import gzip
import json
import math
import statistics
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis.all_to_all import compute_all_to_all
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.pipeline import compute_pipeline

DLRM = "param_dlrm/dlrm_8rank_v100"
MULTI_RANK = [DLRM, "ascend_msinsight/small_cnn_2rank_hccl_level1/text",
              "ascend_msinsight/small_cnn_2rank_hccl_level1/db", "hta/nccl_resnet_a100_rank0_of2",
              "hta/cpu_only_gloo_rank34_of300", "hta/ns_resolution_v100_ddp", "nsys_pipit/cloverleaf_cuda_a100"]
ITEM = {"float": 4, "int": 4, "long int": 8}  # the "Input type" spellings of DLRM's all_to_all ops


def _oracle(run: Path) -> dict[int, tuple[int, int, int]]:
    """rank → (SendRecv kernels, their summed duration in µs, the all_to_all ops' bytes from Input Dims)."""
    out = {}
    for f in sorted(run.glob("*.json.gz")):
        doc = json.loads(gzip.decompress(f.read_bytes()))
        ev = doc["traceEvents"]
        kernels = [e for e in ev if e.get("cat") == "kernel" and "SendRecv" in e["name"]]
        ops = [e for e in ev if e.get("name") == "nccl:all_to_all"]
        size = sum(ITEM[e["args"]["Input type"][0]] * math.prod(e["args"]["Input Dims"][0]) for e in ops)
        out[doc["distributedInfo"]["rank"]] = (len(kernels), sum(e["dur"] for e in kernels), size)
    return out


def test_dlrm_all_to_all_per_rank_equals_the_raw_kernels(shared_traces: Path) -> None:
    oracle = _oracle(shared_traces / DLRM)
    a = compute_all_to_all(stepscope.load(shared_traces / DLRM, use_cache=False))
    assert a.ranks.rank.tolist() == list(range(8)) and a.steps.step.tolist() == [10]
    assert a.ranks.count.tolist() == [float(oracle[r][0]) for r in range(8)] == [5.0] * 8
    assert a.ranks.time_ns.tolist() == [oracle[r][1] * 1000 for r in range(8)]  # one kernel at a time
    assert a.ranks.routed_in_bytes.tolist() == [oracle[r][2] for r in range(8)]
    times = [oracle[r][1] for r in range(8)]
    assert a.time_spread == pytest.approx(max(times) / statistics.median(times))  # rank 1: 9.5 ms
    assert int(a.steps.slowest_rank[0]) == 1
    assert a.routed_in_spread == 1.0  # every rank exchanges the same sizes


@pytest.mark.parametrize("run", MULTI_RANK)
def test_no_shared_trace_is_pipeline_parallel(shared_traces: Path, run: str) -> None:
    with pytest.raises(NotApplicable, match="point to point"):
        compute_pipeline(stepscope.load(shared_traces / run, use_cache=False))
