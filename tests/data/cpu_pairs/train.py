"""A small CPU training job whose flags each apply exactly one standard remedy: the before/after
pairs of the what-if validation (docs/whatif.md, tests/e2e/test_whatif_pairs.py).

Baseline (no flag): a synthetic Dataset whose ``__getitem__`` does about 0.2 ms of numpy work per
sample, loaded in the main process (``num_workers=0``); an MLP of narrow layers with LayerNorm
(many small parameters); Adam with a per-parameter for-loop (``foreach=False``); the loss read with
``.item()`` and printed every step. One intra-op thread, so the two-core machine is shared the
same way by every run.

    --workers N   DataLoader(num_workers=N)   (the batches are prepared by N worker processes)
    --no-item     no per-step ``loss.item()`` / print (the loss is printed once, at the end)
    --fused       Adam(fused=True): one fused kernel over every parameter instead of the for-loop

The script knows nothing of stepscope; capture it with
``stepscope run --out DIR --wait 1 --warmup 2 --active 6 -- python tests/data/cpu_pairs/train.py [FLAG]``.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Features(Dataset[tuple[torch.Tensor, int]]):
    """Synthetic feature vectors with a deliberately heavy per-sample CPU preprocessing."""

    def __init__(self, n: int, dim: int) -> None:
        rng = np.random.default_rng(0)
        self.x = rng.random((n, dim), dtype=np.float32)
        self.y = rng.integers(0, 10, n)

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        x = np.tile(self.x[i], (32, 1))  # a 32 x dim "signal", smoothed and pooled back to dim
        for _ in range(4):
            x = (x + np.roll(x, 1, axis=0) + np.roll(x, 1, axis=1)) / 3.0
        v = x.mean(axis=0)
        v = (v - v.mean()) / (v.std() + 1e-6)
        return torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)), int(self.y[i])


def model(dim: int, depth: int) -> nn.Module:
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(dim, dim), nn.LayerNorm(dim), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(dim, 10))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--no-item", action="store_true")
    p.add_argument("--fused", action="store_true")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--depth", type=int, default=12)
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = Features(args.steps * args.batch_size, args.dim)
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                        persistent_workers=args.workers > 0)
    net = model(args.dim, args.depth)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, foreach=False if not args.fused else None,
                           fused=True if args.fused else None)
    loss_fn = nn.CrossEntropyLoss()
    loss = torch.zeros(())
    for step, (x, y) in enumerate(loader):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        if not args.no_item:
            print(f"step {step} loss {loss.item():.4f}")
    print(f"done: final loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
