"""Micro traces for the advisor rules: one function per rule, ``scene(b, on)`` fills a TraceBuilder so
that the rule fires when ``on`` is True and stays quiet when False. Times in µs; steps of 10 ms."""

from __future__ import annotations

from collections.abc import Callable

from tests.builders import V100, TraceBuilder

STEP = 10_000
GIB = 1 << 30
Scene = Callable[[TraceBuilder, bool], None]


def steps(b: TraceBuilder, n: int = 3) -> list[int]:
    """``n`` ProfilerSteps of 10 ms; their start times."""
    for i in range(n):
        b.step(i + 1, i * STEP, STEP)
    return [i * STEP for i in range(n)]


def gemm(b: TraceBuilder, t: int, dur: int = 5_000, name: str = "volta_sgemm_128x64_nn",
         op: str = "aten::mm", **op_args: object) -> None:
    """A host op at ``t`` launching one kernel of ``dur`` right away."""
    b.op(op, ts=t, dur=30, **op_args)
    b.launch_kernel(name, launch_ts=t + 5, launch_dur=10, ts=t + 20, dur=dur, grid=[160, 1, 1], block=[256, 1, 1])


def dataloader(b: TraceBuilder, on: bool) -> None:
    for t in steps(b):
        dl = 4_000 if on else 100
        b.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts=t + 10, dur=dl, cat="user_annotation")
        gemm(b, t + dl + 50, dur=STEP - dl - 200)


def pageable(b: TraceBuilder, on: bool) -> None:
    name = "Memcpy HtoD (Pageable -> Device)" if on else "Memcpy HtoD (Pinned -> Device)"
    for t in steps(b):
        b.op("aten::copy_", ts=t + 10, dur=20)
        b.launch_kernel(name, launch_ts=t + 12, launch_dur=5, ts=t + 20, dur=800, runtime="cudaMemcpyAsync",
                        cat="gpu_memcpy", bytes=64 << 20)
        gemm(b, t + 900, dur=8_000)


def sync(b: TraceBuilder, on: bool) -> None:
    for t in steps(b):
        gemm(b, t + 10, dur=3_000)
        if on:
            b.op("aten::item", ts=t + 100, dur=3_000)
            b.add(ph="X", cat="cuda_runtime", name="cudaStreamSynchronize", pid=b.pid, tid=b.tid, ts=t + 110,
                  dur=2_950, args={})
        gemm(b, t + (3_200 if on else 100), dur=5_000)


def launch_bound(b: TraceBuilder, on: bool) -> None:
    for t in steps(b):
        if not on:
            gemm(b, t + 10, dur=9_500)
            continue
        for j in range(60):  # 60 short kernels, each waiting for its slow launch
            gemm(b, t + 10 + j * 150, dur=4, name="vectorized_elementwise_kernel")


def optimizer(b: TraceBuilder, on: bool) -> None:
    for t in steps(b):
        gemm(b, t + 10, dur=6_000)
        b.op("Optimizer.step#SGD.step", ts=t + 6_100, dur=3_500, cat="user_annotation")
        n, name = (40, "void at::native::vectorized_elementwise_kernel<4, AddFunctor>") if on else \
            (2, "void at::native::multi_tensor_apply_kernel<SGD>")
        for j in range(n):
            b.op("aten::add_", ts=t + 6_110 + j * 80, dur=40)
            b.launch_kernel(name, launch_ts=t + 6_115 + j * 80, launch_dur=10, ts=t + 6_130 + j * 80, dur=50,
                            grid=[160, 1, 1], block=[256, 1, 1])


def device_sync(b: TraceBuilder, ts: int, until: int) -> None:
    """The host blocked in ``cudaDeviceSynchronize`` from ``ts`` until ``until`` (a device-bound step: the
    host waits for the kernels, so faster kernels shorten the step when it is replayed)."""
    b.add(ph="X", cat="cuda_runtime", name="cudaDeviceSynchronize", pid=b.pid, tid=b.tid, ts=ts, dur=until - ts,
          args={})


