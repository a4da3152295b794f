"""Table-shaped results convert to Arrow / pandas / polars with the same columns and values."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.kernels import compute_kernels
from tests.builders import TraceBuilder


def kernels(tmp_path: Path):  # type: ignore[no-untyped-def]
    b = TraceBuilder()
    b.op("aten::mm", ts=0, dur=10)
    b.launch_kernel("kA", launch_ts=1, launch_dur=1, ts=20, dur=30)
    b.launch_kernel("kB", launch_ts=3, launch_dur=1, ts=60, dur=10)
    return compute_kernels(b.load(tmp_path), 0).by_name


def test_arrow(tmp_path: Path) -> None:
    t = kernels(tmp_path).to_frame("arrow")
    assert t.column("name").to_pylist() == ["kA", "kB"]
    assert t.column("total_ns").to_pylist() == [30_000, 10_000]


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_dataframes(tmp_path: Path, backend: str) -> None:
    pytest.importorskip(backend)
    df = kernels(tmp_path).to_frame(backend)  # type: ignore[arg-type]
    assert list(df["name"]) == ["kA", "kB"]
    assert list(df["calls"]) == [1, 1]


def test_unknown_backend(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown frame backend"):
        kernels(tmp_path).to_frame("excel")  # type: ignore[arg-type]
