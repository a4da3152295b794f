"""A rank's analyses on threads give exactly what they give one after another: the whole JSON
document (every analysis, the verdicts, the findings) is equal, on real traces of every shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepscope import load
from stepscope.analysis import bundle as bundle_mod
from stepscope.analysis.bundle import analyze
from stepscope.cli.analyze_cmd import findings_for
from stepscope.report.advice_json import finding_dict
from stepscope.report.json_out import to_json
from stepscope.runtime import tasks

TRACES = ["kineto_tb_plugin/resnet50_num_workers_0", "param_dlrm/dlrm_8rank_v100", "nsys_pipit/cloverleaf_cuda_a100",
          "tracelens/xdit_sd3.5_torch_compile_mi300x", "ascend_msinsight/small_cnn_2rank_hccl_level1/text"]


def _document(path: Path) -> str:
    bundle = analyze(load(path))
    with bundle.memo.active():
        doc = to_json(bundle, [finding_dict(f) for f in findings_for(bundle)])
    return json.dumps(doc, sort_keys=True, default=str)


@pytest.mark.parametrize("rel", TRACES)
def test_threads_and_sequence_give_the_same_document(shared_traces: Path, rel: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks, "usable_cores", lambda: 2)
    monkeypatch.setattr(bundle_mod, "memory_to_spare", lambda _bytes: True)  # threads however full the machine
    monkeypatch.setattr(bundle_mod, "PARALLEL_ABOVE_EVENTS", 10**12)
    one_by_one = _document(shared_traces / rel)
    monkeypatch.setattr(bundle_mod, "PARALLEL_ABOVE_EVENTS", 0)
    assert _document(shared_traces / rel) == one_by_one
