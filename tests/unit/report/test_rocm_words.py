"""Advice for an AMD GPU (ROCm) names AMD's parts and libraries: no NVIDIA-only remedy or word
(Tensor Cores, SMs, cuDNN, cuBLAS, DALI, Ampere, CUDA Graphs, a bare "CUDA") unless the ROCm
equivalent is said with it; PyTorch's own API names (``torch.cuda``, ``torch.backends.cudnn``) stay."""

from __future__ import annotations

import re

import pytest

from stepscope.report.change_texts import CHANGES
from stepscope.report.platform_texts import CHANGES_BY_PLATFORM, dialect
from stepscope.report.texts import RULES, links

NVIDIA_ONLY = re.compile(r"Ampere|Hopper|cuDNN|cuBLAS|Tensor.Cores?|DALI|nvidia|\bSMs?\b|CUDA Graphs|"
                         r"PYTORCH_CUDA_ALLOC_CONF|CUDA_LAUNCH_BLOCKING")
CUDA_WORD = re.compile(r"\bCUDA\b")


def rocm_texts() -> list[tuple[str, str]]:
    out = [(f"change {k}", dialect(CHANGES_BY_PLATFORM["rocm"].get(k, v), "rocm")) for k, v in CHANGES.items()]
    for rule, rt in RULES.items():
        out += [(f"{rule} title", dialect(rt.title, "rocm")), (f"{rule} found", dialect(rt.found, "rocm"))]
    return out


@pytest.mark.parametrize(("what", "text"), rocm_texts(), ids=lambda x: x if len(x) < 40 else "")
def test_no_nvidia_only_words_on_rocm(what: str, text: str) -> None:
    assert not NVIDIA_ONLY.search(text), (what, text)
    assert not CUDA_WORD.search(text) or re.search(r"HIP|ROCm", text), (what, text)


def test_the_words_change_only_on_rocm() -> None:
    text = "Tensor-Core kernels on 80 SMs; cuDNN; use CUDA events; PYTORCH_CUDA_ALLOC_CONF=x"
    assert dialect(text, "cuda") == text
    assert dialect(text, "rocm") == ("Matrix-Core kernels on 80 CUs; MIOpen; use torch.cuda events (HIP events); "
                                     "PYTORCH_HIP_ALLOC_CONF=x")


def test_no_nvidia_pages_for_an_amd_gpu() -> None:
    assert any("nvidia.com" in u for u in links("dataloader-bound", "cuda"))
    assert not any("nvidia.com" in u for rule in RULES for u in links(rule, "rocm"))


def test_launch_bound_links_fit_the_platform() -> None:
    """Audit: launch-bound linked PyTorch's cuda.html#cuda-graphs on an AMD GPU and on an Ascend NPU.
    ROCm gets the HIP graphs page in its place, Ascend no CUDA page at all (torch_npu's graph mode)."""
    cuda_graphs = "https://pytorch.org/docs/stable/notes/cuda.html#cuda-graphs"
    assert cuda_graphs in links("launch-bound", "cuda")
    rocm = links("launch-bound", "rocm")
    assert cuda_graphs not in rocm
    assert "https://rocm.docs.amd.com/projects/HIP/en/latest/how-to/hip_runtime_api/hipgraph.html" in rocm
    for rule in RULES:
        ascend = links(rule, "ascend")
        assert not any("notes/cuda.html" in u or "nvidia.com" in u for u in ascend), (rule, ascend)
    assert links("launch-bound", "ascend") == ("docs/rules/launch-bound.md",
                                              "https://pytorch.org/docs/stable/torch.compiler.html")
