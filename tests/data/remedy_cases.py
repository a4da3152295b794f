"""CUDA programs in before / after pairs, one change each, for the what-if remedies that no measured
pair held yet (the layout and the profiler schedule of ``bound_cases.py``). Each pair's "after" is
the change the finding names; what each "before" is bound by was written here before any tool read
the traces:

* ``zero_keep`` → ``zero_none`` — a bf16-autocast MLP (6 layers of 8192², FP32 parameters, 1.6 GB
  of gradients) whose ``zero_grad(set_to_none=False)`` writes every gradient with zeros each step
  (``zero-grad-not-none``); the fix frees them instead. Compute-bound; the zeroing is a few percent.
* ``launch`` → ``launch_blocking`` and ``bf16`` → ``bf16_blocking`` — ``bound_cases``' launch-bound
  blocks and compute-bound MLP, run again with ``CUDA_LAUNCH_BLOCKING=1`` (``cuda-launch-blocking``):
  the pair is read backwards, the blocking run the "before" and the plain one the fix.
* ``gemm_odd`` → ``gemm_pad`` — a bf16-autocast MLP of width 4,100 (neither a multiple of 8 nor of
  64: ``gemm-dims-not-multiple-of-8``) and the same padded to 4,160 (1.5 % more arithmetic).
  Compute-bound on the GEMMs.
* ``conv_search`` → ``conv_fixed`` — a conv net with ``cudnn.benchmark = True`` fed a new image size
  every step (``conv-algo-search``: cuDNN tries every algorithm each step) and the same with
  ``cudnn.benchmark = False``. Bound by the search.

    python tests/data/remedy_cases.py --case gemm_odd --out DIR
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bound_cases import autocast_step, launch_case, mlp, train_case
from more_cases import run_cli

Step = Callable[[], None]


def square_mean(out: torch.Tensor, _: torch.Tensor) -> torch.Tensor:
    return out.square().mean()


def zero_grad_case(dev: str, to_none: bool) -> Step:
    width, batch = (8192, 1024) if dev == "cuda" else (256, 32)
    model = mlp(width, 6).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(batch, width, device=dev)

    def step() -> None:
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda"):
            loss = model(x).square().mean()
        opt.zero_grad(set_to_none=to_none)
        loss.backward()
        opt.step()

    return step


def blocking(make: Callable[[str], Step]) -> Callable[[str], Step]:
    """``make``'s program with synchronous launches (the runtime reads the variable when CUDA starts,
    after this: the case is built before the first CUDA call)."""
    def case(dev: str) -> Step:
        os.environ["CUDA_LAUNCH_BLOCKING"] = "1"
        return make(dev)
    return case


def gemm_case(dev: str, width: int) -> Step:
    batch = 8192 if dev == "cuda" else 64
    model = mlp(width if dev == "cuda" else width // 16, 4).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(batch, model[0].in_features, device=dev)

    def step() -> None:
        autocast_step(dev, dev == "cuda", model, opt, square_mean, x, x)

    return step


def conv_case(dev: str, search: bool) -> Step:
    torch.backends.cudnn.benchmark = search
    layers: list[nn.Module] = [nn.Conv2d(3, 64, 3, padding=1), nn.ReLU()]
    for _ in range(4):
        layers += [nn.Conv2d(64, 64, 3, padding=1), nn.ReLU()]
    model = nn.Sequential(*layers).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    sizes = iter(range(96, 96 + 8 * 64, 8))  # a new image size every step: no algorithm cached
    batch = 32 if dev == "cuda" else 2

    def step() -> None:
        x = torch.randn(batch, 3, next(sizes), 64, device=dev)
        autocast_step(dev, False, model, opt, square_mean, x, x)

    return step


CASES: dict[str, Callable[[str], Step]] = {
    "zero_keep": lambda dev: zero_grad_case(dev, to_none=False),
    "zero_none": lambda dev: zero_grad_case(dev, to_none=True),
    "launch": launch_case,
    "launch_blocking": blocking(launch_case),
    "bf16": lambda dev: train_case(dev, 16384, amp=True),
    "bf16_blocking": blocking(lambda dev: train_case(dev, 16384, amp=True)),
    "gemm_odd": lambda dev: gemm_case(dev, 4100),
    "gemm_pad": lambda dev: gemm_case(dev, 4160),
    "conv_search": lambda dev: conv_case(dev, search=True),
    "conv_fixed": lambda dev: conv_case(dev, search=False),
}


def main() -> None:
    run_cli(CASES, __doc__ or "")


if __name__ == "__main__":
    main()
