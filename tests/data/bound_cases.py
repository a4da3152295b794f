"""Small CUDA programs, each bound by one cause planted by construction — ground truth for the verdict.

Each case is what a user writes; the comment says what bounds its step and why, before any tool
looked at it. The step is one loop iteration, marked by ``prof.step()`` of a plain
``torch.profiler`` schedule (the layout every PyTorch user gets from ``tensorboard_trace_handler``).
The program knows nothing of stepscope.

    python tests/data/bound_cases.py --case copy --out DIR      # DIR/copy/<worker>.pt.trace.json.gz

Cases:
* ``copy``   — inference on a large batch in pageable host memory: each step copies 256 MB in
  (``.to("cuda")``) and 256 MB back (``.cpu()``) around a few elementwise kernels (< 1 ms). Copy-bound;
  the copies are pageable (no ``pin_memory``).
* ``fp32``   — an MLP trained in FP32 (TF32 off, PyTorch's default for matmuls): four 4096×4096
  layers on a batch of 8192, ~3.3 TFLOP a step on CUDA cores. Compute-bound, no Tensor Cores.
* ``bf16``   — the same MLP under bf16 autocast on a batch of 16384: compute-bound on Tensor Cores;
  the host launches ~40 kernels a step and runs far ahead.
* ``empty_cache`` — ``bf16`` with ``torch.cuda.empty_cache()`` after every step: each step gives
  the caching allocator's blocks back (``cudaFree``, which waits for the device) and allocates them
  again (``cudaMalloc``) while the GPU waits.
* ``item`` — ``bf16`` reading ``loss.item()`` every step (logging): the host waits for the step's
  kernels, then the GPU waits while the host launches the next step.
* ``sync``   — a training step followed by host metrics that need the step's outputs: ``.cpu()``
  of the logits, then ~8 ms of numpy on them. The copy blocks the host until the GPU is done, and
  the GPU then idles while the host computes and until it launches the next step. Removing the
  sync (computing the metrics on the GPU, or a step late) lets the two overlap.
* ``sync_late`` — the fix of ``sync``: the probabilities are copied without blocking into pinned
  memory and scored one step late, after an event of the previous step (done by then).
* ``launch`` — a deep, narrow MLP (24 blocks of 256 wide, batch 64) with a per-tensor
  (``foreach=False``) Adam: ~1,000 kernels of a few µs each per step, each launched from Python.
  Host-bound on launches.
* ``launch_fused`` — the fix of ``launch``'s optimizer: ``Adam(fused=True)`` (a few kernels for all
  parameters).
* ``loader2`` — a small conv net fed by a DataLoader with 2 worker processes that cannot keep up
  (64 samples of ~1-2 ms of numpy per batch): input-bound, the main process waits in ``__next__``.
* ``loader8`` — the fix: 8 workers.
* ``cpu_op`` — a bf16 MLP step plus an SVD of a 768×768 *CPU* tensor every step: the GPU waits while
  the host runs a PyTorch op that launches nothing.
* ``side_copy`` — a compute-bound bf16 MLP while the next batch (128 MB, pinned) is copied on a side
  stream: the copy is hidden under the GEMMs and costs the step nothing.
* ``compiled`` — ``launch``'s MLP under ``torch.compile`` with ``Adam(fused=True)``: still host-bound
  on launches; the remedy left is CUDA graphs (``mode="reduce-overhead"``), not compiling again.
* ``attention`` — bf16 causal attention forward and backward, compute-bound on Tensor-Core kernels.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import nn


def copy_case(dev: str) -> Callable[[], None]:
    host = torch.randn(16384, 4096)  # 256 MB of float32, pageable

    def step() -> None:
        x = host.to(dev)
        y = torch.relu(x * 0.5 + 1.0)
        y = y / (y.amax(dim=1, keepdim=True) + 1e-6)
        out = y.cpu()
        assert out.shape == host.shape

    return step


def mlp(width: int, depth: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers)


def autocast_step(dev: str, amp: bool, model: Callable[[torch.Tensor], torch.Tensor], opt: torch.optim.Optimizer,
                  loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], x: torch.Tensor,
                  target: torch.Tensor) -> torch.Tensor:
    """One training step (forward under bf16 autocast when ``amp``, backward, optimizer); the loss."""
    with torch.autocast(dev, dtype=torch.bfloat16, enabled=amp):
        loss = loss_fn(model(x), target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss


def train_case(dev: str, batch: int, amp: bool, empty_cache: bool = False, item: bool = False) -> Callable[[], None]:
    torch.backends.cuda.matmul.allow_tf32 = False
    model = mlp(4096, 4).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(batch, 4096, device=dev)
    target = torch.randn(batch, 4096, device=dev)
    logged: list[float] = []

    def step() -> None:
        loss = autocast_step(dev, amp, model, opt, nn.functional.mse_loss, x, target)
        if empty_cache:  # "to save memory": the allocator frees its blocks, the next step allocates again
            torch.cuda.empty_cache()
        if item:  # logging the loss every step: the host waits for the step's kernels
            logged.append(loss.item())

    return step


def sync_case(dev: str, late: bool = False) -> Callable[[], None]:
    model = nn.Sequential(nn.Linear(2048, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                          nn.Linear(4096, 1000)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(16384, 2048, device=dev)
    labels = torch.randint(0, 1000, (16384,), device=dev)
    rows = 512  # the rows the host scores: ~5 ms of numpy
    pinned = torch.empty(rows, 1000, pin_memory=dev == "cuda")
    done: list[torch.cuda.Event] = []

    def score(probs: np.ndarray) -> None:
        ranks = np.argsort(-probs, axis=1)[:, :5]  # top-5 accuracy on the host
        top5 = (ranks == host_labels[:, None]).any(axis=1).mean()
        assert 0.0 <= top5 <= 1.0

    host_labels = labels[:rows].cpu().numpy()

    def step() -> None:
        with torch.autocast(dev, dtype=torch.bfloat16):
            logits = model(x)
            loss = nn.functional.cross_entropy(logits, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        probs = logits[:rows].detach().float().softmax(dim=1)
        if not late:
            score(probs.cpu().numpy())  # blocks until the step's kernels are done
            return
        if done:  # the fix: score the previous step's copy, finished while this step was queued
            done.pop().synchronize()
            score(pinned.numpy().copy())
        pinned.copy_(probs, non_blocking=True)
        ev = torch.cuda.Event()
        ev.record()
        done.append(ev)

    return step


def launch_case(dev: str, fused: bool = False, compiled: bool = False) -> Callable[[], None]:
    blocks: list[nn.Module] = []
    for _ in range(24):
        blocks += [nn.Linear(256, 256), nn.LayerNorm(256), nn.GELU()]
    model = nn.Sequential(*blocks).to(dev)
    if compiled:  # Inductor fuses the small ops into Triton kernels; the host still launches each of them
        model = torch.compile(model)
    opt = (torch.optim.Adam(model.parameters(), lr=1e-3, fused=True) if fused
           else torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False))
    x = torch.randn(64, 256, device=dev)

    def step() -> None:
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


class Augmented(torch.utils.data.Dataset[tuple[torch.Tensor, int]]):
    """Images with a heavy per-sample CPU augmentation (~1-2 ms of numpy each)."""

    def __init__(self, n: int) -> None:
        rng = np.random.default_rng(0)
        self.images = rng.random((n, 3, 64, 64), dtype=np.float32)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        img = self.images[i]
        for _ in range(6):
            img = (img + np.roll(img, 1, axis=1) + np.roll(img, 1, axis=2)) / 3.0
        return torch.from_numpy(np.ascontiguousarray(img, dtype=np.float32)), i % 10


def loader_case(dev: str, workers: int) -> Callable[[], None]:
    """A small conv net fed by a DataLoader whose workers cannot keep up (64 samples of ~1-2 ms each
    per batch, ``workers`` processes, pinned batches)."""
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(32, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loader = torch.utils.data.DataLoader(Augmented(64 * 12), batch_size=64, num_workers=workers,
                                         pin_memory=dev == "cuda")
    batches = iter(loader)

    def step() -> None:
        x, y = next(batches)
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def cpu_op_case(dev: str) -> Callable[[], None]:
    """A training step that also runs a heavy PyTorch op on the CPU each step (an SVD of a 768×768 CPU
    tensor, a spectral penalty computed on the host): the GPU waits while the host runs that op."""
    model = mlp(2048, 2).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(4096, 2048, device=dev)
    probe = torch.randn(768, 768)

    def step() -> None:
        with torch.autocast(dev, dtype=torch.bfloat16):
            loss = model(x).square().mean()
        penalty = torch.linalg.svdvals(probe).max()  # on the CPU, every step
        opt.zero_grad(set_to_none=True)
        (loss + 1e-6 * penalty.to(dev, non_blocking=True)).backward()
        opt.step()

    return step


def side_copy_case(dev: str) -> Callable[[], None]:
    """Compute-bound bf16 training while the next batch (128 MB, pinned) is copied on a side stream:
    the copy is hidden under the GEMMs, so it costs the step nothing."""
    model = mlp(4096, 4).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    host = torch.randn(8192, 4096).pin_memory() if dev == "cuda" else torch.randn(8192, 4096)
    side = torch.cuda.Stream() if dev == "cuda" else None
    cur = host.to(dev)

    def step() -> None:
        nonlocal cur
        x = cur
        if side is not None:
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                nxt = host.to(dev, non_blocking=True)
        else:
            nxt = host.clone()
        with torch.autocast(dev, dtype=torch.bfloat16):
            loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if side is not None:
            torch.cuda.current_stream().wait_stream(side)
            nxt.record_stream(torch.cuda.current_stream())
        cur = nxt

    return step


def attention_case(dev: str) -> Callable[[], None]:
    """bf16 scaled-dot-product attention, forward and backward (batch 16, 16 heads, 2048 tokens, head
    dim 128): compute-bound on the attention kernels, which run on Tensor Cores."""
    q, k, v = (torch.randn(16, 16, 2048, 128, device=dev, dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))

    def step() -> None:
        out = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.sum().backward()

    return step


CASES: dict[str, Callable[[str], Callable[[], None]]] = {
    "copy": copy_case,
    "fp32": lambda dev: train_case(dev, 8192, amp=False),
    "bf16": lambda dev: train_case(dev, 16384, amp=True),
    "empty_cache": lambda dev: train_case(dev, 16384, amp=True, empty_cache=True),
    "item": lambda dev: train_case(dev, 16384, amp=True, item=True),
    "sync": sync_case,
    "sync_late": lambda dev: sync_case(dev, late=True),
    "launch": launch_case,
    "launch_fused": lambda dev: launch_case(dev, fused=True),
    "loader2": lambda dev: loader_case(dev, 2),
    "loader8": lambda dev: loader_case(dev, 8),
    "cpu_op": cpu_op_case,
    "side_copy": side_copy_case,
    "compiled": lambda dev: launch_case(dev, fused=dev == "cuda", compiled=True),
    "attention": attention_case,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=sorted(CASES), required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--with-stack", action="store_true", help="record Python frames too (folder <case>_stack)")
    args = ap.parse_args()
    step = CASES[args.case](args.device)
    activities = [torch.profiler.ProfilerActivity.CPU]
    if args.device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    sched = torch.profiler.schedule(wait=2, warmup=2, active=5, repeat=1)
    name = f"{args.case}_stack" if args.with_stack else args.case
    handler = torch.profiler.tensorboard_trace_handler(str(args.out / name), worker_name=name,
                                                       use_gzip=True)
    with torch.profiler.profile(activities=activities, schedule=sched, on_trace_ready=handler,
                                record_shapes=True, with_stack=args.with_stack) as prof:
        t0 = time.perf_counter()
        for _ in range(10):
            step()
            prof.step()
        if args.device == "cuda":
            torch.cuda.synchronize()  # after the loop: no sync inside the steps but the case's own
    print(f"{args.case}: 10 steps in {(time.perf_counter() - t0) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
