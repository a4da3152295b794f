"""Advice as said for the program at hand: remedies for a CUDA / MPI program without PyTorch, for a
PyTorch program without a device (CPU only), for ROCm and for Ascend, the device's noun (GPU, NPU),
NPU words on Ascend and whole-trace wording for a trace without step markers. Part of the one place
for prose (:mod:`stepscope.report.texts`)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from stepscope.report.change_texts import GROWING_CACHE

#: Remedies worded for a platform: ``native`` (a CUDA / MPI program without PyTorch), ``cpu`` (no
#: device), ``rocm``, ``ascend``. A key missing here falls back to :data:`CHANGES`.
CHANGES_BY_PLATFORM: dict[str, dict[str, str]] = {
    "native": {
        "set-num-workers": "Overlap input reading with device work: read the next batch on a separate host "
                           "thread into pinned buffers while the current one computes.",
        "pin-memory": "Allocate the host buffers pinned (cudaMallocHost / cudaHostAlloc, or cudaHostRegister on "
                      "existing memory) so copies run at full bandwidth and can be asynchronous.",
        "remove-step-sync": "Replace blocking cudaMemcpy / cudaDeviceSynchronize calls with cudaMemcpyAsync on "
                            "non-default streams and cudaEvent waits, so copies overlap kernels and the host "
                            "keeps queuing work; synchronise once where the result is really needed.",
        "async-copy-to-device": "Copy to the device with cudaMemcpyAsync from pinned host buffers (cudaMallocHost / "
                                "cudaHostRegister) on a non-default stream instead of blocking cudaMemcpy, and "
                                "synchronise once where the data is needed.",
        "overlap-device-to-host": "The host waits for the data itself ({mb_per_step} MB per step read back at "
                                  "{gb_per_s} GB/s): copy it with cudaMemcpyAsync into pinned buffers (cudaMallocHost) "
                                  "in pieces, a cudaEvent after each, and process each piece on the host as its "
                                  "event completes while the next one copies; or read back fewer bytes.",
        "cuda-graphs-or-compile": "Launch less: capture the repeated launch sequence once in a CUDA Graph "
                                  "(cudaStreamBeginCapture ... cudaGraphLaunch), fuse small kernels, or give each "
                                  "launch more work.",
        "graph-capture-compiled": "Launch less: capture the repeated launch sequence once in a CUDA Graph "
                                  "(cudaStreamBeginCapture ... cudaGraphLaunch) or fuse small kernels.",
        "reduce-host-work": "Take the host off the critical path: move host work off the launching thread, "
                            "queue kernels and cudaMemcpyAsync copies ahead on streams, and avoid cudaMalloc / "
                            "cudaFree inside the loop (allocate once).",
        "move-python-off-path": "Most of the host's time on the path is CPU code between CUDA calls "
                                "({untraced_pct}% of the step): move it off the launching thread, or queue the "
                                "next kernels before it runs.",
        "overlap-communication": "Overlap communication with kernels: post non-blocking MPI_Isend / MPI_Irecv "
                                 "(CUDA-aware MPI on device buffers) or NCCL calls on their own stream, compute "
                                 "the interior while the exchange runs, and wait (MPI_Wait, cudaStreamWaitEvent) "
                                 "only where the data is needed.",
        "balance-work": "Balance the work across ranks: an even domain decomposition (cells, rows, particles "
                        "per rank), and the same device and link for every rank.",
        "fill-the-gpu": "Give these kernels more parallel work: more threads per launch (a larger problem per "
                        "kernel, fused kernels), or a grid of at least one block per SM⟨ ({sm_count} SMs)⟩.",
        "reduce-memory": "Make room: free device buffers you no longer need, reuse allocations instead of "
                         "cudaMalloc per iteration, and split the problem into chunks that fit.",
    },
    "cpu": {  # no device: the model's ops run on the CPU, beside the loading workers
        "fused-optimizer": "Step the parameters together: torch.optim.{optimizer}(..., {kwargs} — PyTorch steps CPU "
                           "parameters tensor by tensor by default; fused=True, where a class offers it, is one pass "
                           "on the CPU (PyTorch 2.4 or later).",
        "set-num-workers": "Load batches in background workers: DataLoader(..., num_workers={num_workers}, "
                           "persistent_workers=True) — size num_workers to the cores the model's ops leave free "
                           "(they share the CPU: torch.set_num_threads); pre-decode the data set or make each "
                           "sample cheaper.",
        "speed-up-input-pipeline": "The loader already has workers and they do not keep up; they share the cores "
                                   "the model's ops compute on, so more workers help only where cores are free "
                                   "(num_workers + torch.set_num_threads within the cores): first make each sample "
                                   "cheaper — cache the decoded samples (pre-decoded shards, the data set held in "
                                   "memory), vectorise the augmentation, fewer small files; prefetch_factor="
                                   "{prefetch_factor}, persistent_workers=True.",
    },
    "rocm": {
        "set-num-workers": "Load batches in background workers: DataLoader(..., num_workers={num_workers}, "
                           "pin_memory=True, persistent_workers=True) — size num_workers to the free CPU cores; "
                           "move heavy preprocessing onto the GPU (torchvision.transforms.v2 on GPU tensors) or "
                           "pre-decode the data set.",
        "enable-amp": "Run the model under mixed precision: with torch.autocast('cuda', dtype=torch.{dtype}): ... "
                      "('cuda' is the HIP device on ROCm; fp16 needs torch.amp.GradScaler, bf16 does not), so the "
                      "GEMMs and convolutions run on the Matrix Cores.",
        "use-nccl": "Run the GPU tensors' collectives on RCCL (the 'nccl' backend on ROCm): "
                    "dist.init_process_group('cuda:nccl,cpu:{backend}') (or 'nccl'); {backend} reduces them on the "
                    "CPU, copying each to the host and back.",
        "upgrade-software": "Upgrade the stack: a current ROCm release with a matching amdgpu driver, and the "
                            "PyTorch build for it (with its MIOpen and hipBLASLt).",
        "cudnn-benchmark": "Set torch.backends.cudnn.benchmark = True (on ROCm it turns on MIOpen's find mode) "
                           "with static input shapes, so each shape's convolution algorithms are timed once and "
                           "the fastest kept.",
        "cuda-graphs-or-compile": "Launch less: capture the step with HIP graphs (torch.cuda.graphs, which are HIP "
                                  "graphs on ROCm, or torch.compile(mode='reduce-overhead')), fuse small ops "
                                  "(torch.compile), or give each launch more work (a larger batch)." + GROWING_CACHE,
        "graph-capture-compiled": "The model already runs under torch.compile, so fusing is done: capture it in HIP "
                                  "graphs (torch.compile(mode='reduce-overhead') or torch.cuda.graphs, HIP graphs "
                                  "on ROCm) so the host stops launching each of its small kernels, or make the "
                                  "kernels larger (a larger batch, max-autotune)." + GROWING_CACHE,
    },
    "ascend": {
        "cuda-graphs-or-compile": "Launch less: run the step in graph mode (torch_npu's torchair / "
                                  "torch.compile with the NPU backend), fuse small ops, or give each launch more "
                                  "work (a larger batch).",
        "remove-step-sync": "Remove per-step host syncs⟨ (here {call}⟨ under {op}⟩⟨ from {call_site}⟩)⟩: no .item() / "
                            ".cpu() / .tolist() of "
                            "NPU tensors each step; use torch.npu events instead of torch.npu.synchronize().",
        "pin-memory": "Copy from pinned memory: DataLoader(..., pin_memory=True), then .to('npu', "
                      "non_blocking=True).",
        "async-copy-to-device": "The host waits in synchronous copies to the NPU⟨ (here {call}⟨ under {op}⟩)⟩, not for "
                                "a result: make the tensors on the NPU (device='npu') or copy them from pinned "
                                "memory with .to('npu', non_blocking=True).",
        "overlap-device-to-host": "The host waits for the data itself ({mb_per_step} MB per step read back at "
                                  "{gb_per_s} GB/s): copy it asynchronously into pinned buffers (.to('cpu', "
                                  "non_blocking=True) into a pin_memory() tensor, with a torch.npu event per piece) "
                                  "and consume each piece as its event completes while the next one copies; or read "
                                  "back fewer bytes.",
    },
}
#: Words replaced in every text shown for an AMD GPU (ROCm): its own names for NVIDIA's parts and
#: libraries; PyTorch's APIs keep their names (``torch.cuda``, ``torch.backends.cudnn`` drive HIP and MIOpen).
#: The findings and the terminal views' own prose (``report.views.worded_view``) go through it.
_ROCM_WORDS = (("Tensor-Core", "Matrix-Core"), ("Tensor Cores", "Matrix Cores"), ("Tensor Core", "Matrix Core"),
               ("cuDNN", "MIOpen"), ("cuBLAS", "hipBLASLt"), ("CUDA Graphs", "HIP graphs"),
               ("CUDA events", "torch.cuda events (HIP events)"), ("CUDA event", "torch.cuda event (HIP event)"),
               ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF"),
               ("CUDA_LAUNCH_BLOCKING", "HIP_LAUNCH_BLOCKING"), ("CUDA tensors", "GPU tensors"),
               ("CUDA runtime", "HIP runtime"),
               (" SMs", " CUs"), ("SMs ", "CUs "), ("SM ", "CU "))
#: Words replaced in every text shown for an Ascend NPU.
_NPU_WORDS = (("GPU", "NPU"), ("CUDA Graphs", "graph mode"), ("CUDA events", "NPU events"),
              ("torch.cuda.synchronize()", "torch.npu.synchronize()"), ("CUDA", "CANN"),
              (" SMs", " AI cores"), ("SM ", "AI core "))


#: CUDA pages with a ROCm counterpart: PyTorch's CUDA Graphs section → HIP graphs (what torch.cuda.graphs
#: captures on ROCm)
_ROCM_PAGES = {"https://pytorch.org/docs/stable/notes/cuda.html#cuda-graphs":
               "https://rocm.docs.amd.com/projects/HIP/en/latest/how-to/hip_runtime_api/hipgraph.html"}
#: what a platform's findings do not link to: PyTorch's pages for a program without PyTorch, a GPU
#: vendor's for a CPU-only one, NVIDIA's for an AMD GPU, NVIDIA's, AMD's and PyTorch's CUDA notes for an
#: Ascend NPU (the graph mode, streams and allocator there are torch_npu's)
_NOT_LINKED = {"native": ("pytorch.org",), "cpu": ("nvidia.com", "amd.com"), "rocm": ("nvidia.com",),
               "ascend": ("nvidia.com", "amd.com", "pytorch.org/docs/stable/notes/cuda.html")}


def platform_links(links: tuple[str, ...], platform: str) -> tuple[str, ...]:
    """The pages that fit the platform: a page with a ROCm counterpart replaced by it on ROCm, the
    pages of another platform left out (none rather than a wrong one)."""
    key = platform_key(platform)
    if key == "rocm":
        links = tuple(_ROCM_PAGES.get(link, link) for link in links)
    return tuple(link for link in links if not any(n in link for n in _NOT_LINKED.get(key, ())))


def platform_key(platform: str) -> str:
    """The wording family of a finding's platform: native, rocm, ascend or the default (cuda, cpu)."""
    if platform.endswith("+native"):
        return "native"
    return platform


