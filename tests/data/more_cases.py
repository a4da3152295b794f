"""More CUDA programs with one planted cause each (the layout and the profiler schedule of
``bound_cases.py``), each probing one classification the first set did not:

* ``elementwise`` — a chain of 32 eager elementwise kernels over a 256 MB FP32 tensor per step: the
  GPU is busy with memory-bound kernels that need no Tensor Cores. Compute-bound; nothing about
  Tensor Cores, launches or copies applies (fusing the chain, e.g. ``torch.compile``, is the change).
* ``tf32`` — ``bound_cases``' FP32 MLP with TF32 allowed (``set_float32_matmul_precision("high")``):
  the GEMMs run on Tensor Cores. Compute-bound, no ``no-tensor-cores``.
* ``conv_fp32`` — a conv net trained in FP32, NCHW, ``cudnn.benchmark`` on: cuDNN's default
  (``allow_tf32``) runs the convolutions on TF32 Tensor Cores. Compute-bound, no ``no-tensor-cores``.
* ``decode`` — batch-1 bf16 decoding: 16 layers of 8192² weights, 8 tokens a step: each GEMV
  streams its 134 MB of weights (memory-bound; Tensor Cores would not help). Compute-bound.
* ``host_numpy`` — a small bf16 MLP step after ~tens of ms of numpy preprocessing in the training
  loop itself (no DataLoader): the GPU waits for the host's Python. Host-bound; moving the
  preprocessing off the loop (DataLoader workers) is the change.
* ``gloo_ddp`` — DDP over two ranks on one GPU with the ``gloo`` backend: each step all-reduces
  67 MB of FP32 gradients on the CPU (device → host, all-reduce, host → device) around ~1 ms of
  kernels. Communication-bound.
* ``elementwise_compiled``, ``bf16_compiled`` — the fix an engineer names for unfused elementwise
  kernels: ``elementwise``'s chain under ``torch.compile``, and ``bound_cases``' ``bf16`` MLP step
  (model, loss and optimizer) under ``torch.compile`` — the measured "after" of a fusion finding.
* ``cheap``, ``cheap_compiled`` — 16 cheap elementwise kernels (``x * 0.999 + 0.001`` eight times)
  over 256 MB, eager and compiled: a fused pass with little arithmetic per element.
* ``conv_fp32_cl`` — ``conv_fp32`` in channels-last (model and batch), still FP32: the
  ``channels-last`` finding's change alone; ``conv_bf16_cl`` the same under bf16 autocast.
* ``bf16_8k`` — ``tf32``'s MLP step (batch 8192) under bf16 autocast: the change from TF32 to bf16
  Tensor Cores alone.

    python tests/data/more_cases.py --case decode --out DIR
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bound_cases import autocast_step, mlp, train_case

Step = Callable[[], None]


def elementwise_case(dev: str) -> Step:
    x0 = torch.randn(64 << 20, device=dev)  # 256 MB of float32

    def step() -> None:
        x = x0
        for _ in range(8):
            x = torch.relu(x * 1.0001 + 0.01).sin()
        x0.copy_(x)

    return step


def tf32_case(dev: str) -> Step:
    step = train_case(dev, 8192, amp=False)  # sets allow_tf32 False when it builds
    torch.set_float32_matmul_precision("high")  # TF32 for the matmuls from here on
    return step


def conv_case(dev: str, channels_last: bool = False, amp: bool = False) -> Step:
    torch.backends.cudnn.benchmark = True
    layers: list[nn.Module] = [nn.Conv2d(3, 128, 3, padding=1), nn.ReLU()]
    for _ in range(6):
        layers += [nn.Conv2d(128, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU()]
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = torch.randn(64, 3, 112, 112, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    if channels_last:  # the channels-last finding's change, without AMP: only the layout differs
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)

    def step() -> None:
        autocast_step(dev, amp, model, opt, nn.functional.cross_entropy, x, y)

    return step


def decode_case(dev: str) -> Step:
    weights = [torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16) * 0.01 for _ in range(16)]
    token = torch.randn(1, 8192, device=dev, dtype=torch.bfloat16)

    def step() -> None:
        with torch.inference_mode():
            h = token
            for _ in range(8):
                for w in weights:
                    h = torch.tanh(nn.functional.linear(h, w))
            token.copy_(h)

    return step


def cheap_chain(x: torch.Tensor) -> torch.Tensor:
    for _ in range(8):
        x = x * 0.999 + 0.001
    return x


def cheap_case(dev: str, compiled: bool = False) -> Step:
    """16 cheap elementwise kernels (multiply, add) over 256 MB: fused, one pass with little arithmetic."""
    x0 = torch.randn(64 << 20, device=dev)
    chain = torch.compile(cheap_chain) if compiled else cheap_chain

    def step() -> None:
        x0.copy_(chain(x0))

    for _ in range(3 if compiled else 0):
        step()
    return step


def elementwise_compiled_case(dev: str) -> Step:
    x0 = torch.randn(64 << 20, device=dev)

    @torch.compile
    def chain(x: torch.Tensor) -> torch.Tensor:
        for _ in range(8):
            x = torch.relu(x * 1.0001 + 0.01).sin()
        return x

    def step() -> None:
        x0.copy_(chain(x0))

    for _ in range(3):  # compile outside the profiled steps
        step()
    return step


def bf16_compiled_case(dev: str) -> Step:
    model = mlp(4096, 4).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(16384, 4096, device=dev)
    target = torch.randn(16384, 4096, device=dev)

    @torch.compile
    def train_step() -> None:
        with torch.autocast(dev, dtype=torch.bfloat16):
            loss = nn.functional.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        train_step()
    return train_step


def host_numpy_case(dev: str) -> Step:
    model = mlp(1024, 4).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    raw = np.random.default_rng(0).random((256, 3, 64, 64), dtype=np.float32)

    def step() -> None:
        img = raw
        for _ in range(4):  # augmentation in the loop: numpy on the main thread, every step
            img = (img + np.roll(img, 1, axis=2) + np.roll(img, 1, axis=3)) / 3.0
        x = torch.from_numpy(np.ascontiguousarray(img.reshape(256, -1)[:, :1024])).to(dev)
        with torch.autocast(dev, dtype=torch.bfloat16):
            loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


CASES: dict[str, Callable[[str], Step]] = {
    "elementwise": elementwise_case,
    "tf32": tf32_case,
    "conv_fp32": conv_case,
    "decode": decode_case,
    "host_numpy": host_numpy_case,
    "elementwise_compiled": elementwise_compiled_case,
    "bf16_compiled": bf16_compiled_case,
    "conv_fp32_cl": lambda dev: conv_case(dev, channels_last=True),
    "conv_bf16_cl": lambda dev: conv_case(dev, channels_last=True, amp=True),
    "bf16_8k": lambda dev: train_case(dev, 8192, amp=True),
    "cheap": cheap_case,
    "cheap_compiled": lambda dev: cheap_case(dev, compiled=True),
}


def profile_steps(step: Step, out: Path, name: str, dev: str, active: int = 5) -> float:
    """Run ``step`` under the profiler schedule (wait 2, warmup 2, ``active``, one more step); the ms it took."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if dev == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    sched = torch.profiler.schedule(wait=2, warmup=2, active=active, repeat=1)
    handler = torch.profiler.tensorboard_trace_handler(str(out), worker_name=name, use_gzip=True)
    with torch.profiler.profile(activities=activities, schedule=sched, on_trace_ready=handler,
                                record_shapes=True) as prof:
        t0 = time.perf_counter()
        for _ in range(active + 5):
            step()
            prof.step()
        if dev == "cuda":
            torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3


