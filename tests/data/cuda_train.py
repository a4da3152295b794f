"""A small CUDA training job with known, planted slowdowns — the ground truth for GPU fixtures.

Baseline (no flag): the DataLoader does heavy per-sample preprocessing in the main process
(num_workers=0), batches are copied from pageable memory, the loss is read with ``.item()`` every
step (a device sync), the model runs in FP32 in NCHW (no Tensor Cores), and the optimizer is a
non-foreach SGD (many small kernels). ``--fixed`` applies the standard remedies: num_workers,
pin_memory + non_blocking copies, logging every 10 steps, bf16 autocast, channels_last, fused SGD.
``--fix NAME[,NAME]`` applies only the named remedies (``workers``, ``pinned``, ``no_item``, ``amp``,
``channels_last``, ``fused``, ``graph``: forward and backward replayed as CUDA graphs through
``torch.cuda.make_graphed_callables``), one change per what-if pair.
The script knows nothing of stepscope; capture it with
``stepscope run --out DIR -- python tests/data/cuda_train.py [--fixed | --fix NAME]``.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Augmented(Dataset[tuple[torch.Tensor, int]]):
    """Synthetic images with a deliberately heavy per-sample CPU augmentation."""

    def __init__(self, n: int) -> None:
        rng = np.random.default_rng(0)
        self.images = rng.random((n, 3, 64, 64), dtype=np.float32)
        self.labels = rng.integers(0, 10, n)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        img = self.images[i]
        for _ in range(6):  # blur-like passes: ~1-2 ms of numpy per sample
            img = (img + np.roll(img, 1, axis=1) + np.roll(img, 1, axis=2)) / 3.0
        img = (img - img.mean()) / (img.std() + 1e-6)
        return torch.from_numpy(np.ascontiguousarray(img, dtype=np.float32)), int(self.labels[i])


def model() -> nn.Module:
    def block(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.MaxPool2d(2))
    return nn.Sequential(block(3, 64), block(64, 128), block(128, 256), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(256, 1000), nn.ReLU(), nn.Linear(1000, 10))


REMEDIES = ("workers", "pinned", "no_item", "amp", "channels_last", "fused", "graph")


def remedies_of(fixed: bool, fix: str) -> frozenset[str]:
    names = frozenset(n for n in fix.split(",") if n)
    unknown = names - set(REMEDIES)
    if unknown:
        raise SystemExit(f"unknown remedy: {', '.join(sorted(unknown))} (known: {', '.join(REMEDIES)})")
    return frozenset(REMEDIES[:-1]) if fixed else names


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--fixed", action="store_true", help="every remedy but graph")
    p.add_argument("--fix", default="", help="comma-separated remedies: " + ",".join(REMEDIES))
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--batch-size", type=int, default=64)
    args = p.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    fix = remedies_of(args.fixed, args.fix)
    pinned = "pinned" in fix
    data = Augmented(args.steps * args.batch_size)
    workers = "workers" in fix
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True, num_workers=8 if workers else 0,
                        pin_memory=pinned, persistent_workers=workers, drop_last=True)
    net: nn.Module = model().to(dev)
    memory_format = torch.channels_last if "channels_last" in fix else torch.contiguous_format
    net = net.to(memory_format=memory_format)
    fused = "fused" in fix
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, foreach=None if fused else False,
                          fused=True if fused else None)
    if "graph" in fix:  # static shapes: every batch is full (drop_last)
        sample = torch.randn(args.batch_size, 3, 64, 64, device=dev).to(memory_format=memory_format)
        net = torch.cuda.make_graphed_callables(net, (sample,))
    loss_fn = nn.CrossEntropyLoss()
    for step, (x, y) in enumerate(loader):
        x = x.to(dev, non_blocking=pinned).to(memory_format=memory_format)
        y = y.to(dev, non_blocking=pinned)
        opt.zero_grad(set_to_none=args.fixed)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled="amp" in fix):
            loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        if "no_item" not in fix or step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
