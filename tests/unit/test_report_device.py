"""Graph replays, compiled kernels and inference phases in the Markdown summary, from a hand-made §12
document (names hostile, numbers chosen by hand); the app's Device view: tests/e2e/test_html_browser.py."""

from __future__ import annotations

from typing import Any

from report_docs import EVIL, analysis_doc

from stepscope.report.markdown import render_markdown


def _doc(capture: bool) -> dict[str, Any]:
    doc = analysis_doc()
    doc["ranks"][0]["graphs"] = {
        "graph_launches": 1, "graph_kernels": 421, "gpu_activities": 434, "graph_gpu_ms": 10.388,
        "gpu_ms": 10.718, "graph_gpu_pct": 96.9, "unattributed": 0, "has_capture": capture,
        "captured_pct": 100.0 if capture else 0.0,
        "launches": [{"name": "hipGraphLaunch", "launcher": EVIL, "step": -1, "cpu_us": 506.8, "kernels": 421,
                      "gpu_ms": 10.388, "span_ms": 10.389, "first_delay_ms": 6.378, "captured_kernels": 421}],
        "capture_ops": [{"name": "vllm::moe_forward", "calls": 24, "kernels": 72, "ms": 7.172}] if capture else []}
    doc["ranks"][0]["compiled"] = {
        "triton_kernels": 2076, "triton_ms": 68.814, "triton_pct": 9.7, "triton_with_launch_op": 2076,
        "device_ms": 712.49, "in_graphs_pct": 88.1,
        "graphs": [{"name": "CompiledFxGraph fp5r5", "calls": 4, "kernels": 4391, "triton_kernels": 2076,
                    "ms": 627.644, "step_share_pct": 52.5}],
        "kernels": [{"name": "triton_poi_fused_addmm_gelu_view_15", "kind": "pointwise",
                     "fused_ops": ["addmm", "gelu", "view"], "count": 152, "ms": 21.076}]}
    doc["ranks"][0]["phases"] = {"source": "vllm", "steps": [], "phases": [
        {"phase": "mixed", "steps": 1, "tokens": 8192, "time_ms": 307.7, "device_ms": 156.086,
         "device_span_ms": 156.466, "per_token_ms": 0.0191}]}
    return doc


def test_markdown_sections() -> None:
    text = render_markdown(_doc(capture=True))
    assert "**Graph replays**: 1 launches ran 421 kernels (96.9 % of GPU time); unattributed 0" in text
    assert "| vllm::moe\\_forward | 72 | 7.2 ms |" in text
    assert "**Compiled kernels**: 2,076 Triton kernels, 68.8 ms (9.7 % of device time)" in text
    assert "| mixed | 1 | 8,192 | 156.5 ms | 0.0191 ms |" in text
    assert "no capture trace" in render_markdown(_doc(capture=False))
