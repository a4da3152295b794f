"""A third set of CUDA programs with one planted cause each (the layout and the profiler schedule of
``bound_cases.py``), written before any tool looked at their traces. What an engineer concludes:

* ``nonzero`` — a bf16 GEMM chain, then a boolean-mask selection (``h[h > 0.5]``: ``aten::nonzero``
  must learn the result's size, so the host waits for the GEMMs), then ~800 small in-place ops the
  host could have queued while the GEMMs ran. Host-bound by that implicit sync; the sync (named by
  the op that makes it) is the change, launches the second thing.
* ``recompile`` — ``torch.compile(dynamic=False)`` of a small MLP fed a new batch size every step:
  Dynamo recompiles every step (seconds of host time, the GPU idle). Host-bound by compilation;
  marking the batch dimension dynamic (or fixed, padded sizes) is the change.
* ``offload`` — each step copies 512 MB from pinned host memory to the device and 512 MB back, on the
  compute stream, around ~2 ms of GEMMs: copy-bound with pinned memory. Not a pageable-copy problem,
  not compute, not launches: keeping the data on the device, or overlapping the copies with compute
  on a side stream, is the change.
* ``scaler`` — the ``bf16`` MLP trained in FP16 with ``GradScaler`` (its ``step`` reads ``found_inf``
  with ``.item()``: one sync a step, after the backward). Compute-bound; the sync costs the GPU only
  the optimizer's launches (~0.1 ms of a ~10 ms step): nothing about syncs or Tensor Cores first.
* ``scatter`` — ``index_add_`` of 64 k rows into 16 (4,096-way atomic contention on every address):
  one slow indexing kernel is the step. Compute-bound; no GEMM, no copy, no launch problem.
* ``small_h2d`` — a bf16 MLP forward, then 200 per-step scalars made with ``torch.tensor(v,
  device="cuda")``: 200 tiny pageable host-to-device copies, the first waiting for the GEMMs, each
  holding the host. Host-bound by the copies; building the values on the host and copying once is the
  change.
* ``attention_math`` — ``bound_cases``' ``attention`` (bf16 causal SDPA, forward and backward) forced
  to the math backend: the score matrix materialised, softmax and masking as separate kernels.
  Compute-bound; the flash kernels (the ``attention`` case, captured beside it) are the change.


A fourth round (``r14``):

* ``graph_break`` — a 16-module MLP at batch 64 under ``torch.compile`` with a graph break every
  four modules: four small compiled graphs a step, host-bound by their launches. Launch-bound; not
  compilation (compiled before the profile).
* ``graphed``, ``graphed_eager`` — inference of a 24-layer MLP at batch 32 replayed from a CUDA
  graph (``torch.cuda.graph``), and the same model run eagerly: the eager one is launch-bound, the
  graphed one keeps the GPU busy — no launch finding there.
* ``cpu_adam`` — a bf16 MLP trained on the GPU with its Adam step on CPU copies of the parameters
  (gradients copied to the host, ``Adam`` on the CPU, parameters copied back: an offloaded
  optimizer): host-bound by the CPU optimizer step, which launches no GPU work.


A fifth round (``r15``):

* ``ddp_nccl`` — a bf16 MLP under DDP with NCCL on one rank (world size 1: the all-reduce kernels
  run and reduce nothing across ranks). Compute-bound; communication is no first finding.
* ``pin_loader`` — ``bound_cases``' DataLoader with 8 workers and ``pin_memory=True``, batches copied
  with ``non_blocking=True`` before a bf16 MLP step long enough for the workers to keep up:
  compute-bound, nothing about the input pipeline or pageable copies.

    python tests/data/probe_cases.py --case nonzero --out DIR
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bound_cases import attention_case, autocast_step, mlp
from more_cases import run_cli

Step = Callable[[], None]


def nonzero_case(dev: str, fixed: bool = False) -> Step:
    w = [torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16) / 90 for _ in range(4)]
    x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    small = [torch.randn(256, device=dev) for _ in range(8)]
    kept = torch.zeros((), device=dev)

    def step() -> None:
        h = x
        for wi in w:
            h = torch.relu(h @ wi)
        if fixed:  # the same sum without learning a size: no sync
            kept.add_(torch.where(h > 0.5, h, 0).float().sum())
        else:
            kept.add_(h[h > 0.5].float().sum())  # nonzero: the host waits for the GEMMs here
        for _ in range(50):
            for s in small:
                s.mul_(0.999).add_(0.001)

    return step


def recompile_case(dev: str, fixed: bool = False) -> Step:
    import torch._dynamo.config as dynamo_config

    for name in ("recompile_limit", "cache_size_limit"):  # keep recompiling past the default 8
        if hasattr(dynamo_config, name):
            setattr(dynamo_config, name, 64)
    model = mlp(1024, 4).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    fwd = torch.compile(model, dynamic=False)
    calls = [0]

    def step() -> None:
        calls[0] += 1
        x = torch.randn(256 + 64 * calls[0], 1024, device=dev)
        if fixed:  # the batch dimension marked dynamic: one compile, before the profiled steps
            torch._dynamo.mark_dynamic(x, 0)
        loss = fwd(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def offload_case(dev: str, side: bool = False) -> Step:
    host = torch.randn(128 << 20).pin_memory()  # 512 MB, pinned
    w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16) / 64
    x = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    copies = torch.cuda.Stream() if side else torch.cuda.current_stream()

    def step() -> None:
        main = torch.cuda.current_stream()
        with torch.cuda.stream(copies):  # side: the GEMMs need not wait for the copy
            copies.wait_stream(main)
            d = host.to(dev, non_blocking=True)  # compute stream unless side: the GEMMs wait for it
        h = x
        for _ in range(8):
            h = torch.relu(h @ w)
        main.wait_stream(copies)
        d.record_stream(main)
        d.mul_(0.5).add_(h.float().mean())
        copies.wait_stream(main)
        with torch.cuda.stream(copies):
            host.copy_(d, non_blocking=True)  # back to the host
        main.wait_stream(copies)

    return step


def scaler_case(dev: str) -> Step:
    torch.backends.cuda.matmul.allow_tf32 = False
    model = mlp(4096, 4).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler(dev)
    x = torch.randn(4096, 4096, device=dev)
    target = torch.randn(4096, 4096, device=dev)

    def step() -> None:
        with torch.autocast(dev, dtype=torch.float16):
            loss = nn.functional.mse_loss(model(x), target)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)  # reads found_inf with .item(): a sync a step
        scaler.update()

    return step


def scatter_case(dev: str) -> Step:
    out = torch.zeros(16, 1024, device=dev)
    src = torch.randn(1 << 16, 1024, device=dev)
    idx = torch.randint(0, 16, (1 << 16,), device=dev)

    def step() -> None:
        for _ in range(4):
            out.index_add_(0, idx, src)
        out.mul_(0.5)

    return step


def small_h2d_case(dev: str, fixed: bool = False) -> Step:
    model = mlp(4096, 4).to(dev)
    x = torch.randn(8192, 4096, device=dev)
    acc = torch.zeros((), device=dev)

    def step() -> None:
        with torch.no_grad(), torch.autocast(dev, dtype=torch.bfloat16):
            h = model(x)
        if fixed:  # the values built on the host, copied once
            acc.add_(torch.tensor([float(i) * 1e-3 for i in range(200)], device=dev).sum())
        else:
            for i in range(200):  # a per-step scalar, made on the device from a Python float
                acc.add_(torch.tensor(float(i) * 1e-3, device=dev))
        acc.add_(h.float().mean())

    return step


def attention_math_case(dev: str) -> Step:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    inner = attention_case(dev)

    def step() -> None:
        with sdpa_kernel(SDPBackend.MATH):
            inner()

    return step


def graph_break_case(dev: str) -> Step:
    model = mlp(1024, 8).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)

    def forward(x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(model):
            x = layer(x)
            if i % 4 == 3:
                torch._dynamo.graph_break()
        return x

    fwd = torch.compile(forward)
    x = torch.randn(64, 1024, device=dev)
    for _ in range(3):  # compiled before the profile
        fwd(x).square().mean().backward()

    def step() -> None:
        loss = fwd(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def graphed_case(dev: str, eager: bool = False) -> Step:
    model = mlp(1024, 24).to(dev).eval()
    x = torch.randn(32, 1024, device=dev)
    if eager:
        def eager_step() -> None:
            with torch.no_grad():
                out = [model(x).sum() for _ in range(20)]
            out[-1].item()

        return eager_step
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = model(x).sum()

    def step() -> None:
        for _ in range(20):
            graph.replay()
        y.item()

    return step


def cpu_adam_case(dev: str) -> Step:
    model = mlp(2048, 4).to(dev)
    host = [p.detach().cpu().clone().requires_grad_(True) for p in model.parameters()]
    opt = torch.optim.Adam(host, lr=1e-4)
    x = torch.randn(4096, 2048, device=dev)

    def step() -> None:
        with torch.autocast(dev, dtype=torch.bfloat16):
            loss = model(x).square().mean()
        model.zero_grad(set_to_none=True)
        loss.backward()
        for p, h in zip(model.parameters(), host):
            h.grad = p.grad.cpu()  # device -> host, the host waits
        opt.step()  # Adam on the CPU
        with torch.no_grad():
            for p, h in zip(model.parameters(), host):
                p.copy_(h)  # host -> device

    return step


def ddp_nccl_case(dev: str) -> Step:
    import os

    import torch.distributed as dist

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29544")
    dist.init_process_group("nccl", rank=0, world_size=1)
    model = nn.parallel.DistributedDataParallel(mlp(4096, 4).to(dev))
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(8192, 4096, device=dev)

    def step() -> None:
        autocast_step(dev, True, model, opt, square_mean, x, x)

    return step


def pin_loader_case(dev: str) -> Step:
    from bound_cases import Augmented

    loader = torch.utils.data.DataLoader(Augmented(4096), batch_size=16, num_workers=8, pin_memory=True,
                                         persistent_workers=True)
    model = mlp(4096, 4).to(dev)
    head = nn.Linear(3 * 64 * 64, 4096).to(dev)
    opt = torch.optim.SGD([*model.parameters(), *head.parameters()], lr=1e-4)
    batches = iter(loader)
    big = torch.randn(8192, 4096, device=dev)

    def step() -> None:
        img, _ = next(batches)
        img = img.to(dev, non_blocking=True)
        autocast_step(dev, True, lambda t: model(big + head(t.flatten(1)).mean(0)), opt, square_mean, img, img)

    return step


CASES: dict[str, Callable[[str], Step]] = {
    "nonzero": nonzero_case,
    "recompile": recompile_case,
    "offload": offload_case,
    "scaler": scaler_case,
    "scatter": scatter_case,
    "small_h2d": small_h2d_case,
    "attention_math": attention_math_case,
    "attention": attention_case,
    "nonzero_fixed": lambda dev: nonzero_case(dev, fixed=True),
    "recompile_fixed": lambda dev: recompile_case(dev, fixed=True),
    "offload_side": lambda dev: offload_case(dev, side=True),
    "small_h2d_fixed": lambda dev: small_h2d_case(dev, fixed=True),
    "graph_break": graph_break_case,
    "graphed": graphed_case,
    "graphed_eager": lambda dev: graphed_case(dev, eager=True),
    "cpu_adam": cpu_adam_case,
    "ddp_nccl": ddp_nccl_case,
    "pin_loader": pin_loader_case,
}


def square_mean(out: torch.Tensor, _: torch.Tensor) -> torch.Tensor:
    return out.square().mean()


def main() -> None:
    run_cli(CASES, __doc__ or "")


if __name__ == "__main__":
    main()