def tensor_cores(b: TraceBuilder, on: bool) -> None:
    kernel = "void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>" if on \
        else "volta_fp16_s884cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1"
    for t in steps(b):
        b.op("aten::conv2d", ts=t + 10, dur=60)
        gemm(b, t + 20, dur=8_000, name=kernel, op="aten::cudnn_convolution")
        device_sync(b, t + 100, t + 8_050)  # the kernel runs t + 40 .. t + 8,040


def tf32(b: TraceBuilder, on: bool) -> None:
    """An A100: an 8 ms GEMM on FP32 tensors on Tensor Cores (TF32); off: the same GEMM in bf16."""
    b.meta["deviceProperties"] = [{**V100, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "numSms": 108}]
    kind, types = ("f32f32_tf32f32_f32", "float") if on else ("bf16bf16_bf16f32_f32", "c10::BFloat16")
    name = f"sm80_xmma_gemm_{kind}_nn_n_tilesize128x128x32_stage3_warpsize2x2x1_tensor16x8x8_kernel"
    for t in steps(b):
        gemm(b, t + 10, dur=8_000, name=name, **{"Input type": [types, types]})
        device_sync(b, t + 100, t + 8_050)  # the kernel runs t + 30 .. t + 8,030


def gemm_dims(b: TraceBuilder, on: bool) -> None:
    dims = [[64, 1001], [1001, 30]] if on else [[64, 1024], [1024, 32]]
    for t in steps(b):
        gemm(b, t + 10, dur=6_000, name="volta_h884gemm_64x64_nn", **{"Input Dims": dims,
                                                                       "Input type": ["c10::Half", "c10::Half"]})
        device_sync(b, t + 100, t + 6_040)  # the kernel runs t + 30 .. t + 6,030


def channels_last(b: TraceBuilder, on: bool) -> None:
    b.meta["deviceProperties"] = [{**V100, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "numSms": 108}]
    conv = "sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nchw_tilesize128x128x32_tensor16x8x16" if on \
        else "void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>"
    for t in steps(b):
        b.op("aten::cudnn_convolution", ts=t + 10, dur=100)
        if on:
            b.launch_kernel("void cudnn::ops::nchwToNhwcKernel<__half>", launch_ts=t + 15, launch_dur=5, ts=t + 30,
                            dur=700, grid=[432, 1, 1], block=[256, 1, 1])
        b.launch_kernel(conv, launch_ts=t + 40, launch_dur=5, ts=t + 800, dur=6_000, grid=[432, 1, 1],
                        block=[256, 1, 1])
        device_sync(b, t + 200, t + 6_810)


def under_filled(b: TraceBuilder, on: bool) -> None:
    for t in steps(b):
        b.op("aten::mm", ts=t + 10, dur=30)
        b.launch_kernel("sgemm_splitk", launch_ts=t + 12, launch_dur=5, ts=t + 30, dur=8_000,
                        grid=[10 if on else 160, 1, 1], block=[256, 1, 1])
        device_sync(b, t + 40, t + 8_040)


def comm(b: TraceBuilder, on: bool) -> None:
    b.meta["distributedInfo"] = {"backend": "nccl", "rank": 0, "world_size": 2}
    for t in steps(b):
        gemm(b, t + 10, dur=5_000)
        b.op("nccl:all_reduce", ts=t + 50, dur=30)
        start = t + 5_100 if on else t + 100
        b.launch_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", launch_ts=t + 55, launch_dur=5,
                        ts=start, dur=3_000, stream=20, grid=[2, 1, 1], block=[512, 1, 1])


def rank_builder(rank: int, compute: int, slowest: int = 6_000) -> TraceBuilder:
    """One rank of a 4-rank job: a GEMM of ``compute`` µs at t+30, then an all-reduce that starts when
    the GEMM is done (t+130+compute, its stream waits for it) and ends on every rank when the slowest
    rank's (``slowest`` µs of GEMM) has run 500 µs."""
    b = TraceBuilder(rank=rank, world_size=4)
    for t in steps(b):
        gemm(b, t + 10, dur=compute)
        b.op("nccl:all_reduce", ts=t + 50, dur=30)
        start = t + 130 + compute
        b.launch_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", launch_ts=t + 55, launch_dur=5, ts=start,
                        dur=t + 630 + slowest - start, stream=20, grid=[2, 1, 1], block=[512, 1, 1])
    return b


