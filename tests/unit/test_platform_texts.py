"""The words of a finding for a platform and for a trace without step markers."""

from __future__ import annotations

from stepscope.report.platform_texts import dialect


def test_a_trace_without_steps_is_never_said_per_step() -> None:
    """The launch-bound text on the CUPTI-monitor probe (no numbered ProfilerStep) read '188.7 ms
    per step (99.8 %, median over steps, …)' for the one window of the whole trace."""
    text = ("The GPU sits idle waiting for the host 188.7 ms per step (99.8%, median over steps, "
            "DataLoader time excluded); 40% of the step.")
    said = dialect(text, "cuda", whole_trace=True)
    assert said == ("The GPU sits idle waiting for the host 188.7 ms over the whole trace (99.8%, "
                    "DataLoader time excluded); 40% of the window.")
    assert dialect(text, "cuda") == text


def test_npu_words_on_ascend() -> None:
    assert "NPU" in dialect("The GPU sits idle", "ascend") and "GPU" not in dialect("The GPU sits idle", "ascend")
