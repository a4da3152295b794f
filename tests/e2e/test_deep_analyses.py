"""The deep analyses on the real traces (the Bar of issue 4). Skips when /work/shared/traces is absent."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

import stepscope
from stepscope.analysis.bundle import Bundle, analyze
from stepscope.analysis.registry import (
    CLUSTER,
    CRITICAL_PATH,
    DISTRIBUTED,
    FUSION,
    IDLE,
    LAUNCH,
    LAUNCH_CONFIG,
    MEMCPY,
    SYNC,
)
from stepscope.report.json_out import to_json
from stepscope.report.terminal import render

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason=f"real traces not found at {TRACES}")
DEEP = ["distributed", "idle", "critical_path", "sync", "memcpy", "launch", "launch_config", "fusion", "cluster"]
_BUNDLES: dict[str, Bundle] = {}


def bundle(rel: str) -> Bundle:
    if rel not in _BUNDLES:
        _BUNDLES[rel] = analyze(stepscope.load(TRACES / rel, use_cache=False))
    return _BUNDLES[rel]


def test_dlrm_8_ranks_comm_compute_and_ranks_1_and_3_arrive_first() -> None:
    """Step 10 ends within 1 ms on every rank; ranks 1 and 3 start it first (their host finished step 9
    first), so their step windows are the longest and they wait longest inside the collectives (their
    first all-to-all kernel starts 3.1 / 4.6 ms in, rank 7's at 10.7 ms, all end at 10.73 ms). In the
    breakdown's step windows they run as many kernels as the others: the 61 / 64 extra kernels once
    counted for them are step 9's, launched before the profiling window and still running when the
    host began step 10 (the first step starts after that work, as the TB plugin rules)."""
    b = bundle("param_dlrm/dlrm_8rank_v100")
    assert sorted(b.ranks) == list(range(8))
    for rank in range(8):
        d = b.rank(rank).get(DISTRIBUTED)
        assert d.comm_kernel_count == 8
        parts = d.computation_ns + d.communication_ns + d.overlap_ns + d.other_ns
        assert np.array_equal(parts, d.step_ns)
        assert 0 < d.overlap_ratio_pct < 100
    c = b.require_cluster(CLUSTER)
    assert c.kernel_count[[1, 3]].tolist() == [249, 251]
    assert c.kernel_count.min() >= 245 and c.kernel_count.max() <= 251
    assert set(np.argsort(-c.step_ns)[:2].tolist()) == {1, 3}  # the two longest spans
    assert set(np.argsort(-c.wait_ns)[:2].tolist()) == {1, 3} and int(np.argmin(c.wait_ns)) == 7
    assert 1 not in c.slow_ranks and 3 not in c.slow_ranks
    assert c.wait_method == "min across ranks"
    doc = to_json(b)
    assert doc["cluster"]["rank_count"] == 8
    assert set(doc["ranks"][0]["distributed"]) >= {"computation_ms", "communication_ms", "overlap_ms", "other_ms"}


def test_nccl_resnet_overlap_wait_transfer_sizes_and_bandwidth() -> None:
    d = bundle("hta/nccl_resnet_a100_rank0_of2").rank(0).get(DISTRIBUTED)
    assert d.comm_kernel_count == 21  # HTA gold: 21 ncclKernel
    assert 5 < d.overlap_ratio_pct < 50
    assert d.wait_method == "same size across steps"
    comm_time = int(d.comm_dur_ns.sum())
    assert int(d.wait_ns.sum() + d.transfer_ns.sum()) == comm_time and d.transfer_ns.sum() > 0
    longest = int(np.argmax(d.comm_dur_ns))
    assert d.comm_bytes[longest] == 2049000 * 4  # HTA gold: the longest all-reduce moves 2,049,000 floats
    c = d.collectives
    assert set(c.coll_type) == {"allreduce", "broadcast"} and c.pg_name == ["0", "0"]
    assert np.isfinite(c.busbw_gbps).all() and (c.busbw_gbps > 0).all()
    doc = to_json(bundle("hta/nccl_resnet_a100_rank0_of2"))
    assert doc["cluster"] is None
    dist = doc["ranks"][0]["distributed"]
    assert dist["wait_ms"] > 0 and dist["transfer_ms"] > 0 and dist["collectives"][0]["bytes"] > 0


def test_tb_plugin_nw0_idle_is_host_wait_inside_the_dataloader() -> None:
    r = bundle("kineto_tb_plugin/resnet50_num_workers_0").rank(0).get(IDLE)
    assert r.step.tolist() == [5, 6, 7, 8, 9, 10]
    idle = r.idle_ns
    assert (r.host_wait_ns > 0.9 * idle).all()
    assert (r.host_wait_in_dataloader_ns > 0.5 * idle).all()
    steps = to_json(bundle("kineto_tb_plugin/resnet50_num_workers_0"))["ranks"][0]["idle"]["steps"]
    assert [s["step"] for s in steps] == [5, 6, 7, 8, 9, 10]
    assert all(s["host_wait_in_dataloader_pct"] > 50 for s in steps)
    nw4 = bundle("kineto_tb_plugin/resnet50_num_workers_4").rank(0).get(IDLE)
    assert nw4.host_wait_in_dataloader_ns.sum() < 0.1 * r.host_wait_in_dataloader_ns.sum()
    cp = bundle("kineto_tb_plugin/resnet50_num_workers_0").rank(0).get(CRITICAL_PATH)
    assert 25 < cp.share_pct()["input"] < 40  # TB gold: DataLoader 33.4 % of the step


def test_sync_and_copies_on_the_traces_that_have_them() -> None:
    nw0 = bundle("kineto_tb_plugin/resnet50_num_workers_0").rank(0)
    s = nw0.get(SYNC).sites
    i = s.what.index("cudaStreamSynchronize")
    assert (s.op[i], s.top_op[i], s.call_site[i], s.count[i]) == (
        "aten::copy_", "aten::to", "resnet50_profiler_api.py(44): <module>", 12)
    m = nw0.get(MEMCPY).groups
    assert (m.direction, m.pageable, m.count.tolist()) == (["h2d"], ["pageable"], [12])
    bert = bundle("tracelens/h100_bert_small_inference").rank(0).get(SYNC)
    assert bert.d2h_count.sum() == 1
    assert "aten::_local_scalar_dense" in bert.sites.op  # .item() behind the D2H copy and the sync
    dlrm = bundle("param_dlrm/dlrm_8rank_v100").rank(0)
    assert dlrm.get(SYNC).d2h_count.sum() == 2
    g = dlrm.get(MEMCPY).groups
    assert ("d2h", "pageable") in set(zip(g.direction, g.pageable))
    assert ("h2d", "pageable") in set(zip(g.direction, g.pageable))


def test_launch_config_fusion_and_launch_on_real_traces() -> None:
    nw0 = bundle("kineto_tb_plugin/resnet50_num_workers_0").rank(0)
    assert nw0.get(FUSION).optimizer.verdict == "many-small-kernels"  # SGD without foreach (PT 1.9)
    ddp = bundle("hta/ns_resolution_v100_ddp").rank(0)
    assert ddp.get(FUSION).optimizer.verdict == "foreach-or-fused"
    launch = nw0.get(LAUNCH)
    assert len(launch.rows) == 8772 and launch.queue.max_length.max() > 1
    lc = nw0.get(LAUNCH_CONFIG)
    assert lc.sm_count == 80 and 0 < lc.underfilled_time_pct < 100


@pytest.mark.parametrize("rel", ["param_dlrm/dlrm_8rank_v100", "kineto_tb_plugin/resnet50_num_workers_0",
                                 "hta/amd_mi250_minitoy", "hta/cpu_only_gloo_rank34_of300",
                                 "hta/triton_example_a100", "tracelens/mi300x_bert_small_inference"])
def test_every_deep_view_renders(rel: str) -> None:
    b = bundle(rel)
    out = io.StringIO()
    render(b, Console(file=out, width=160), views=DEEP)
    text = out.getvalue()
    assert "Traceback" not in text
    for rr in b.ranks.values():
        assert not (set(rr.results) & set(rr.skipped))
    assert to_json(b)["schema_version"] == "1"
