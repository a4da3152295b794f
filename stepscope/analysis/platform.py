"""What a rank ran on and with what, so that advice fits the program: ``cuda``, ``rocm``, ``ascend``
or ``cpu`` (the reader's platform), plus ``+native`` when the trace shows no PyTorch at all (a
CUDA / MPI program captured with Nsight Systems: advice in CUDA terms, never PyTorch APIs)."""

from __future__ import annotations

from stepscope.analysis._memo import per_trace
from stepscope.model.trace import Trace

#: Names only PyTorch's profiler or its ops produce.
_PYTORCH_MARKS = ("aten::", "ProfilerStep#", "autograd::", "torch::", "c10d::", "nn.Module:", "Optimizer.",
                  "enumerate(DataLoader)", "record_param_comms")
#: Namespaces of PyTorch's own device kernels, anywhere in a kernel's name ("void at::native::
#: vectorized_elementwise_kernel<...>"): a PyTorch program captured by Nsight Systems without NVTX
#: ranges shows no op, yet its elementwise, reduction and indexing kernels name ATen.
_ATEN_KERNELS = ("at::native::", "at::cuda::", "at_cuda_detail::")


@per_trace
def uses_pytorch(trace: Trace) -> bool:
    """Whether any event of the trace is a PyTorch op, step, module or DataLoader range or an ATen
    kernel, or a reader knows the run was PyTorch's (``framework`` metadata: an Ascend
    ``*_ascend_pt`` export's summaries)."""
    if any(r.metadata.get("framework") == "pytorch" for r in trace.ranks):
        return True
    pool = trace.strings
    return bool(pool.mask(_names_pytorch)[trace.events["name"]].any())


def _names_pytorch(name: str) -> bool:
    return name.startswith(_PYTORCH_MARKS) or any(m in name[:512] for m in _ATEN_KERNELS)


def no_host_timeline(trace: Trace, rank: int) -> str | None:
    """Why the rank has no host timeline (its reader read device summaries only), None when it has one.

    Host-side analyses and rules do not run on such a rank: an absent op, launch or DataLoader range
    would read as "none there" and give wrong findings."""
    if rank not in trace.rank_ids:
        return None
    why = trace.rank_info(rank).metadata.get("summary_only")
    return str(why) if why else None


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


#: why an analysis of PyTorch's operators (their shapes, FLOPs) has nothing on a program without PyTorch
NO_PYTORCH_OPS = "a program without PyTorch records no operators"
#: why an analysis of device work has nothing to say on a rank without a device (a CPU-only run)
NO_DEVICE = "no device on this rank (a CPU-only run)"


def has_device(trace: Trace, rank: int) -> bool:
    """Whether the rank ran on a device: its reader's platform is not ``cpu`` (a CPU-only run)."""
    return rank not in trace.rank_ids or trace.rank_info(rank).platform != "cpu"


def hint_for(trace: Trace, pytorch: str, native: str) -> str:
    """A capture hint as it fits the program: ``pytorch`` (a PyTorch profiler option to set) for a
    PyTorch program, ``native`` for one without PyTorch (a CUDA / MPI program), where no such option
    exists."""
    return pytorch if uses_pytorch(trace) else native
