"""Terminal view of the software stack (the HIP runtime on ROCm: the platform's words)."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.software import SoftwareResult, version_text
from stepscope.report.platform_texts import dialect


def render_software(r: SoftwareResult, console: Console, top: int, platform: str = "cuda") -> None:
    runtime, driver = version_text(r.cuda_runtime) or "unknown", version_text(r.cuda_driver) or "unknown"
    schema = "the 2021 Kineto schema (PyTorch <= 1.9)" if r.legacy_schema else "the current profiler schema"
    program = ("PyTorch" + (" under torch.compile" if r.compiled else "")) if r.pytorch else "no PyTorch (native)"
    cuda = dialect(f"CUDA runtime {runtime}, driver {driver}; ", platform) if r.has_device else ""  # CPU-only: none
    backend = f"; collectives on {r.comm_backend}" if r.comm_backend else ""
    console.print(f"[bold]rank {r.rank}: software[/bold]: {cuda}{schema}; {program}{backend}")
