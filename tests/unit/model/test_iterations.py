"""Iterations of a trace without ProfilerStep, from a top-level range that repeats (hand-made traces)."""

from __future__ import annotations

from pathlib import Path

from stepscope.analysis.breakdown import compute_breakdown
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder

LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _loop(tmp_path: Path, name: str = "train_step", n: int = 4, names: list[str] | None = None) -> Trace:
    """Each 1,000 µs iteration: DataLoader 300 µs, then the marked range (700 µs) with one mm op
    that launches a 200 µs kernel 50 µs into the range."""
    b = TraceBuilder()
    for i in range(n):
        t = 1000 * i
        b.op(LOADER, ts=t, dur=300)
        b.op(names[i] if names else name, ts=t + 300, dur=700, cat="user_annotation")
        b.op("aten::mm", ts=t + 350, dur=100)
        b.launch_kernel("sgemm", launch_ts=t + 360, launch_dur=10, ts=t + 400, dur=200)
    return b.load(tmp_path)


def test_a_repeating_range_makes_the_steps(tmp_path: Path) -> None:
    tr = _loop(tmp_path)
    st = tr.steps
    assert st["step"].tolist() == [0, 1, 2, 3]
    # each iteration runs from its range's start to the next range's start (the loop's period);
    # the last ends with its range
    assert st["start_ns"].tolist() == [300_000, 1_300_000, 2_300_000, 3_300_000]
    assert st["host_end_ns"].tolist() == [1_300_000, 2_300_000, 3_300_000, 4_000_000]
    diag = [d for d in tr.diagnostics if d.name == "steps-from-ranges"]
    assert len(diag) == 1 and diag[0].severity == "info" and "'train_step'" in diag[0].example


def test_breakdown_counts_the_loader_inside_the_iteration_and_not_the_marker(tmp_path: Path) -> None:
    bd = compute_breakdown(_loop(tmp_path), 0)
    cols = bd.columns()
    # steps 0-2 are 1,000 µs: kernel 400-600 (200), DataLoader 300 (the next iteration's fetch),
    # launch 360-370 (runtime 10), the mm op 350-450 less what the launch and the kernel (400-450)
    # claim first = 40 CPU exec; the marker range itself is not CPU work: the other 450 µs are other
    want = {"kernel": 200_000, "dataloader": 300_000, "cpu_exec": 40_000, "runtime": 10_000, "other": 450_000}
    for cat, ns in want.items():
        assert cols[f"{cat}_ns"][:3].tolist() == [ns] * 3, cat
    assert cols["step"].tolist() == [0, 1, 2, 3]


def test_numbered_ranges_keep_their_numbers(tmp_path: Path) -> None:
    tr = _loop(tmp_path, names=["iteration 7", "iteration 8", "iteration 9"], n=3)
    assert tr.steps["step"].tolist() == [7, 8, 9]


def test_numbers_that_do_not_say_step_are_not_one_family(tmp_path: Path) -> None:
    # "layer1", "layer2", "layer3": three different ranges, none repeats, so no loop
    tr = _loop(tmp_path, names=["layer1", "layer2", "layer3"], n=3)
    assert len(tr.steps) == 0


def test_too_few_or_too_sparse_ranges_leave_the_whole_trace(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert len(_loop(tmp_path / "a", n=2).steps) == 0  # two ranges are not a loop
    b = TraceBuilder()
    for i in range(3):  # three 10 µs marks in a 10 ms trace
        b.op("mark", ts=1000 * i, dur=10, cat="user_annotation")
    b.op("aten::mm", ts=0, dur=10_000, tid=200)  # another thread: the marks stay top-level
    assert len(b.load(tmp_path / "b").steps) == 0


def test_nested_ranges_are_not_iterations(tmp_path: Path) -> None:
    # "fwd" repeats 3 times but inside one outer range: only top-level ranges mark iterations
    b = TraceBuilder()
    b.op("inference", ts=0, dur=3000, cat="user_annotation")
    for i in range(3):
        b.op("fwd", ts=1000 * i, dur=900, cat="user_annotation")
    assert len(b.load(tmp_path).steps) == 0


def test_profiler_steps_win_over_ranges(tmp_path: Path) -> None:
    b = TraceBuilder()
    for i in range(3):
        b.step(5 + i, ts=1000 * i, dur=1000)
        b.op("train_step", ts=1000 * i + 10, dur=900, cat="user_annotation")
    tr = b.load(tmp_path)
    assert tr.steps["step"].tolist() == [5, 6, 7]
    assert not [d for d in tr.diagnostics if d.name == "steps-from-ranges"]
