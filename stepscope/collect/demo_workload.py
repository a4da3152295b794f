"""The demo's training job: a small CNN fed by a deliberately heavy per-sample input pipeline.

Each sample is a synthetic 96×96 RGB image made from its index (so runs are reproducible and
need no download) that goes through CPU-heavy augmentation in numpy: crop, repeated box blurs,
colour jitter, down-sampling and normalisation, a few milliseconds per sample. With
``num_workers=0`` that work runs in the training process between steps, so the model waits for
data; with DataLoader workers it overlaps the training steps.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.collect.profiler import ProfileOptions, import_torch, profile
from stepscope.collect.step_timer import StepRecord, StepTimer

RAW_SIZE = 96  # side of the synthetic source image
OUT_SIZE = 32  # side of the image the model sees
CROP_SIZE = 88  # random crop taken from it
BLUR_PASSES = 12  # box-blur passes per sample: the knob for how heavy preprocessing is
_OFFSETS = [(dy, dx) for dy in range(3) for dx in range(3)][1:]
NUM_CLASSES = 10
READ_LATENCY_S = 0.001  # simulated storage latency per sample read (a sleep, not CPU work)


@dataclass(frozen=True)
class DemoConfig:
    """One training run of the demo."""

    num_workers: int = 0
    persistent_workers: bool = False
    batch_size: int = 32
    steps: int = 24  # optimizer steps in the run
    seed: int = 0
    options: ProfileOptions = field(default_factory=lambda: ProfileOptions(skip_first=8, wait=2, warmup=1, active=3))

    @property
    def label(self) -> str:
        extra = ", persistent_workers=True" if self.persistent_workers else ""
        return f"num_workers={self.num_workers}{extra}"


def augment(index: int, seed: int = 0) -> tuple[npt.NDArray[np.float32], int]:
    """Make sample ``index`` and run the heavy augmentation; returns (CHW float32 image, label).

    Plain slicing arithmetic, no Python helper calls in the inner loop, so a ``with_stack``
    trace of it stays small.
    """
    time.sleep(READ_LATENCY_S)  # "read" the file: stands for local-disk or network-storage latency
    rng = np.random.default_rng((seed, index))
    raw = rng.integers(0, 256, size=(RAW_SIZE, RAW_SIZE, 3), dtype=np.uint8)
    top, left = rng.integers(0, RAW_SIZE - CROP_SIZE + 1, size=2)
    img = raw[top : top + CROP_SIZE, left : left + CROP_SIZE].astype(np.float32) / 255.0
    for _ in range(BLUR_PASSES):  # 3x3 box blur on the valid region: the image shrinks by 2
        n = img.shape[0] - 2
        acc = img[0:n, 0:n].copy()
        for dy, dx in _OFFSETS:
            acc += img[dy : dy + n, dx : dx + n]
        img = acc / 9.0
    img = img * rng.uniform(0.8, 1.2, size=3).astype(np.float32) + np.float32(rng.uniform(-0.1, 0.1))
    idx = (np.arange(OUT_SIZE) * (img.shape[0] / OUT_SIZE)).astype(np.int64)
    img = img[idx][:, idx]
    img = (img - img.mean(axis=(0, 1))) / (img.std(axis=(0, 1)) + np.float32(1e-5))
    return np.ascontiguousarray(img.transpose(2, 0, 1), dtype=np.float32), int(index % NUM_CLASSES)


class AugmentedImages:
    """A map-style dataset of :func:`augment` samples as torch tensors.

    A plain class (not a ``torch.utils.data.Dataset`` subclass) so that this module imports
    without torch and the dataset pickles into spawned DataLoader workers.
    """

    def __init__(self, length: int, seed: int = 0) -> None:
        self.length = length
        self.seed = seed

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[Any, int]:
        torch = import_torch()
        img, label = augment(index, self.seed)
        return torch.from_numpy(img), label


def make_model() -> Any:
    """A small CNN for 3×32×32 inputs."""
    nn = import_torch().nn
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, NUM_CLASSES),
    )


def make_loader(cfg: DemoConfig) -> Any:
    """The DataLoader of the run, with the run's worker settings."""
    torch = import_torch()
    dataset = AugmentedImages(cfg.batch_size * cfg.steps, cfg.seed)
    return torch.utils.data.DataLoader(
        dataset, batch_size=cfg.batch_size, shuffle=True, num_workers=cfg.num_workers,
        persistent_workers=cfg.persistent_workers and cfg.num_workers > 0,
        generator=torch.Generator().manual_seed(cfg.seed),
    )


def train(cfg: DemoConfig, out_dir: str | os.PathLike[str],
          log: Callable[[str], None] | None = None) -> tuple[StepRecord, ...]:
    """Train ``cfg.steps`` steps under the profiler; traces go to ``out_dir``.

    Returns the :class:`StepTimer` records of every step.
    """
    torch = import_torch()
    torch.manual_seed(cfg.seed)
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    timer = StepTimer(log_every=8, batch_size=cfg.batch_size, log=log, unit="images")
    with profile(Path(out_dir), options=cfg.options, worker_name="demo") as prof:
        for images, labels in timer.wrap(make_loader(cfg)):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(images), labels)
            loss.backward()
            opt.step()
            prof.step()
            timer.step()
    return timer.records
