"""The map-reduce path on every shared multi-rank trace (and the one-file distributed ones): the same
§12 document as the whole-model path, with the local engine and, where Ray is installed, Ray."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.advisor.engine import advise
from stepscope.analysis.bundle import analyze
from stepscope.mapreduce.driver import map_reduce
from stepscope.report import json_out
from stepscope.report.advice_json import finding_dict

RUNS = ["param_dlrm/dlrm_8rank_v100", "ascend_msinsight/small_cnn_2rank_hccl_level1/text",
        "ascend_msinsight/small_cnn_2rank_hccl_level1/db", "hta/nccl_resnet_a100_rank0_of2",
        "hta/cpu_only_gloo_rank34_of300", "hta/ns_resolution_v100_ddp"]
#: one rank each, with the graph capture traces vLLM saves beside the replay (capture_traces/)
CAPTURE_RUNS = ["tracelens/vllm_gptoss_mi300x_decode_bs32_full_hipgraph",
                "tracelens/vllm_gptoss_mi300x_prefilldecode_piecewise_hipgraph"]
REPO_RUNS = ["cpu_ddp_2rank"]  # tests/data: gloo, 2 ranks
HAVE_RAY = importlib.util.find_spec("ray") is not None


def whole(path: Path) -> dict[str, Any]:
    bundle = analyze(stepscope.load(path))
    return json_out.to_json(bundle, [finding_dict(f) for f in advise(bundle)])


def paths(shared: Path) -> list[Path]:
    here = Path(__file__).resolve().parents[1] / "data"
    return [shared / r for r in RUNS] + [here / r for r in REPO_RUNS]


@pytest.mark.parametrize("run", RUNS)
def test_local_engine_same_document(shared_traces: Path, run: str) -> None:
    path = shared_traces / run
    mr = map_reduce(path, measure=True)
    assert mr.document == whole(path)
    assert len(mr.summary_bytes) == len(mr.document["ranks"])


@pytest.mark.parametrize("run", CAPTURE_RUNS)
def test_capture_traces_beside_a_rank_file_are_read_with_it(shared_traces: Path, run: str) -> None:
    mr = map_reduce(shared_traces / run, use_cache=False)
    assert mr.document == whole(shared_traces / run)
    assert mr.document["ranks"][0]["graphs"]["has_capture"]  # the ops named at capture, not only the replay


def test_dlrm_summaries_are_small(shared_traces: Path) -> None:
    mr = map_reduce(shared_traces / RUNS[0], measure=True)
    assert max(mr.summary_bytes.values()) < 128 << 10  # each rank file is ~0.95 MB of JSON, ~3.4k events
    assert mr.document["cluster"]["rank_count"] == 8


def test_dlrm_arrivals_and_job_verdict_from_the_reduce_step(shared_traces: Path) -> None:
    """The cross-rank sections main's whole-model path gives DLRM (rank 7 the culprit the others wait
    for, tests/e2e/test_arrivals_real.py) are there on the map-reduce path, not merely equal by absence."""
    doc = map_reduce(shared_traces / RUNS[0]).document
    arrivals = doc["cluster"]["arrivals"]
    assert len(arrivals["ranks"]) == 8 and [c["rank"] for c in arrivals["culprits"]] == [7]
    assert doc["cluster"]["slow_links"]["links"]
    job = doc["verdicts"][0]
    assert (job["rank"], job["ranks"], job["set_by"]) == (None, [7], "waited-for")


def test_repo_gloo_run_same_document() -> None:
    path = Path(__file__).resolve().parents[1] / "data" / "cpu_ddp_2rank"
    assert map_reduce(path, use_cache=False).document == whole(path)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    if not HAVE_RAY:
        pytest.skip("ray is not installed in this environment (pip install 'stepscope[ray]')")
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING")
    try:
        yield
    finally:
        ray.shutdown()


def test_ray_engine_same_document(shared_traces: Path, local_ray: None) -> None:
    for path in paths(shared_traces):
        assert map_reduce(path, engine="ray").document == whole(path), path