def memory(b: TraceBuilder, reserved: int, allocated: int) -> None:
    for t in steps(b):
        gemm(b, t + 10, dur=8_000)
        b.memory(t + 5, nbytes=1 << 20, total_allocated=allocated, total_reserved=reserved)


def fragmentation(b: TraceBuilder, on: bool) -> None:
    memory(b, 8 * GIB, (2 if on else 7) * GIB)


def capacity(b: TraceBuilder, on: bool) -> None:
    memory(b, (31 if on else 10) * GIB, (30 if on else 9) * GIB)


def heavy_host(b: TraceBuilder, on: bool) -> None:
    for t in steps(b):
        gemm(b, t + 10, dur=4_000)
        b.op("compute_metrics", ts=t + 4_100, dur=3_000)
        if not on:
            b.launch_kernel("reduce_kernel", launch_ts=t + 4_110, launch_dur=5, ts=t + 4_120, dur=2_900,
                            grid=[160, 1, 1], block=[256, 1, 1])
        gemm(b, t + 7_200, dur=2_000)


def benchmark_off(b: TraceBuilder, on: bool) -> None:
    kernel = "void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>" if on else \
        "volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1"
    for t in steps(b):
        gemm(b, t + 10, dur=8_000, name=kernel, op="aten::cudnn_convolution")
        device_sync(b, t + 100, t + 8_050)  # the kernel runs t + 30 .. t + 8,030


def algo_search(b: TraceBuilder, on: bool) -> None:
    """cuDNN's benchmark search inside the convolution op: each of 14 (off: 2) trial kernels of 400 µs is
    launched and waited for (``cudaEventSynchronize`` until 5 µs after it ends), 500 µs apart."""
    for t in steps(b):
        n = 14 if on else 2
        b.op("aten::cudnn_convolution", ts=t + 10, dur=500 * n)
        for j in range(n):
            b.launch_kernel(f"conv_algo_{j}_kernel", launch_ts=t + 20 + j * 500, launch_dur=10,
                            ts=t + 40 + j * 500, dur=400, grid=[160, 1, 1], block=[256, 1, 1])
            b.add(ph="X", cat="cuda_runtime", name="cudaEventSynchronize", pid=b.pid, tid=b.tid,
                  ts=t + 35 + j * 500, dur=410, args={})


def shapes(b: TraceBuilder, on: bool) -> None:
    for i, t in enumerate(steps(b)):
        n = 100 + 13 * i if on else 128
        gemm(b, t + 10, dur=8_000, **{"Input Dims": [[n, 512], [512, 512]], "Input type": ["float", "float"]})


def outdated(b: TraceBuilder, on: bool) -> None:
    b.meta.update(cuda_runtime_version=10020 if on else 12040, cuda_driver_version=12090)
    for t in steps(b):
        gemm(b, t + 10, dur=8_000)


def zero_grad(b: TraceBuilder, on: bool) -> None:
    for t in steps(b):
        if on:
            b.op("Optimizer.zero_grad#SGD.zero_grad", ts=t + 10, dur=500, cat="user_annotation")
            for j in range(10):
                b.op("aten::zero_", ts=t + 20 + j * 40, dur=30)
                b.launch_kernel("void at::native::vectorized_elementwise_kernel<4, FillFunctor<float>>",
                                launch_ts=t + 25 + j * 40, launch_dur=5, ts=t + 40 + j * 40, dur=40,
                                grid=[160, 1, 1], block=[256, 1, 1])
        gemm(b, t + 600, dur=8_000)
        device_sync(b, t + 700, t + 8_630)  # the GEMM runs t + 620 .. t + 8,620


def small_copies(b: TraceBuilder, on: bool) -> None:
    """60 (off: 2) values a step sent to the device one by one: each ``aten::to`` holds the host 45 µs
    around its 1 KiB copy (30 µs on the device), before the step's GEMM is launched."""
    for t in steps(b):
        for j in range(60 if on else 2):
            b.op("aten::to", ts=t + 10 + j * 50, dur=45)
            b.launch_kernel("Memcpy HtoD (Pinned -> Device)", launch_ts=t + 15 + j * 50, launch_dur=30,
                            ts=t + 20 + j * 50, dur=30, runtime="cudaMemcpyAsync", cat="gpu_memcpy", bytes=1024)
        gemm(b, t + 3_100, dur=6_000)


