"""Occupancy estimate from launch shape and device limits (hand-computed cases)."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.analysis.occupancy import LaunchShape, active_blocks, blocks_per_sm, occupancy_pct
from stepscope.model.trace import DeviceInfo

V100 = DeviceInfo(0, "V100", compute_major=7, compute_minor=0, sm_count=80, max_threads_per_block=1024,
                  max_threads_per_sm=2048, regs_per_block=65536, regs_per_sm=65536, warp_size=32,
                  shared_mem_per_block=49152, shared_mem_per_sm=98304, shared_mem_per_block_optin=98304)
A100 = DeviceInfo(0, "A100", compute_major=8, compute_minor=0, sm_count=108, max_threads_per_block=1024,
                  max_threads_per_sm=2048, regs_per_block=65536, regs_per_sm=65536, warp_size=32,
                  shared_mem_per_block=49152, shared_mem_per_sm=167936, shared_mem_per_block_optin=166912)


def shape(grid: int, block: int, regs: int, shmem: int) -> LaunchShape:
    return LaunchShape(np.array([grid]), np.array([block]), np.array([regs]), np.array([shmem]))


def test_warp_limited() -> None:
    """256 threads = 8 warps; 64 warps/SM → 8 blocks; 32 regs don't bind (8 per sub-partition·4 /8 = 8)."""
    s = shape(8000, 256, 32, 0)
    assert active_blocks(s, V100).tolist() == [8]
    assert occupancy_pct(s, V100)[0] == pytest.approx(100.0)


def test_register_limited() -> None:
    """128 regs × 32 = 4096 per warp; 16384 per sub-partition → 4 warps ×4 = 16 warps → 2 blocks of 8 warps."""
    s = shape(8000, 256, 128, 0)
    assert active_blocks(s, V100).tolist() == [2]
    assert occupancy_pct(s, V100)[0] == pytest.approx(25.0)


def test_shared_memory_limited_with_reserved_block_memory() -> None:
    """A100: 40 KiB + 1 KiB reserved per block → 167936 // 41984 = 4 blocks of 128 threads = 25 %."""
    s = shape(10000, 128, 16, 40 * 1024)
    assert active_blocks(s, A100).tolist() == [4]
    assert occupancy_pct(s, A100)[0] == pytest.approx(25.0)


def test_small_grid_is_limited_by_blocks_per_sm() -> None:
    """40 blocks on 80 SMs = 0.5 blocks/SM → 0.5·256/2048 = 6.25 %."""
    s = shape(40, 256, 32, 0)
    assert blocks_per_sm(s, V100)[0] == pytest.approx(0.5)
    assert occupancy_pct(s, V100)[0] == pytest.approx(6.25)


def test_unknown_device_gives_nan() -> None:
    assert np.isnan(occupancy_pct(shape(10, 10, 10, 0), None)[0])
