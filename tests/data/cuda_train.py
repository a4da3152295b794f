"""A small CUDA training job with known, planted slowdowns — the ground truth for GPU fixtures.

Baseline (no flag): the DataLoader does heavy per-sample preprocessing in the main process
(num_workers=0), batches are copied from pageable memory, the loss is read with ``.item()`` every
step (a device sync), the model runs in FP32 in NCHW (no Tensor Cores), and the optimizer is a
non-foreach SGD (many small kernels). ``--fixed`` applies the standard remedies: num_workers,
pin_memory + non_blocking copies, logging every 10 steps, bf16 autocast, channels_last, fused SGD.
The script knows nothing of stepscope; capture it with
``stepscope run --out DIR -- python tests/data/cuda_train.py [--fixed]``.
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


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--fixed", action="store_true")
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--batch-size", type=int, default=64)
    args = p.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    fixed = args.fixed
    data = Augmented(args.steps * args.batch_size)
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True, num_workers=8 if fixed else 0,
                        pin_memory=fixed, persistent_workers=fixed)
    net = model().to(dev)
    if fixed:
        net = net.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, foreach=False if not fixed else None,
                          fused=True if fixed else None)
    loss_fn = nn.CrossEntropyLoss()
    for step, (x, y) in enumerate(loader):
        x = x.to(dev, non_blocking=fixed)
        y = y.to(dev, non_blocking=fixed)
        if fixed:
            x = x.to(memory_format=torch.channels_last)
        opt.zero_grad(set_to_none=fixed)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=fixed):
            loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        if not fixed or step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
