"""Blocks per SM and estimated achieved occupancy per kernel, from the launch shape and the device.

Kineto records ``blocks per SM`` and ``est. achieved occupancy %`` for CUDA kernels; many traces
(older Kineto, AMD, exports) lack them. Then we compute them the way Kineto does (CUDA occupancy
calculator model), from grid, block, registers per thread, shared memory per block and the
``deviceProperties`` limits:

* ``blocks_per_sm = grid_x·grid_y·grid_z / sm_count``
* ``warps = ceil(threads_per_block / warp_size)``
* resident-block limits per SM:

  - by warps: ``(max_threads_per_sm / warp_size) // warps``
  - by registers: ``regs_per_warp = ceil(regs·warp_size / 256)·256`` (allocation unit 256);
    ``((regs_per_sm / 4) // regs_per_warp · 4) // warps`` (4 SM sub-partitions)
  - by shared memory: ``smem = shmem + reserved`` (1 KiB reserved per block from sm_80 on),
    rounded up to 128 B; ``shared_mem_per_sm // smem``; 0 when ``smem`` exceeds the opt-in limit
  - by the architecture's resident-block cap (:data:`MAX_BLOCKS_PER_SM`)

* ``active = min(limits)``; ``occupancy % = min(active, blocks_per_sm) · threads / max_threads_per_sm · 100``

Kineto rounds the result to a whole percent; we keep the fraction. One deliberate difference:
Kineto asks the calculator with the *default* 48 KiB per-block shared memory limit, so it reports 0 %
for every kernel that opted in to more (many cuDNN/CUTLASS/flash kernels); we use the opt-in limit,
because such a kernel did run. Tested against the traces that carry the values (V100, A100, H100).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.model.trace import DeviceInfo, Trace

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: Resident blocks per SM by compute capability (CUDA programming guide, "Compute Capabilities").
MAX_BLOCKS_PER_SM: dict[tuple[int, int], int] = {
    (6, 0): 32, (6, 1): 32, (6, 2): 32, (7, 0): 32, (7, 2): 32, (7, 5): 16, (8, 0): 32, (8, 6): 16,
    (8, 7): 16, (8, 9): 24, (9, 0): 32, (10, 0): 32, (10, 3): 32, (12, 0): 32, (12, 1): 32,
}
REG_ALLOC_UNIT = 256
SMEM_ALLOC_UNIT = 128
SUB_PARTITIONS = 4


@dataclass(frozen=True)
class LaunchShape:
    """Per-kernel launch parameters, as columns (one entry per kernel)."""

    grid_blocks: I64
    block_threads: I64
    regs_per_thread: I64  # -1 unknown
    shmem_bytes: I64  # -1 unknown

    @classmethod
    def of_rows(cls, trace: Trace, rows: I64) -> LaunchShape:
        ev = trace.events
        grid = ev["grid_x"][rows].astype(np.int64) * ev["grid_y"][rows] * ev["grid_z"][rows]
        block = ev["block_x"][rows].astype(np.int64) * ev["block_y"][rows] * ev["block_z"][rows]
        return cls(grid, block, ev["regs"][rows].astype(np.int64), ev["shmem_bytes"][rows].astype(np.int64))


def can_estimate(dev: DeviceInfo | None) -> bool:
    """Whether the device carries the limits the estimate needs (NVIDIA with full properties)."""
    return (dev is not None and dev.vendor == "nvidia" and bool(dev.sm_count)
            and bool(dev.max_threads_per_sm) and dev.regs_per_sm is not None
            and dev.shared_mem_per_sm is not None and dev.compute_major is not None)


def blocks_per_sm(shape: LaunchShape, dev: DeviceInfo | None) -> F64:
    """Grid blocks per SM (NaN when the SM count or the grid is unknown)."""
    if dev is None or not dev.sm_count:
        return np.full(len(shape.grid_blocks), np.nan)
    out = shape.grid_blocks / float(dev.sm_count)
    return np.where(shape.grid_blocks > 0, out, np.nan)


def active_blocks(shape: LaunchShape, dev: DeviceInfo) -> I64:
    """Resident blocks per SM allowed by warps, registers, shared memory and the architecture cap."""
    ws = dev.warp_size or 32
    warps = np.maximum(-(-shape.block_threads // ws), 1)
    by_warps = (int(dev.max_threads_per_sm or 0) // ws) // warps
    regs = np.maximum(shape.regs_per_thread, 0)
    per_warp = np.maximum(-(-(regs * ws) // REG_ALLOC_UNIT) * REG_ALLOC_UNIT, 1)
    sub = (int(dev.regs_per_sm or 0) // SUB_PARTITIONS) // per_warp * SUB_PARTITIONS
    by_regs = np.where(regs > 0, sub // warps, np.iinfo(np.int64).max)
    reserved = 1024 if (dev.compute_major or 0) >= 8 else 0
    smem = np.maximum(shape.shmem_bytes, 0) + reserved
    rounded = np.maximum(-(-smem // SMEM_ALLOC_UNIT) * SMEM_ALLOC_UNIT, 1)
    by_smem = np.where(smem > 0, int(dev.shared_mem_per_sm or 0) // rounded, np.iinfo(np.int64).max)
    limit = dev.shared_mem_per_block_optin or dev.shared_mem_per_block or dev.shared_mem_per_sm or 0
    by_smem = np.where(smem - reserved > limit, 0, by_smem)
    cap = MAX_BLOCKS_PER_SM.get((dev.compute_major or 0, dev.compute_minor or 0), 32)
    act = np.minimum(np.minimum(by_warps, by_regs), np.minimum(by_smem, cap))
    too_big = shape.block_threads > (dev.max_threads_per_block or np.iinfo(np.int64).max)
    return np.where(too_big, 0, act).astype(np.int64)


def occupancy_pct(shape: LaunchShape, dev: DeviceInfo | None) -> F64:
    """Estimated achieved occupancy per kernel, percent (NaN when the device lacks the limits)."""
    n = len(shape.grid_blocks)
    if not can_estimate(dev):
        return np.full(n, np.nan)
    assert dev is not None  # for the type checker; can_estimate checked it
    act = active_blocks(shape, dev)
    bps = blocks_per_sm(shape, dev)
    occ = np.minimum(act, bps) * shape.block_threads / float(dev.max_threads_per_sm or 1) * 100.0
    known = (shape.grid_blocks > 0) & (shape.block_threads > 0)
    return np.where(known, occ, np.nan)


@dataclass(frozen=True)
class KernelOccupancy:
    """Per-kernel blocks per SM and occupancy, recorded where the trace has them, computed otherwise."""

    blocks_per_sm: F64
    occupancy_pct: F64
    computed: npt.NDArray[np.bool_]  # True where the value was computed here, not read from the trace


def kernel_occupancy(trace: Trace, rows: I64, dev: DeviceInfo | None) -> KernelOccupancy:
    """Blocks per SM and occupancy of the given kernel rows (recorded first, else estimated)."""
    ev = trace.events
    rec_bps = ev["blocks_per_sm"][rows].astype(np.float64)
    rec_occ = ev["occupancy_pct"][rows].astype(np.float64)
    missing = np.isnan(rec_occ) | np.isnan(rec_bps)
    if not missing.any():
        return KernelOccupancy(rec_bps, rec_occ, np.zeros(len(rows), bool))
    shape = LaunchShape.of_rows(trace, rows)
    bps = np.where(np.isnan(rec_bps), blocks_per_sm(shape, dev), rec_bps)
    occ = np.where(np.isnan(rec_occ), occupancy_pct(shape, dev), rec_occ)
    return KernelOccupancy(bps, occ, missing & ~np.isnan(occ))