def gloo_rank(rank: int, out: str, dev: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=rank, world_size=2)
    model = nn.parallel.DistributedDataParallel(mlp(2048, 4).to(dev))
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(4096, 2048, device=dev)

    def step() -> None:
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda"):
            loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    ms = profile_steps(step, Path(out), f"rank{rank}", dev)
    print(f"gloo_ddp rank {rank}: 10 steps in {ms:.1f} ms")
    dist.destroy_process_group()


def parse_case(cases: dict[str, Callable[[str], Step]], doc: str, extra: tuple[str, ...] = ()) -> argparse.Namespace:
    """``--case NAME --out DIR [--device cuda]``, the command line of these capture programs."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--case", choices=[*sorted(cases), *extra], required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="cuda")
    return ap.parse_args()


def run_case(cases: dict[str, Callable[[str], Step]], args: argparse.Namespace) -> None:
    ms = profile_steps(cases[args.case](args.device), args.out / args.case, args.case, args.device)
    print(f"{args.case}: 10 steps in {ms:.1f} ms")


def run_cli(cases: dict[str, Callable[[str], Step]], doc: str) -> None:
    run_case(cases, parse_case(cases, doc))


def main() -> None:
    args = parse_case(CASES, __doc__ or "", ("gloo_ddp",))
    if args.case == "gloo_ddp":
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        torch.multiprocessing.spawn(gloo_rank, args=(str(args.out / "gloo_ddp"), args.device), nprocs=2)
        return
    run_case(CASES, args)


if __name__ == "__main__":
    main()