def launch_blocking(b: TraceBuilder, on: bool) -> None:
    for t in steps(b):
        for j in range(10):
            k0 = t + 10 + j * 900
            b.op("aten::mm", ts=k0, dur=850)
            if on:  # the call returns after its kernel ended
                b.launch_kernel("sgemm", launch_ts=k0 + 5, launch_dur=820, ts=k0 + 10, dur=800,
                                grid=[160, 1, 1], block=[256, 1, 1])
            else:
                b.launch_kernel("sgemm", launch_ts=k0 + 5, launch_dur=8, ts=k0 + 20, dur=800,
                                grid=[160, 1, 1], block=[256, 1, 1])


def unfused(b: TraceBuilder, on: bool) -> None:
    """A 5 ms GEMM, then mul → add → relu on one 4096² tensor (1, 1.5, 0.5 ms) queued behind it; off: the
    three ops on tensors of three sizes (nothing to fuse into one pass)."""
    for t in steps(b):
        gemm(b, t + 10, dur=5_000)
        end = t + 5_030
        for j, (op, dur) in enumerate((("aten::mul", 1_000), ("aten::add", 1_500), ("aten::relu", 500))):
            side = 4096 if on else 1024 * (j + 1)
            b.op(op, ts=t + 100 + 40 * j, dur=30, **{"Input Dims": [[side, side]]})
            b.launch_kernel("vectorized_elementwise_kernel", launch_ts=t + 105 + 40 * j, launch_dur=10,
                            ts=end + 2, dur=dur)
            end += 2 + dur
        device_sync(b, t + 300, end + 4)


def copy_bound(b: TraceBuilder, on: bool) -> None:
    """A pinned 64 MB host-to-device copy of 6 ms (off: 0.2 ms) on the compute stream, then a 3 ms
    GEMM queued behind it."""
    for t in steps(b):
        b.op("aten::copy_", ts=t + 10, dur=20)
        b.launch_kernel("Memcpy HtoD (Pinned -> Device)", launch_ts=t + 12, launch_dur=5, ts=t + 20,
                        dur=6_000 if on else 200, runtime="cudaMemcpyAsync", cat="gpu_memcpy", bytes=64 << 20)
        b.op("aten::mm", ts=t + 100, dur=30)
        b.launch_kernel("volta_sgemm_128x64_nn", launch_ts=t + 105, launch_dur=10, ts=t + (6_020 if on else 220),
                        dur=3_000, grid=[160, 1, 1], block=[256, 1, 1])


def attention(b: TraceBuilder, on: bool) -> None:
    """fp16 attention (1 head, 1,024 tokens, head dim 64, not causal: 0.94 GFLOP forward and
    backward); on: SDPA's math backend, an FP32 ``aten::bmm`` of 3 ms inside it and its
    ``BmmBackward0`` (the same sequence number) launching 3 ms more; off: the flash kernels."""
    q = [1, 1, 1024, 64]
    shapes = {"Input Dims": [q, q, q, [], [], [], [], []], "Input type": ["c10::Half"] * 3 + [""] * 5,
              "Concrete Inputs": ["", "", "", "", "0.", "False", "", ""]}
    for i, t in enumerate(steps(b)):
        b.op("aten::scaled_dot_product_attention", ts=t + 10, dur=100, **shapes)
        if on:
            b.op("aten::_scaled_dot_product_attention_math", ts=t + 20, dur=80)
            gemm(b, t + 30, dur=3_000, op="aten::bmm", **{"Sequence number": 100 + i})
        else:
            gemm(b, t + 30, dur=3_000, name="flash_fwd_kernel", op="aten::_scaled_dot_product_flash_attention")
        b.op("BmmBackward0" if on else "FlashBackward", ts=t + 3_100, dur=50, **{"Sequence number": 100 + i})
        b.launch_kernel("volta_sgemm_128x64_nt" if on else "flash_bwd_kernel", launch_ts=t + 3_110, launch_dur=10,
                        ts=t + 3_120, dur=3_000)
        device_sync(b, t + 3_130, t + 6_130)


