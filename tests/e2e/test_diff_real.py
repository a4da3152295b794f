"""``stepscope diff`` on real traces: the tb_plugin DataLoader fix, the gate as a CI step, H100 vs MI300X."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stepscope.compare.document import to_json
from stepscope.compare.prepare import SideSpec, diff_paths

ROOT = Path(__file__).resolve().parents[2]
TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
NW0 = TRACES / "kineto_tb_plugin" / "resnet50_num_workers_0"
NW4 = TRACES / "kineto_tb_plugin" / "resnet50_num_workers_4"
H100 = TRACES / "tracelens" / "h100_bert_small_inference"
MI300X = TRACES / "tracelens" / "mi300x_bert_small_inference"

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason=f"real traces not found at {TRACES}")


def _stepscope(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "stepscope", *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=ROOT)


@pytest.fixture(scope="module")
def nw_doc() -> dict:
    r = diff_paths(SideSpec(NW0), SideSpec(NW4))
    return to_json(r, r.gate(5.0))


def _row(doc: dict, category: str) -> dict:
    return next(r for r in doc["overall"] if r["category"] == category)


def test_dataloader_is_the_largest_improvement(nw_doc: dict) -> None:
    step = _row(nw_doc, "step")
    assert (step["base_ms"], step["new_ms"]) == pytest.approx((177.6, 141.1), abs=0.05)
    cats = [r for r in nw_doc["overall"] if r["category"] not in ("step", "computing",
                                                                  "communication_not_overlapped", "free")]
    best = min(cats, key=lambda r: r["diff_ms"])
    assert best["category"] == "dataloader"
    assert best["diff_ms"] == pytest.approx(-58.1, abs=0.1)
    assert _row(nw_doc, "kernel")["diff_ms"] == pytest.approx(0.5, abs=0.1)
    assert "DataLoader −58.1 ms/step" in " ".join(nw_doc["narrative"])
    split = {c: _row(nw_doc, c) for c in ("computing", "communication_not_overlapped", "free")}
    for side in ("base_ms", "new_ms"):
        assert sum(r[side] for r in split.values()) == pytest.approx(_row(nw_doc, "step")[side], abs=1e-3)
    assert nw_doc["gate"]["passed"] is True


def test_findings_compared(nw_doc: dict) -> None:
    if nw_doc["findings"] is None:
        pytest.skip("no advisor in this build")
    status = {f["rule"]: f["status"] for f in nw_doc["findings"]}
    assert status.get("dataloader-bound") == "resolved"


def test_gate_exit_codes_in_a_subprocess() -> None:
    ok = _stepscope("diff", str(NW0), str(NW4), "--fail-if-slower", "5", "--no-findings")
    assert ok.returncode == 0, ok.stderr
    assert "gate passed" in ok.stdout
    bad = _stepscope("diff", str(NW4), str(NW0), "--fail-if-slower", "5", "--no-findings", "--json")
    assert bad.returncode == 1
    assert "gate FAILED" in bad.stderr and "+25.9 %" in bad.stderr
    doc = json.loads(bad.stdout)
    assert doc["gate"]["passed"] is False


def test_xlsx_opens_and_matches_json(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    out = tmp_path / "diff.xlsx"
    res = _stepscope("diff", str(NW0), str(NW4), "--json", "--xlsx", str(out), "--csv", str(tmp_path / "csv"))
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    wb = openpyxl.load_workbook(out)
    for sheet in ("overall", "operators", "kernels", "memory", "runtime"):
        ws = wb[sheet]
        assert ws.freeze_panes == "A2"
        header = [c.value for c in ws[1]]
        rows = [dict(zip(header, [c.value for c in r])) for r in ws.iter_rows(min_row=2)]
        want = doc[sheet]
        assert len(rows) == len(want), sheet
        key = "category" if sheet == "overall" else "name"
        assert [r[key] for r in rows] == [w[key] for w in want]
        diff = next(h for h in header if h.startswith("diff_"))
        assert [r[diff] for r in rows] == pytest.approx([w[diff] for w in want], nan_ok=True)
    assert (tmp_path / "csv" / "kernels.csv").exists()


def test_h100_vs_mi300x_by_name() -> None:
    r = diff_paths(SideSpec(H100), SideSpec(MI300X), with_findings=False)
    ops, kernels = r.tables["operators"], r.tables["kernels"]
    assert ops.matched_count >= 20  # aten:: names agree across vendors
    assert "aten::addmm" in ops.name[ops.status == 0].tolist()
    assert kernels.added and kernels.removed  # cuBLAS/cutlass vs hipBLASLt kernels: listed, not matched
    assert any(n.startswith("Cijk_") for n in kernels.added)
    assert any("cutlass" in n or "sm90" in n for n in kernels.removed)
    doc = to_json(r)
    cats = {row["category"]: row for row in doc["overall"]}
    for c in ("computing", "communication_not_overlapped", "free"):
        assert cats[c]["base_ms"] is not None and cats[c]["new_ms"] is not None
    assert cats["computing"]["base_ms"] > 0 and cats["computing"]["new_ms"] > 0
    assert doc["base"]["device"].startswith("NVIDIA") and doc["new"]["device"].startswith("AMD")


def test_h100_vs_mi300x_with_the_builtin_map() -> None:
    from stepscope.compare.align import builtin_name_map

    r = diff_paths(SideSpec(H100), SideSpec(MI300X), with_findings=False, name_map=builtin_name_map())
    k = r.tables["kernels"]
    names = k.name.tolist()
    assert "[family] gemm" in names and k.status[names.index("[family] gemm")] == 0
    assert "[family] attention" in names and k.status[names.index("[family] attention")] == 0
    rt = r.tables["runtime"]
    assert "cuda|hip:LaunchKernel" in rt.name[rt.status == 0].tolist()
