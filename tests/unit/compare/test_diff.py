"""``compare`` on two micro runs: every number below is computed by hand (see ``_runs``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis.bundle import analyze
from stepscope.compare.align import load_name_map
from stepscope.compare.diff import DiffResult, compare
from stepscope.compare.document import to_json
from stepscope.compare.prepare import SideSpec, diff_paths
from stepscope.compare.select import parse_steps, select_steps
from stepscope.compare.tables import ADDED, MATCHED, REMOVED
from stepscope.errors import UsageError

from ._runs import US, base_builder, new_builder, write_runs


@pytest.fixture
def result(tmp_path: Path) -> DiffResult:
    b, n = write_runs(tmp_path)
    return diff_paths(SideSpec(b), SideSpec(n), use_cache=False)


def test_overall_per_average_step(result: DiffResult) -> None:
    got = {r.category: (r.base_ms / US, r.new_ms / US) for r in result.overall}
    want = {"step": (100, 70), "kernel": (35, 32), "memcpy": (0, 0), "memset": (0, 0), "communication": (0, 0),
            "runtime": (5, 5), "dataloader": (40, 10), "cpu_exec": (15, 15), "other": (5, 8),
            "computing": (35, 32), "communication_not_overlapped": (0, 0), "free": (65, 38)}
    assert list(got) == list(want)
    for k, (b, n) in want.items():
        assert got[k] == pytest.approx((b, n), abs=1e-6), k
    assert result.row("dataloader").diff_ms == pytest.approx(-30 * US)


def test_kernels_sorted_by_abs_diff_with_added_and_removed(result: DiffResult) -> None:
    k = result.tables["kernels"]
    assert k.name.tolist() == ["add_kernel", "relu_kernel", "sgemm"]
    assert (k.diff / US).tolist() == pytest.approx([-5, 2, 0])
    assert k.status.tolist() == [REMOVED, ADDED, MATCHED]
    assert k.added == ["relu_kernel"] and k.removed == ["add_kernel"]
    assert k.base_count.tolist() == [2, 0, 2] and k.new_count.tolist() == [0, 2, 2]
    assert k.ratio[2] == pytest.approx(1.0)


def test_operators_device_self_and_host_self(result: DiffResult) -> None:
    ops = result.tables["operators"]
    assert ops.metric == "device self time"
    rows = dict(zip(ops.name.tolist(), zip((ops.base / US).tolist(), (ops.new / US).tolist())))
    assert rows == {"aten::add": pytest.approx((5, 0)), "aten::relu": pytest.approx((0, 2)),
                    "aten::mm": pytest.approx((30, 30))}
    hb, hn = ops.extra["host_self"]
    i = ops.name.tolist().index("aten::mm")
    assert (hb[i] / US, hn[i] / US) == pytest.approx((15, 15))  # 20 µs minus the 5 µs launch


def test_op_categories_table(result: DiffResult) -> None:
    """sgemm under aten::mm is GEMM on both sides; add_kernel (aten::add) and relu_kernel (aten::relu)
    are elementwise: 5 µs per step before, 2 after."""
    c = result.tables["categories"]
    rows = dict(zip(c.name.tolist(), zip((c.base / US).tolist(), (c.new / US).tolist())))
    assert rows == {"GEMM": pytest.approx((30, 30)), "elementwise": pytest.approx((5, 2))}
    assert c.status.tolist() == [MATCHED, MATCHED]


def test_runtime_api_table(result: DiffResult) -> None:
    rt = result.tables["runtime"]
    assert rt.name.tolist() == ["cudaLaunchKernel"]
    assert (rt.base[0] / US, rt.new[0] / US) == pytest.approx((7, 7))  # (5 + 2) µs per step
    assert (rt.base_count[0], rt.new_count[0]) == (4, 4)


def test_missing_views_are_reported_not_fatal(result: DiffResult) -> None:
    assert len(result.tables["modules"]) == 0 and result.tables["modules"].skipped
    assert result.tables["memory"].skipped


def test_narrative_and_gate(result: DiffResult) -> None:
    kinds = [(c.kind, c.key) for c in result.narrative]
    assert kinds[0] == ("step", "step")
    assert kinds[1] == ("category", "dataloader")  # the biggest mover
    assert result.gate(0).passed
    doc = to_json(result)
    assert doc["narrative"][0] == "Average step 0.100 → 0.070 ms (−0.030 ms, −30.0 %)."
    assert doc["narrative"][1] == ("Biggest changes: DataLoader −0.030 ms/step, Kernel −0.003 ms/step, "
                                   "Other +0.003 ms/step.")


def test_reverse_gate_fails(tmp_path: Path) -> None:
    b, n = write_runs(tmp_path)
    r = diff_paths(SideSpec(n), SideSpec(b), use_cache=False, with_findings=False)
    g = r.gate(5.0)
    assert not g.passed and g.change_pct == pytest.approx(100 * 30 / 70)
    assert "more than the allowed 5 %" in g.reason
    assert r.gate(50.0).passed


def test_totals_instead_of_per_step(tmp_path: Path) -> None:
    b, n = write_runs(tmp_path)
    r = diff_paths(SideSpec(b), SideSpec(n), use_cache=False, with_findings=False, per_step=False)
    k = r.tables["kernels"]
    assert (k.base[k.name == "sgemm"][0] / US) == pytest.approx(60)  # two steps × 30 µs


def test_name_map_file_matches_renamed_kernels(tmp_path: Path) -> None:
    b, n = write_runs(tmp_path)
    f = tmp_path / "map.json"
    f.write_text(json.dumps({"kernels": {"re:^relu": "add_kernel"}, "operators": {"aten::relu": "aten::add"}}))
    r = diff_paths(SideSpec(b), SideSpec(n), name_map=load_name_map(f), use_cache=False, with_findings=False)
    k = r.tables["kernels"]
    assert k.name.tolist()[0] == "add_kernel" and k.status[0] == MATCHED
    assert (k.diff[0] / US) == pytest.approx(-3)  # 5 µs → 2 µs
    assert k.new_name[0] == "relu_kernel"
    ops = r.tables["operators"]
    assert set(ops.name.tolist()) == {"aten::add", "aten::mm"}


def test_match_by_input_shapes(tmp_path: Path) -> None:
    b = base_builder().write(tmp_path / "b.json")
    n = new_builder(mm_dims=[[16, 16], [16, 16]]).write(tmp_path / "n.json")
    plain = diff_paths(SideSpec(b), SideSpec(n), use_cache=False, with_findings=False)
    assert "aten::mm" in plain.tables["operators"].name.tolist()
    assert plain.tables["operators"].status[plain.tables["operators"].name == "aten::mm"][0] == MATCHED
    shaped = diff_paths(SideSpec(b), SideSpec(n), by_shapes=True, use_cache=False, with_findings=False)
    ops = shaped.tables["operators"]
    mm = ops.name == "aten::mm"
    assert mm.sum() == 2  # same name, different shapes: one removed, one added
    assert sorted(ops.status[mm].tolist()) == [ADDED, REMOVED]
    assert ops.shapes is not None and all("8" in s or "16" in s for s in ops.shapes[mm])


def test_step_selection_per_side(tmp_path: Path) -> None:
    b = base_builder(steps=3).write(tmp_path / "b.json")
    n = new_builder(steps=3).write(tmp_path / "n.json")
    r = diff_paths(SideSpec(b, steps="2"), SideSpec(n, steps="1-2"), use_cache=False, with_findings=False)
    assert r.base.steps == [2] and r.new.steps == [1, 2]
    assert r.row("step").base_ms / US == pytest.approx(100)
    k = r.tables["kernels"]
    assert (k.base[k.name == "sgemm"][0] / US, k.base_count[k.name == "sgemm"][0]) == pytest.approx((30, 1))
    ops = r.tables["operators"]
    assert ops.base[ops.name == "aten::mm"][0] / US == pytest.approx(30)  # op ↔ kernel links survive the cut


def test_select_steps_remaps_links(tmp_path: Path) -> None:
    trace = base_builder(steps=2).load(tmp_path)
    cut = select_steps(trace, [2])
    ev = cut.events
    assert len(cut.steps) == 1 and int(cut.steps["step"][0]) == 2
    k = ev["kind"] == 6
    ops = ev["op"][k]
    assert (ops >= 0).all() and set(cut.names(ev["name"][ops])) == {"aten::mm", "aten::add"}
    assert int(cut.events["step"][int(cut.steps["row"][0])]) == 2


def test_parse_steps_and_bad_selection(tmp_path: Path) -> None:
    assert parse_steps("5-7,10") == [5, 6, 7, 10]
    assert parse_steps(None) is None
    with pytest.raises(UsageError):
        parse_steps("7-5")
    trace = base_builder().load(tmp_path)
    with pytest.raises(UsageError, match="not in the trace"):
        select_steps(trace, [1, 9])


def test_rank_choice(tmp_path: Path) -> None:
    b, n = write_runs(tmp_path)
    bb, bn = analyze(stepscope.load(b, use_cache=False)), analyze(stepscope.load(n, use_cache=False))
    with pytest.raises(UsageError, match="rank 3"):
        compare(bb, bn, base_rank=3, with_findings=False)


def test_two_processes_give_the_same_diff(tmp_path: Path) -> None:
    b, n = write_runs(tmp_path)
    seq = diff_paths(SideSpec(b), SideSpec(n), use_cache=False, parallel=False)
    par = diff_paths(SideSpec(b), SideSpec(n), use_cache=False, parallel=True)
    assert to_json(seq) == to_json(par)
