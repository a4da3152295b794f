"""Device peaks: dense peak FLOP/s per element type and memory bandwidth of the GPUs and NPUs a
trace may name, with the vendor page each row was read from (docs/roofline.md lists them).

Peaks are *dense* (no 2:4 sparsity) and, per element type, the fastest path a matrix op can take:
tensor / matrix cores where the part has them for that type, the vector units otherwise (fp32 on
NVIDIA parts, which run fp32 GEMMs on CUDA cores unless TF32 is allowed). A trace's device is
matched by its name (``deviceProperties`` name, as ``RankInfo.devices`` keeps it) and, where one
name covers two memory sizes with different bandwidths (A100 40 / 80 GB), by its recorded total
memory. A name that matches no row, or a row that needs the memory size when the trace has none,
matches nothing: the roofline then says the device is unknown and gives no bound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stepscope.model.trace import DeviceInfo

#: element types the peaks are given for
DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")

#: PyTorch's "Input type" strings -> the element type of the peak table
TORCH_DTYPES = {"double": "fp64", "float": "fp32", "c10::Half": "fp16", "c10::BFloat16": "bf16",
                "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
                "c10::Float8_e5m2fnuz": "fp8", "signed char": "int8", "unsigned char": "int8"}

_NV = "https://www.nvidia.com/"


@dataclass(frozen=True)
class DevicePeak:
    """One device's dense peaks (TFLOP/s per element type, None where the vendor gives none) and
    HBM / DRAM bandwidth."""

    name: str
    pattern: str  # regular expression searched in the trace's device name (case-insensitive)
    tflops: tuple[float | None, ...]  # in DTYPES order
    bandwidth_tbps: float  # TB/s (10^12 bytes / s)
    source: str  # the vendor page the numbers were read from
    min_memory_gib: float = 0.0  # matched only when the recorded total memory is at least this
    max_memory_gib: float = float("inf")  # ... and at most this (None recorded: no match when bounded)
    note: str = ""

    def peak_tflops(self, dtype: str) -> float | None:
        """Dense peak TFLOP/s for an element type of :data:`DTYPES`, None where not given."""
        return self.tflops[DTYPES.index(dtype)] if dtype in DTYPES else None

    def matches(self, device_name: str, memory_bytes: int | None) -> bool:
        if not re.search(self.pattern, device_name, re.IGNORECASE):
            return False
        if self.min_memory_gib == 0.0 and self.max_memory_gib == float("inf"):
            return True
        if memory_bytes is None or memory_bytes <= 0:
            return False
        gib = memory_bytes / 2**30
        return self.min_memory_gib <= gib <= self.max_memory_gib


def _p(fp64: float | None, fp32: float | None, tf32: float | None, fp16: float | None, bf16: float | None,
       fp8: float | None, int8: float | None) -> tuple[float | None, ...]:
    return fp64, fp32, tf32, fp16, bf16, fp8, int8


_V100 = _NV + "content/dam/en-zz/Solutions/Data-Center/tesla-v100/pdf/tesla-v100-datasheet-letter-fnl-web.pdf"
_A100 = _NV + "content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
_H100 = "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet"
_MI300 = "https://www.amd.com/en/products/accelerators/instinct/mi300/"

#: first match wins: more specific names first (PCIe before the plain name, MI325X before MI300X ...)
PEAKS: tuple[DevicePeak, ...] = (
    DevicePeak("V100S PCIe", r"V100S", _p(8.2, 16.4, None, 130.0, None, None, None), 1.134, _V100),
    DevicePeak("V100 PCIe", r"V100.*PCIE", _p(7.0, 14.0, None, 112.0, None, None, None), 0.9, _V100),
    DevicePeak("V100 SXM2", r"V100", _p(7.8, 15.7, None, 125.0, None, None, None), 0.9, _V100,
               note="SXM2 figures; the DGX Station's V100-DGXS runs at the same clocks"),
    DevicePeak("A100 PCIe 40GB", r"A100.*PCIE", _p(19.5, 19.5, 156.0, 312.0, 312.0, None, 624.0), 1.555, _A100,
               max_memory_gib=48.0),
    DevicePeak("A100 PCIe 80GB", r"A100.*PCIE", _p(19.5, 19.5, 156.0, 312.0, 312.0, None, 624.0), 1.935, _A100,
               min_memory_gib=48.0),
    DevicePeak("A100 SXM4 40GB", r"A100", _p(19.5, 19.5, 156.0, 312.0, 312.0, None, 624.0), 1.555, _A100,
               max_memory_gib=48.0, note="A100-PG509-200 (SXM4 40 GB board) included"),
    DevicePeak("A100 SXM4 80GB", r"A100", _p(19.5, 19.5, 156.0, 312.0, 312.0, None, 624.0), 2.039, _A100,
               min_memory_gib=48.0),
    DevicePeak("H100 PCIe", r"H100.*PCIE", _p(51.0, 51.0, 378.0, 756.5, 756.5, 1513.0, 1513.0), 2.0, _H100),
    DevicePeak("H100 NVL", r"H100.*NVL", _p(60.0, 60.0, 417.5, 835.5, 835.5, 1670.5, 1670.5), 3.9, _H100),
    DevicePeak("H100 SXM", r"H100", _p(67.0, 67.0, 494.5, 989.5, 989.5, 1979.0, 1979.0), 3.35, _H100,
               note="'NVIDIA H100 80GB HBM3' is the SXM5 part"),
    DevicePeak("H200 SXM", r"H200", _p(67.0, 67.0, 494.5, 989.5, 989.5, 1979.0, 1979.0), 4.8,
               _NV + "en-us/data-center/h200/"),
    DevicePeak("B200 (HGX, 1000 W)", r"B200", _p(40.0, 80.0, 1100.0, 2250.0, 2250.0, 4500.0, 4500.0), 8.0,
               "https://resources.nvidia.com/en-us-blackwell-architecture",
               note="per-GPU HGX B200 figures of NVIDIA's Blackwell technical brief"),
    DevicePeak("L40S", r"L40S", _p(None, 91.6, 183.0, 362.05, 362.05, 733.0, 733.0), 0.864,
               _NV + "en-us/data-center/l40s/"),
    DevicePeak("L4", r"\bL4\b", _p(None, 30.3, 60.0, 121.0, 121.0, 242.5, 242.5), 0.3, _NV + "en-us/data-center/l4/"),
    DevicePeak("MI250X", r"MI250X(?!/)", _p(95.7, 95.7, None, 383.0, 383.0, None, 383.0), 3.2768,
               "https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html"),
    DevicePeak("MI250", r"^(?!.*MI250X/).*MI250(?!X)", _p(90.5, 90.5, None, 362.1, 362.1, None, 362.1), 3.2768,
               "https://www.amd.com/en/products/accelerators/instinct/mi200/mi250.html"),
    DevicePeak("MI325X", r"MI325X", _p(163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9), 6.0,
               _MI300 + "mi325x.html"),
    DevicePeak("MI300X", r"MI300X", _p(163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9), 5.3,
               _MI300 + "mi300x.html", note="an SR-IOV virtual function ('MI300X VF') is the same part"),
    DevicePeak("MI355X", r"MI355X", _p(78.6, 157.3, None, 2516.6, 2516.6, 5033.2, 5033.2), 8.0,
               "https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html"),
    DevicePeak("Ascend 910B", r"910B", _p(None, None, None, 313.0, 313.0, None, 626.0), 1.6,
               "https://www.hiascend.com/hardware/product",
               note="Huawei publishes no per-chip datasheet: the 910B3 figures most often quoted; approximate"),
)


def match_device(device_name: str, memory_bytes: int | None = None) -> DevicePeak | None:
    """The peak row of a device, by its name (and recorded memory where the name is not enough);
    None when no row matches — never a guess."""
    return next((p for p in PEAKS if p.matches(device_name, memory_bytes)), None)


def device_peak(device: DeviceInfo | None) -> DevicePeak | None:
    """The peak row of a rank's device (:func:`match_device` on its name and memory); None without one."""
    return match_device(device.name, device.total_memory_bytes) if device is not None else None


def element_type(torch_type: str) -> str | None:
    """The peak table's element type of a PyTorch "Input type" string, None when it has none."""
    return TORCH_DTYPES.get(torch_type)


def amp_speedup(peak: DevicePeak | None, from_dtype: str) -> float | None:
    """How much faster mixed precision's Tensor Cores are than ``from_dtype`` math on this device:
    its dense bf16 peak (fp16 where it has no bf16) over ``from_dtype``'s; None when the device or
    either peak is unknown. H200: fp32 (CUDA cores) 14.8x, tf32 2x; V100: fp32 8x."""
    if peak is None:
        return None
    half = peak.peak_tflops("bf16") or peak.peak_tflops("fp16")
    base = peak.peak_tflops(from_dtype)
    return half / base if half and base else None
