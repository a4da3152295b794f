"""What a rank ran on and with what, so that advice fits the program: ``cuda``, ``rocm``, ``ascend``
or ``cpu`` (the reader's platform), plus ``+native`` when the trace shows no PyTorch at all (a
CUDA / MPI program captured with Nsight Systems: advice in CUDA terms, never PyTorch APIs)."""

from __future__ import annotations

from stepscope.analysis._memo import per_trace
from stepscope.model.trace import Trace

#: Names only PyTorch's profiler or its ops produce.
_PYTORCH_MARKS = ("aten::", "ProfilerStep#", "autograd::", "torch::", "c10d::", "nn.Module:", "Optimizer.",
                  "enumerate(DataLoader)", "record_param_comms")


@per_trace
def uses_pytorch(trace: Trace) -> bool:
    """Whether any event of the trace is a PyTorch op, step, module or DataLoader range."""
    pool = trace.strings
    return bool(pool.mask(lambda s: s.startswith(_PYTORCH_MARKS))[trace.events["name"]].any())


def platform_of(trace: Trace, rank: int) -> str:
    """``cuda`` | ``rocm`` | ``ascend`` | ``cpu``, with ``+native`` for a program without PyTorch."""
    base = trace.rank_info(rank).platform if rank in trace.rank_ids else "cuda"
    return base if uses_pytorch(trace) else f"{base}+native"


#: Names that show a model already runs under torch.compile (Inductor regions and Triton kernels).
_COMPILED_MARKS = ("Torch-Compiled Region", "CompiledFunction", "torch._inductor", "triton_")


@per_trace
def uses_compile(trace: Trace) -> bool:
    """Whether the trace shows torch.compile at work (compiled regions or Inductor's Triton kernels)."""
    pool = trace.strings
    return bool(pool.mask(lambda s: s.startswith(_COMPILED_MARKS))[trace.events["name"]].any())
