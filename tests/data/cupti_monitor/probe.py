"""Capture a small MLP with PyTorch's CUPTI-monitor profiler backend into $OUT (README.md here)."""

import gzip
import os
import shutil
import sys

import torch
from torch import nn

print("torch", torch.__version__, torch.cuda.get_device_name())
try:
    cfg = torch._C._profiler._ExperimentalConfig(custom_profiler_config="cupti_monitor")
except Exception as e:  # an older PyTorch: no such backend
    print("no custom_profiler_config:", e)
    sys.exit(0)
net = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(256, 1024, device="cuda")
acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
with torch.profiler.profile(activities=acts, record_shapes=True, experimental_config=cfg) as prof:
    for _ in range(4):
        with torch.profiler.record_function("ProfilerStep#x"):
            opt.zero_grad()
            net(x).sum().backward()
            opt.step()
        prof.step()
    torch.cuda.synchronize()
out = os.environ["OUT"]
for ext in ("json", "pftrace"):
    try:
        p = f"/tmp/cm.{ext}"
        prof.export_chrome_trace(p)
        with open(p, "rb") as f, gzip.open(f"{out}/cupti_monitor.{ext}.gz", "wb") as g:
            shutil.copyfileobj(f, g)
        print("exported", ext, os.path.getsize(p))
    except Exception as e:
        print("export", ext, "failed:", type(e).__name__, e)
