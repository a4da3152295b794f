"""Allocator snapshots: the restricted unpickler refuses code, and the summary equals a plain replay."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from stepscope.analysis.allocator import curve_window, summarize
from stepscope.cli import cli, main
from stepscope.cli.memory_cmd import fit_site
from stepscope.errors import TraceFormatError
from stepscope.ingest.snapshot import read_snapshot
from tests.snapshot_builder import small, write  # two sites; the peak after the third alloc; one freed before it


class Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_with_a_malicious_reduce_is_refused_and_nothing_runs(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "pwned"
    bad = tmp_path / "evil.pickle"
    ok = {"action": "free_completed", "addr": 1, "size": 2, "time_us": 3, "frames": []}
    bad.write_bytes(pickle.dumps({"segments": [], "device_traces": [[ok, {"action": "alloc", "x": Evil(marker)}, ok]]}))
    for stream in (False, True):  # the restricted unpickler, and the streaming reader (large files) first
        with pytest.raises(TraceFormatError) as exc:
            read_snapshot(bad, stream=stream)
        msg = str(exc.value)
        assert str(bad) in msg and "\n" not in msg and "system" in msg and "refused" in msg
    with pytest.raises(SystemExit) as code:
        main(["memory", str(bad)])
    assert code.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("stepscope: error: ") and str(bad) in err
    assert not marker.exists()


@pytest.mark.parametrize("payload", [b"not a pickle", pickle.dumps([1, 2]), pickle.dumps({"segments": 3}),
                                     pickle.dumps({"segments": [{"blocks": 5}]})])
def test_what_is_not_a_snapshot_is_one_error_naming_the_file(tmp_path: Path, payload: bytes) -> None:
    p = tmp_path / "x.pickle"
    p.write_bytes(payload)
    with pytest.raises(TraceFormatError, match=r"x\.pickle") as exc:
        read_snapshot(p)
    assert "\n" not in str(exc.value)


def _replay(doc: dict[str, Any]) -> tuple[int, float, dict[int, tuple[int, str]]]:
    """Peak live bytes, its time (ms after the first entry) and the blocks live then (a plain loop)."""
    live: dict[int, tuple[int, str]] = {}
    total, peak, at, t0, snap = 0, -1, 0.0, doc["device_traces"][0][0]["time_us"], {}
    for e in doc["device_traces"][0]:
        if e["action"] == "alloc":
            f = e["frames"][-1]
            live[e["addr"]] = (e["size"], f"{f['filename']}:{f['line']} {f['name']}")
            total += e["size"]
        elif e["action"] == "free_completed":
            live.pop(e["addr"])
            total -= e["size"]
        else:
            continue
        if total > peak:
            peak, at, snap = total, (e["time_us"] - t0) / 1e3, dict(live)
    return peak, at, snap


def test_the_summary_of_a_handmade_snapshot_equals_a_replay(tmp_path: Path) -> None:
    doc = small()
    p = tmp_path / "snap.pickle"
    p.write_bytes(pickle.dumps(doc))
    s = summarize(read_snapshot(p))
    peak, at, alive = _replay(doc)
    h = s.history[0]
    assert (h.peak_live_bytes, h.peak_ms) == (peak, at) == (1000, 40.0)
    want: dict[str, int] = {}
    for n, site in alive.values():
        want[site] = want.get(site, 0) + n
    assert {r["site"]: r["bytes"] for r in h.live_at_peak} == want
    assert [r["site"] for r in s.sites] == ["/src/a.py:10 a", "/src/b.py:10 b"] and s.sites[0]["bytes"] == 800
    assert s.sites[0]["stack"].startswith("/venv/site-packages/torch/x.py:1 inner;/src/a.py:10 a")
    assert s.segments["reserved_bytes"] == 4096 and s.segments["blocks_by_state"]["active_allocated"] == 2
    assert s.actions == {"alloc": 4, "free_requested": 1, "free_completed": 2, "segment_alloc": 1}
    assert h.live_bytes.tolist() == [100, 400, 300, 1000, 700, 750]
    assert h.time_ms.tolist() == [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    out = CliRunner().invoke(cli, ["memory", str(p), "--json"])
    assert out.exit_code == 0 and json.loads(out.output)["history"][0]["peak_live_bytes"] == 1000


def test_a_window_of_the_curve_at_a_level_of_detail(tmp_path: Path) -> None:
    """Live bytes 100, 400, 300, 1000, 700, 750 at 10 ... 60 ms: the window 15-55 ms holds 4 points;
    in 2 buckets (15-35, 35-55 ms) the maxima are 400 (at 30 ms: the bucket's latest time) and 1000."""
    p = tmp_path / "snap.pickle"
    p.write_bytes(pickle.dumps(small()))
    snap = read_snapshot(p)
    w = curve_window(snap, 0, 15.0, 55.0, points=2)
    assert (w["points_in_window"], w["live_before_bytes"]) == (4, 100)
    assert (w["time_ms"], w["live_bytes"]) == ([30.0, 50.0], [400, 1000])
    whole = curve_window(snap, 0)
    assert whole["live_bytes"] == [100, 400, 300, 1000, 700, 750] and whole["time_ms"][-1] == 60.0
    assert curve_window(snap, 0, 15.0, 55.0, points=10)["live_bytes"] == [400, 300, 1000, 700]


def test_the_real_snapshot_matches_its_recorded_facts(shared_traces: Path) -> None:
    p = shared_traces / "decomfl" / "zo_fl_training_memory_snapshot" / "memory.pickle"
    if not p.exists():
        pytest.skip(f"{p} not found")
    s = summarize(read_snapshot(p))  # the facts of SOURCES.md §10
    seg = s.segments
    assert (seg["count"], seg["large"], seg["small"], seg["blocks"]) == (61, 44, 17, 468)
    assert (seg["reserved_bytes"], seg["allocated_bytes"], seg["requested_bytes"]) == \
        (1_897_922_560, 1_014_430_208, 1_011_485_828)
    assert seg["blocks_by_state"] == {"inactive": 71, "active_allocated": 397, "active_pending_free": 0}
    assert s.actions == {"alloc": 7946, "free_requested": 7549, "free_completed": 7549, "segment_alloc": 61}
    assert s.largest_alloc_bytes == 154_435_584
    h = s.history[0]
    assert h.peak_live_bytes == 1_783_664_516 and round(h.peak_ms, 1) == 1622.5 and round(h.duration_ms, 1) == 1850.4
    assert [r["site"].rsplit("\\", 1)[-1] for r in s.sites[:3]] == [
        "adam_forward.py:185 generate_perturbation_norm_paramwise",
        "adam_forward.py:187 generate_perturbation_norm_paramwise", "copy.py:153 deepcopy"]
    assert len(h.time_ms) <= 500 and int(h.live_bytes.max()) == h.peak_live_bytes


def _stack(*frames: tuple[str, str]) -> list[dict[str, Any]]:
    """Frames innermost first, as a snapshot records them."""
    return [{"filename": f, "line": i + 1, "name": n} for i, (f, n) in enumerate(frames)]


TRAIN = ("/src/train.py", "main")
KINDS = {  # the stacks of the allocations of one training step, by what they hold
    "parameters": _stack(("/venv/site-packages/torch/nn/modules/module.py", "_apply"),
                         ("/venv/site-packages/torch/nn/modules/module.py", "to"), TRAIN),
    "activations": _stack(("/venv/site-packages/torch/nn/modules/linear.py", "forward"),
                          ("/venv/site-packages/torch/nn/modules/module.py", "_call_impl"), TRAIN),
    "gradients": _stack(("/venv/site-packages/torch/autograd/graph.py", "_engine_run_backward"),
                        ("/venv/site-packages/torch/_tensor.py", "backward"), TRAIN),
    "optimizer_state": _stack(("/venv/site-packages/torch/optim/adam.py", "_init_group"),
                              ("/venv/site-packages/torch/optim/adam.py", "step"), TRAIN),
    "other": _stack(("/src/data.py", "load_batch"), TRAIN),
    "unknown": [],
}


def test_memory_at_the_peak_by_category(tmp_path: Path) -> None:
    """Each category allocates once; the activations are freed before the peak, the input batch after it."""
    sizes = {"parameters": 1000, "activations": 400, "gradients": 1000, "optimizer_state": 2000, "other": 64,
             "unknown": 8}
    ev: list[tuple[str, int, int, list[dict[str, Any]]]] = []
    for i, (kind, n) in enumerate(sizes.items()):
        ev.append(("alloc", 0x1000 * (i + 1), n, KINDS[kind]))
    ev.insert(3, ("free_completed", 0x2000, 400, KINDS["activations"]))  # freed before the gradients
    ev.append(("free_completed", 0x5000, 64, KINDS["other"]))  # after the peak
    trace = [{"action": a, "addr": addr, "size": n, "time_us": 1000 * (k + 1), "frames": f}
             for k, (a, addr, n, f) in enumerate(ev)]
    p = tmp_path / "snap.pickle"
    p.write_bytes(pickle.dumps({"segments": [], "device_traces": [trace]}))
    h = summarize(read_snapshot(p)).history[0]
    # by hand: +1000 params, +400 act, +1000 grads = 2400, -400 act = 2000, +2000 opt = 4000, +64 = 4064,
    # +8 = 4072 (the peak), -64 = 4008
    assert h.peak_live_bytes == 4072
    assert h.by_category == {"parameters": 1000, "gradients": 1000, "optimizer_state": 2000, "other": 64, "unknown": 8}
    out = CliRunner().invoke(cli, ["memory", str(p)])
    assert out.exit_code == 0 and "optimizer state 0.0" in out.output


def test_impossible_history_entries_are_repaired_and_counted() -> None:
    from stepscope.ingest.snapshot import repair_trace

    trace = {"time_us": np.array([-(2**63), 5, -1, 7, 2**60], np.int64), "size": np.array([-5, 3, 1, 1, 1], np.int64)}
    assert repair_trace(trace) == {"trace-time-invalid": 3, "trace-size-negative": 1}
    assert trace["time_us"].tolist() == [5, 5, 5, 7, 7]  # the first, as the first sound one; the others, as before
    assert trace["size"].tolist() == [0, 3, 1, 1, 1]
    sound = {"time_us": np.array([1, 2], np.int64), "size": np.array([4, 4], np.int64)}
    assert repair_trace(sound) == {} and sound["time_us"].tolist() == [1, 2]


def test_a_history_entry_with_an_impossible_time_is_said_and_keeps_the_summary(tmp_path: Path) -> None:
    doc = small()
    good = summarize(read_snapshot(write(tmp_path / "good.pickle", doc)))
    doc["device_traces"][0][3]["time_us"] = -(2**63)  # would overflow the time arithmetic
    path = write(tmp_path / "bad.pickle", doc)
    bad = summarize(read_snapshot(path))
    assert bad.repairs == {"trace-time-invalid": 1}
    (b,), (g,) = bad.history, good.history
    assert (b.peak_ms, b.duration_ms, b.peak_live_bytes) == (g.peak_ms, g.duration_ms, g.peak_live_bytes)
    out = subprocess.run([sys.executable, "-W", "error", "-m", "stepscope", "memory", str(path)], capture_output=True,
                         text=True, env={**os.environ, "COLUMNS": "200"}, timeout=120)
    assert out.returncode == 0 and out.stderr == ""  # no RuntimeWarning from numpy
    assert "repaired: 1 history entries (a time below 0" in out.stdout
    doc_json = CliRunner().invoke(cli, ["memory", str(path), "--json"])
    assert json.loads(doc_json.output)["repairs"] == {"trace-time-invalid": 1}


def test_the_terminal_says_the_blocks_in_words(tmp_path: Path) -> None:
    """It printed the Python dict "3 blocks {'inactive': 1, 'active_allocated': 2, ...}"."""
    p = tmp_path / "snap.pickle"
    p.write_bytes(pickle.dumps(small()))
    out = CliRunner().invoke(cli, ["memory", str(p)], terminal_width=200)
    assert out.exit_code == 0, out.output
    assert "3 blocks: 2 allocated, 1 free (cached by the allocator); largest allocation" in out.output
    assert "{" not in out.output and "active_allocated" not in out.output


def test_the_real_snapshot_in_words(shared_traces: Path) -> None:
    p = shared_traces / "decomfl" / "zo_fl_training_memory_snapshot" / "memory.pickle"
    if not p.exists():
        pytest.skip(f"{p} not found")
    out = CliRunner().invoke(cli, ["memory", str(p)], terminal_width=200)
    assert out.exit_code == 0, out.output
    assert "468 blocks: 397 allocated, 71 free (cached by the allocator)" in out.output
    assert "{'" not in out.output


def test_the_sites_keep_their_line_numbers_at_80_columns(shared_traces: Path) -> None:
    """Cut in the middle, adam_forward.py:185 and :187 read as two identical rows
    ("C:\\research\\DeComFL\\cezo_fl\\gradient_estimators\\adam_forw…"); the path's head gives way instead."""
    p = shared_traces / "decomfl" / "zo_fl_training_memory_snapshot" / "memory.pickle"
    if not p.exists():
        pytest.skip(f"{p} not found")
    out = CliRunner().invoke(cli, ["memory", str(p)], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    assert max(len(line) for line in out.output.splitlines()) <= 80
    for line in (185, 187):
        assert f"│ …adam_forward.py:{line} generate_perturbation_norm_paramwise │" in out.output
    assert "adam_forw…" not in out.output


def test_a_site_fits_by_its_path_giving_way() -> None:
    end = "adam_forward.py:185 generate_perturbation_norm_paramwise"
    site = f"C:\\research\\DeComFL\\cezo_fl\\gradient_estimators\\{end}"
    assert fit_site(site, 200) == site
    assert fit_site(site, 80) == f"…gradient_estimators\\{end}"
    assert fit_site(site, 60) == f"…{end}"
    assert fit_site(site, 20) == f"…{end}"  # still too long: the column folds it, nothing cut
    assert fit_site("/src/a.py:10 a", 8) == "…a.py:10 a" and fit_site("no line here", 4) == "no line here"
