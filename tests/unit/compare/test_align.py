"""Matching by name through strings: alignment, grouping, name maps."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stepscope.compare.align import NameMap, align, builtin_name_map, group_by_key, load_name_map, make_keys
from stepscope.compare.findings import NEW, RESOLVED, STILL, compare_findings
from stepscope.compare.gate import check_slower
from stepscope.compare.tables import ADDED, MATCHED, REMOVED, SideTable, diff_tables
from stepscope.errors import UsageError


def obj(*names: str) -> np.ndarray:
    return np.array(list(names), dtype=object)


def test_align_by_value_not_order() -> None:
    al = align(obj("c", "a", "b"), obj("b", "d", "a"))
    assert al.keys.tolist() == ["a", "b", "c", "d"]
    assert al.base_row.tolist() == [1, 2, 0, -1]
    assert al.new_row.tolist() == [2, 0, -1, 1]
    assert al.added.tolist() == [False, False, False, True]
    assert al.removed.tolist() == [False, False, True, False]


def test_align_empty_sides() -> None:
    al = align(obj(), obj("x"))
    assert al.keys.tolist() == ["x"] and al.base_row.tolist() == [-1] and al.new_row.tolist() == [0]
    assert len(align(obj(), obj()).keys) == 0


def test_group_by_key_sums_and_keeps_the_largest_name() -> None:
    keys, rep, (v, c) = group_by_key(obj("k", "j", "k"), np.array([1.0, 5.0, 3.0]), np.array([1.0, 1.0, 2.0]))
    assert keys.tolist() == ["j", "k"] and v.tolist() == [5.0, 4.0] and c.tolist() == [1.0, 3.0]
    assert rep.tolist() == [1, 2]  # "k"'s representative is its larger row


def test_keys_with_shapes() -> None:
    k = make_keys(obj("mm", "mm"), obj("[[1]]", "[[2]]"))
    assert len(set(k.tolist())) == 2 and k[0].startswith("mm")


def test_diff_tables_sorting_and_ratio() -> None:
    base = SideTable(obj("a", "b", "gone"), np.array([10.0, 2.0, 1.0]), np.array([1.0, 1.0, 1.0]))
    new = SideTable(obj("b", "a", "fresh"), np.array([5.0, 9.0, 0.5]), np.array([2.0, 1.0, 4.0]))
    t = diff_tables("kernels", "ms", "total time", base, new)
    assert t.name.tolist() == ["b", "a", "gone", "fresh"]  # |3|, |1|, |1|, |0.5|; ties by key
    assert t.diff.tolist() == [3.0, -1.0, -1.0, 0.5]
    assert t.status.tolist() == [MATCHED, MATCHED, REMOVED, ADDED]
    assert t.ratio[0] == pytest.approx(2.5) and np.isnan(t.ratio[3])
    assert t.new_count.tolist() == [2.0, 1.0, 0.0, 4.0]


def test_name_map_exact_regex_and_sections(tmp_path: Path) -> None:
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"kernels": {"re:^Cijk_": "gemm", "exact_k": "k2"}, "*": {"x": "y"}}))
    nm = load_name_map(f)
    assert nm.apply("kernels", obj("Cijk_Alik_Bljk", "exact_k", "x", "other")).tolist() == ["gemm", "k2", "y",
                                                                                             "other"]
    assert nm.rename("operators", "Cijk_A") == "Cijk_A"  # the kernels section only
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"npu::add": "aten::add"}))
    assert load_name_map(flat).rename("operators", "npu::add") == "aten::add"


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"bogus": {"a": "b"}}', '{"kernels": {"re:(": "x"}}',
                                  '{"kernels": {"a": 1}}'])
def test_bad_name_maps_are_usage_errors(tmp_path: Path, text: str) -> None:
    f = tmp_path / "m.json"
    f.write_text(text)
    with pytest.raises(UsageError):
        load_name_map(f)


def test_builtin_map_matches_vendors() -> None:
    nm = builtin_name_map()
    cuda = obj("sm90_xmma_gemm_f32f32_tf32f32", "ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    rocm = obj("Cijk_Alik_Bljk_SB_MT64x64x16", "hcom_allReduce__123_0_1")
    assert nm.apply("kernels", cuda).tolist() == nm.apply("kernels", rocm).tolist()
    assert nm.rename("operators", "npu::npu_fusion_attention") == "aten::_scaled_dot_product_flash_attention"
    merged = nm.merged(NameMap({"kernels": {"Cijk_x": "mine"}}))
    assert merged.rename("kernels", "Cijk_x") == "mine"


def test_compare_findings_by_rule() -> None:
    base = [{"rule": "dataloader-bound", "est_gain_ms": 59.0}, {"rule": "sync-in-step", "est_gain_ms": 2.0}]
    new = [{"rule": "sync-in-step", "est_gain_ms": 1.0}, {"rule": "launch-bound", "est_gain_ms": 20.0}]
    got = {c.rule: c.status for c in compare_findings(base, new)}
    assert got == {"launch-bound": NEW, "sync-in-step": STILL, "dataloader-bound": RESOLVED}
    still = next(c for c in compare_findings(base, new) if c.status == STILL)
    assert still.gain_diff_ms == pytest.approx(-1.0)
    assert still.to_dict()["base_est_gain_ms"] == 2.0


def test_gate_threshold_edges() -> None:
    assert check_slower(100.0, 105.0, 5.0).passed
    assert not check_slower(100.0, 105.1, 5.0).passed
    assert check_slower(100.0, 50.0, 0.0).passed
    zero = check_slower(0.0, 1.0, 5.0)
    assert not zero.passed and zero.to_dict()["change_pct"] is None
