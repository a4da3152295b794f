"""Real models (Hugging Face GPT-2 and BERT, torchvision ResNets) trained or served the way their
users write them, captured with the profiler schedule of ``bound_cases.py`` — not programs built
around one cause, so the answer is what an engineer reading the measured step would conclude.

What each case is, and what we expected before any tool looked at its trace:

* ``gpt2_fp32`` — GPT-2 (124 M) language-model training, batch 8 × 512 tokens, AdamW (PyTorch's
  default ``foreach``), FP32 with PyTorch's defaults (TF32 off for matmuls): the GEMMs run on CUDA
  cores. Compute-bound; first finding ``no-tensor-cores``.
* ``gpt2_bf16`` — the same step under bf16 autocast (the fix of ``gpt2_fp32``; the measured "after"
  of its ``no-tensor-cores`` gain). Compute-bound; no ``no-tensor-cores``.
* ``gpt2_bf16_pad`` — ``gpt2_bf16`` with the vocabulary padded from 50,257 to 50,304 (a multiple of
  64: the language-model head's GEMMs aligned; the fix of ``gpt2_bf16``'s
  ``gemm-dims-not-multiple-of-8``, captured 2026-11-28 in ``r3`` / ``r4``).
* ``gpt2_generate`` — greedy decoding of 32 tokens for one prompt (batch 1, bf16 weights) with
  ``model.generate``: per token ~12 layers of small kernels launched one by one. Host-bound (kernel
  launches; CUDA graphs / ``torch.compile`` is the change).
* ``resnet50_amp`` — torchvision ResNet-50 training, batch 128 of 224², bf16 autocast,
  ``cudnn.benchmark``, NCHW. Compute-bound; the convolutions run NCHW↔NHWC transposes
  (``channels-last``).
* ``resnet50_amp_cl`` — the same in channels-last (model and batch): the fix of ``resnet50_amp``.
* ``resnet18_loader`` — ResNet-18 training (bf16, channels-last, batch 64) fed by a DataLoader
  without workers whose Dataset decodes nothing but augments on the CPU (RandomResizedCrop, flip,
  normalise of 3 × 320² uint8 images, torchvision transforms v2). Input-bound.
* ``resnet18_loader8`` — the same with 8 workers (the fix of ``resnet18_loader``).
* ``bert_item`` — BERT-base sequence classification fine-tuning, batch 32 × 128 tokens, bf16
  autocast, fused AdamW, and the accuracy and loss logged with ``.item()`` every step.
  Compute-bound; a per-step sync that costs little.

    python tests/data/model_cases.py --case gpt2_fp32 --out DIR
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from more_cases import profile_steps

Step = Callable[[], None]


def gpt2_train(dev: str, amp: bool, vocab: int = 50257) -> Step:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=vocab)).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, 50257, (8, 512), device=dev)

    def step() -> None:
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=amp):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def gpt2_generate(dev: str) -> Step:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config()).to(dev, torch.bfloat16).eval()
    prompt = torch.randint(0, 50257, (1, 64), device=dev)

    def step() -> None:
        with torch.no_grad():
            model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=32,
                           min_new_tokens=32, do_sample=False, pad_token_id=0)

    return step


def resnet_train(dev: str, depth: int, batch: int, channels_last: bool) -> tuple[nn.Module, Callable[..., None]]:
    import torchvision

    torch.backends.cudnn.benchmark = True
    model = getattr(torchvision.models, f"resnet{depth}")().to(dev)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def train_on(x: torch.Tensor, y: torch.Tensor) -> None:
        x = x.to(dev, non_blocking=True).contiguous(memory_format=fmt)
        y = y.to(dev, non_blocking=True)
        with torch.autocast(dev, dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return model, train_on


def resnet50_amp(dev: str, channels_last: bool) -> Step:
    _, train_on = resnet_train(dev, 50, 128, channels_last)
    x = torch.randn(128, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (128,), device=dev)
    return lambda: train_on(x, y)


class AugmentedImages(torch.utils.data.Dataset[tuple[torch.Tensor, int]]):
    """Synthetic 320² uint8 images augmented as ImageNet training does (no file decoding)."""

    def __init__(self, n: int) -> None:
        from torchvision.transforms import v2

        self.n = n
        self.tf = v2.Compose([v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip(),
                              v2.ToDtype(torch.float32, scale=True),
                              v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        g = torch.Generator().manual_seed(i)
        img = torch.randint(0, 256, (3, 320, 320), dtype=torch.uint8, generator=g)
        return self.tf(img), i % 1000


def resnet18_loader(dev: str, workers: int) -> Step:
    _, train_on = resnet_train(dev, 18, 64, True)
    loader = torch.utils.data.DataLoader(AugmentedImages(64 * 40), batch_size=64, shuffle=True,
                                         num_workers=workers, pin_memory=True,
                                         persistent_workers=workers > 0)
    batches = iter(loader)

    def step() -> None:
        x, y = next(batches)
        train_on(x, y)

    return step


def bert_item(dev: str) -> Step:
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(num_labels=4)).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5, fused=dev == "cuda")
    ids = torch.randint(0, 30522, (32, 128), device=dev)
    labels = torch.randint(0, 4, (32,), device=dev)
    history: list[tuple[float, float]] = []

    def step() -> None:
        with torch.autocast(dev, dtype=torch.bfloat16):
            out = model(input_ids=ids, labels=labels)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        acc = (out.logits.argmax(-1) == labels).float().mean().item()
        history.append((out.loss.item(), acc))

    return step


CASES: dict[str, Callable[[str], Step]] = {
    "gpt2_fp32": lambda dev: gpt2_train(dev, amp=False),
    "gpt2_bf16": lambda dev: gpt2_train(dev, amp=True),
    "gpt2_bf16_pad": lambda dev: gpt2_train(dev, amp=True, vocab=50304),
    "gpt2_generate": gpt2_generate,
    "resnet50_amp": lambda dev: resnet50_amp(dev, channels_last=False),
    "resnet50_amp_cl": lambda dev: resnet50_amp(dev, channels_last=True),
    "resnet18_loader": lambda dev: resnet18_loader(dev, 0),
    "resnet18_loader8": lambda dev: resnet18_loader(dev, 8),
    "bert_item": bert_item,
}


def time_steps(step: Step, case: str, n: int, dev: str) -> None:
    """The unprofiled step: wall time of n steps (one sync at the end) after 5 warm-up steps."""
    for _ in range(5):
        step()
    if dev == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    if dev == "cuda":
        torch.cuda.synchronize()
    print(f"{case}: unprofiled mean step {(time.perf_counter() - t0) * 1e3 / n:.2f} ms over {n} steps")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=sorted(CASES), required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--time", type=int, default=0, metavar="N",
                    help="no profiler: time N steps after 5 warm-up steps and print the mean step")
    args = ap.parse_args()
    step = CASES[args.case](args.device)
    if args.time:
        time_steps(step, args.case, args.time, args.device)
        return
    took_ms = profile_steps(step, args.out / args.case, args.case, args.device, active=4)
    print(f"{args.case}: 9 steps in {took_ms:.1f} ms")


if __name__ == "__main__":
    main()
