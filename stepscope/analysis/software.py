"""The software stack one rank ran on, as far as its trace says (SPEC §6 row outdated-software).

From the rank's metadata: the CUDA runtime and driver versions (Kineto's ``cuda_runtime_version`` /
``cuda_driver_version``, 12040 → 12.4); from the trace's names: the 2021 Kineto schema (categories
``Operator`` / ``Runtime`` / ``Kernel``: PyTorch ≤ 1.9), whether PyTorch ran at all, whether
``torch.compile`` did (compiled regions, Inductor's Triton kernels), and the communication backend
(``distributedInfo.backend``, else the prefix of its collective ops: ``gloo:all_reduce``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stepscope.analysis.common import rank_rows
from stepscope.analysis.platform import has_device, uses_compile, uses_pytorch
from stepscope.model.trace import Trace

#: the categories of the 2021 Kineto schema (PyTorch <= 1.9), all present in such a trace
LEGACY_CATEGORIES = ("Operator", "Runtime", "Kernel")
#: collective ops named by their backend (``nccl:all_reduce``, ``gloo:broadcast``)
BACKEND_PREFIXES = ("nccl:", "gloo:", "hccl:", "rccl:")


def cuda_version(code: Any) -> tuple[int, int] | None:
    """12040 → (12, 4); None when absent or not a number."""
    try:
        v = int(code)
    except (TypeError, ValueError):
        return None
    return (v // 1000, (v % 1000) // 10) if v > 0 else None


def version_text(v: tuple[int, int] | None) -> str | None:
    return f"{v[0]}.{v[1]}" if v is not None else None


@dataclass(frozen=True)
class SoftwareResult:
    """What one rank's trace says of its software stack."""

    rank: int
    cuda_runtime: tuple[int, int] | None
    cuda_driver: tuple[int, int] | None
    legacy_schema: bool  # the 2021 Kineto schema (PyTorch <= 1.9)
    pytorch: bool  # any PyTorch op, step, module or DataLoader range in the trace
    compiled: bool  # torch.compile at work (compiled regions or Inductor's Triton kernels)
    comm_backend: str | None = None  # "nccl", "gloo", "hccl" ...: the process group's, as recorded
    has_device: bool = True  # False: a CPU-only run (no CUDA runtime or driver to speak of)

    @property
    def has_versions(self) -> bool:
        return self.cuda_runtime is not None or self.cuda_driver is not None or self.legacy_schema


def compute_software(trace: Trace, rank: int) -> SoftwareResult:
    """The rank's CUDA versions, profiler schema, PyTorch and torch.compile use."""
    meta = trace.rank_info(rank).metadata
    return SoftwareResult(
        rank=rank, cuda_runtime=cuda_version(meta.get("cuda_runtime_version")),
        cuda_driver=cuda_version(meta.get("cuda_driver_version")),
        legacy_schema=all(trace.strings.find(c) >= 0 for c in LEGACY_CATEGORIES),
        pytorch=uses_pytorch(trace), compiled=uses_compile(trace), comm_backend=_backend(trace, rank),
        has_device=has_device(trace, rank))


def _backend(trace: Trace, rank: int) -> str | None:
    recorded = trace.rank_info(rank).backend
    if isinstance(recorded, str) and recorded:
        return recorded.lower()
    backend_named = trace.strings.mask(_names_backend)  # without distributedInfo: the collectives' names
    if not backend_named.any():
        return None
    names = trace.events["name"][rank_rows(trace, rank)]
    named = names[backend_named[names]]
    return trace.strings[int(named[0])].split(":", 1)[0].lower() if len(named) else None


def _names_backend(name: str) -> bool:
    return name.startswith(BACKEND_PREFIXES)