def is_npu(platform: str) -> bool:
    """An Ascend NPU (``ascend`` or ``ascend+native``): no Tensor Cores, SMs nor cuDNN to speak of."""
    return platform.split("+")[0] == "ascend"


def device_noun(platform: str) -> str:
    base = platform.split("+")[0]
    return {"ascend": "NPU", "cpu": "CPU"}.get(base, "GPU")


_WHOLE_TRACE_WORDS = (("median over steps, ", ""), ("median over steps of ", ""), ("per step", "over the whole trace"),
                      ("every step replayed with the change", "the whole trace replayed with the change"),
                      ("the mean step goes from", "the window goes from"), ("the step's critical path",
                      "the window's critical path"), ("the step's path", "the window's path"),
                      ("ms a step", "ms over the whole trace"), ("kernels a step", "kernels over the whole trace"),
                      ("run(s) a step", "run(s) over the whole trace"), ("hold the step", "hold the run"),
                      ("stalls the step", "stalls the run"), ("the step waits", "the run waits"),
                      ("of the step", "of the window"), ("each step", "the run"), ("every step", "throughout"),
                      ("inside the steps", "inside the window"), ("inside the step", "in the run"),
                      # the views' and the what-if's own phrases (stepscope.report.console.said)
                      ("per average step", "over the whole trace"), ("ms / step", "ms"), ("mean step", "window"),
                      ("sum to the step", "sum to the window"), ("the steps' share", "the window's share"),
                      ("mean in steps", "mean in the window"), ("in the steps", "in the window"))


def window_words(whole_trace: bool, platform: str = "") -> Callable[[str], str] | None:
    """How a rank's views and the what-if say their texts (:func:`stepscope.report.console.said`): in
    the findings' words — the whole-trace words when the trace has no step markers, the platform's
    (an Ascend NPU's, an AMD GPU's) on those platforms — else (None) as written."""
    if not whole_trace and platform.split("+")[0] not in ("ascend", "rocm"):
        return None
    return functools.partial(dialect, platform=platform, whole_trace=whole_trace)


def dialect(text: str, platform: str, whole_trace: bool = False) -> str:
    """A text as said for the platform (NPU words on Ascend, AMD's on ROCm), and for a trace without step
    markers."""
    if whole_trace:
        for old, new in _WHOLE_TRACE_WORDS:
            text = text.replace(old, new)
    words = {"ascend": _NPU_WORDS, "rocm": _ROCM_WORDS}.get(platform.split("+")[0], ())
    for old, new in words:
        text = text.replace(old, new)
    return text