def compiling(b: TraceBuilder, on: bool) -> None:
    """A compiled step; on: its frame recompiles in every step, 3 ms before its GEMM is launched."""
    for t in steps(b):
        b.op(f"Torch-Compiled Region: 0/{1 if on else 0}", ts=t + 10, dur=9_900)
        if on:
            b.op("entire_frame_compile", ts=t + 20, dur=3_000)
        gemm(b, t + 3_100, dur=6_000)


def fell_back(b: TraceBuilder, on: bool) -> None:
    """A compiled step: Dynamo's cache lookup, then its frame's region holding the GEMM; on: the lookup and no
    region — the GEMM runs eager under the wrapper (Dynamo gave up on the frame)."""
    for t in steps(b):
        b.op("TorchDynamo Cache Lookup", ts=t + 5, dur=3)
        if not on:
            b.op("Torch-Compiled Region: 0/0", ts=t + 10, dur=9_900)
        gemm(b, t + 100, dur=6_000)


def outside_ops(b: TraceBuilder, on: bool) -> None:
    """A CPU-only program (no device): each step an op of 1.99 ms, then 8 ms that no op covers (on: the
    loop's code, a checkpoint), or an op over the whole step (off)."""
    b.meta.pop("deviceProperties", None)
    for t in steps(b):
        b.op("aten::mm", ts=t + 10, dur=1_990 if on else 9_980)


def stalled(b: TraceBuilder, on: bool) -> None:
    """A CPU-only program: each step five ``aten::mm`` (64x64) of 200 µs, 1.1 ms apart; on: in steps 2 and 3
    the last one takes 3,200 µs — 16x the median of the 15 calls and 3,000 µs beyond it, the thread kept
    waiting: the median step loses 3 ms (30 %)."""
    b.meta.pop("deviceProperties", None)
    dims = {"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}
    for s, t in enumerate(steps(b)):
        for i in range(5):
            b.op("aten::mm", ts=t + 10 + i * 1_100, dur=3_200 if on and s >= 1 and i == 4 else 200, **dims)


def float64(b: TraceBuilder, on: bool) -> None:
    """A CPU-only program: each step an ``aten::_log_softmax`` of 2,000 µs on [256, 32000] logits (on: float64;
    off: float32) and an ``aten::mm`` of 3,000 µs; a Python float multiplying a float tensor is typed "double"
    too, and is no float64 tensor: half the 2 ms is the gain."""
    b.meta.pop("deviceProperties", None)
    dtype = "double" if on else "float"
    for t in steps(b):
        b.op("aten::_log_softmax", ts=t + 10, dur=2_000, **{"Input Dims": [[256, 32000], [], []],
                                                               "Input type": [dtype, "Scalar", "Scalar"]})
        b.op("aten::mul", ts=t + 2_100, dur=100, **{"Input Dims": [[256, 64], []], "Input type": ["float", "double"]})
        b.op("aten::mm", ts=t + 2_300, dur=3_000,
             **{"Input Dims": [[256, 64], [64, 64]], "Input type": ["float", "float"]})


SCENES: dict[str, Scene] = {
    "dataloader-bound": dataloader,
    "pageable-memcpy": pageable,
    "sync-in-step": sync,
    "launch-bound": launch_bound,
    "small-kernel-optimizer": optimizer,
    "no-tensor-cores": tensor_cores,
    "tf32-not-bf16": tf32,
    "gemm-dims-not-multiple-of-8": gemm_dims,
    "channels-last": channels_last,
    "under-filled-grid": under_filled,
    "unfused-elementwise": unfused,
    "comm-not-overlapped": comm,
    "allocator-fragmentation": fragmentation,
    "memory-near-capacity": capacity,
    "heavy-host-op-no-gpu": heavy_host,
    "cudnn-benchmark-off": benchmark_off,
    "conv-algo-search": algo_search,
    "variable-input-shapes": shapes,
    "compile-in-step": compiling,
    "compile-fell-back": fell_back,
    "copy-bound": copy_bound,
    "attention-math-fallback": attention,
    "outdated-software": outdated,
    "zero-grad-not-none": zero_grad,
    "small-memcpy": small_copies,
    "cuda-launch-blocking": launch_blocking,
    "host-outside-ops": outside_ops,
    "host-stalled": stalled,
    "float64-ops": float64,
}
