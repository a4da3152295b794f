"""What a program ran with decides how its advice is said: a CUDA program without PyTorch gets CUDA
terms (``+native``); a PyTorch program keeps PyTorch's, also when Nsight Systems captured it without
NVTX ranges (no op at all, only its ATen kernels name it)."""

from __future__ import annotations

from pathlib import Path

import pytest

import stepscope
from stepscope.analysis.platform import platform_of
from tests.unit.ingest.test_hostile_sqlite import KERNELS, RUNTIME, nsys_db

ATEN = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, at::detail::Array<char*, 3> >"


@pytest.mark.parametrize(("kernel", "platform"), [
    ("sgemm_kernel", "cuda+native"),
    ("void cloverleaf::advec_cell_kernel(int, int, double*)", "cuda+native"),
    (ATEN, "cuda"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float> > >", "cuda"),
])
def test_an_nsys_capture_is_pytorch_when_its_kernels_name_aten(tmp_path: Path, kernel: str, platform: str) -> None:
    db = nsys_db(tmp_path / "run.sqlite", KERNELS, RUNTIME, [(1, kernel), (2, "cudaLaunchKernel_v7000")])
    trace = stepscope.load(db, use_cache=False)
    assert platform_of(trace, trace.rank_ids[0]) == platform
