"""CPU programs with one deliberate bottleneck each (``tests/data/cpu_cases``, README there): the verdict
and the first finding are what the program's own timings (``timing.json``: its parts timed with
``time.perf_counter`` beside the profile) and the bottleneck it was written with say."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from stepscope import load
from stepscope.advisor.engine import Advice, run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.report import texts

CASES = Path(__file__).resolve().parents[1] / "data" / "cpu_cases"
DDP = ("ddp_gloo", "ddp_gloo_run2", "ddp_gloo_run3")


@cache
def advice(case: str) -> Advice:
    return run_advisor(analyze(load(CASES / case)))


def piece_ms(case: str, name: str) -> float:
    timing = json.loads((CASES / case / "timing.json").read_text())
    return float(timing["pieces_ms_mean_active"][name])


@pytest.mark.parametrize(("case", "piece"), [("gc_pause", "gc"), ("ckpt_every_step", "save")])
def test_loop_code_outside_the_ops_is_the_verdict_and_the_first_finding(case: str, piece: str) -> None:
    """``gc.collect()`` / ``torch.save`` every step: no op holds it; the operators view cannot say it."""
    adv = advice(case)
    v = adv.verdicts[0]
    assert v.bound == "host" and "outside every recorded op" in texts.verdict_text(v)
    f = adv.findings[0]
    assert f.rule == "host-outside-ops" and f.change is not None and f.change.key == "move-loop-code"
    measured = piece_ms(case, piece)  # what the program timed that code at, with the profiler on
    assert abs(f.est_gain_ms - measured) <= 0.15 * measured, (f.est_gain_ms, measured)


def test_big_temporaries_freed_outside_the_ops_call_for_reused_buffers() -> None:
    """256 MB of temporaries a step (``profile_memory=True``): 336 MB freed after the last op."""
    f = advice("alloc_churn").findings[0]
    assert f.rule == "host-outside-ops" and f.change is not None and f.change.key == "reuse-buffers"
    assert f.evidence["freed_outside_ops_mb"] > 300


def test_many_tiny_ops_call_for_fewer_ops_and_the_ops_bound_it() -> None:
    adv = advice("tiny_ops")
    assert "the model's CPU work" in texts.verdict_text(adv.verdicts[0])
    f = adv.findings[0]
    assert f.rule == "host-outside-ops" and f.change is not None and f.change.key == "fewer-ops"


def test_a_compute_bound_cpu_step_has_no_outside_ops_finding() -> None:
    adv = advice("matmul_chain")
    assert "the model's CPU work" in texts.verdict_text(adv.verdicts[0])
    assert "host-outside-ops" not in {f.rule for f in adv.findings}


@pytest.mark.parametrize("case", DDP)
def test_two_identical_gloo_ranks_are_communication_bound_not_imbalanced(case: str) -> None:
    """The same program three times (34 MB of gradients all-reduced a step, batch 2): the all-reduce is
    25-30 ms of a ~53 ms step (timed against ``no_sync()``); which rank arrives last changes from run to
    run. The job is not "imbalance", and the first finding is to communicate less."""
    adv = advice(case)
    job = adv.verdicts[0]
    assert job.rank is None and job.bound != "imbalance"
    first = adv.findings[0]
    assert first.rule == "comm-not-overlapped" and first.change is not None
    assert first.change.key == "communicate-less"
    late = [f for f in adv.findings if f.rule == "straggler-rank"]
    assert len(late) <= 1 and all(f.est_gain_ns < first.est_gain_ns for f in late)


def test_run3_turn_taking_ranks_are_not_both_culprits() -> None:
    """Run 3: each rank last at 3 of the 6 all-reduces (5.9 and 2.5 ms late a step): only the net late rank is
    a culprit, and what the others wait for it is said once, not summed over both."""
    from stepscope.analysis.registry import ARRIVALS
    a = analyze(load(CASES / "ddp_gloo_run3")).cluster_result(ARRIVALS)
    assert a is not None and a.culprits == (0,)
    assert a.net_late_ns(0) == int(a.late_ns[0]) - int(a.suffered_ns[0]) and a.net_late_ns(1) == 0


def test_recompiling_every_step_is_compile_bound_and_said_plainly() -> None:
    adv = advice("compile_recompile")
    assert "torch.compile compiling" in texts.verdict_text(adv.verdicts[0])
    f = adv.findings[0]
    assert f.rule == "compile-in-step" and f.change is not None and f.change.key == "avoid-recompiles"
    assert "; a graph recompiled" in texts.found_text(f) and "times runs" not in texts.found_text(f)


def view_and_markdown(case: str, view: str) -> tuple[str, str]:
    """The terminal view ``view`` of a case and its Markdown report."""
    import io

    from stepscope.report import terminal
    from stepscope.report.console import terminal_console
    from stepscope.report.json_out import to_json
    from stepscope.report.markdown import render_markdown
    bundle = analyze(load(CASES / case))
    out = io.StringIO()
    terminal.render(bundle, terminal_console(file=out, width=200), views=[view])
    return out.getvalue(), render_markdown(to_json(bundle))


@pytest.mark.parametrize("case", ["compile_steady", "compile_recompile", "compile_fallback"])
def test_the_compiled_view_of_a_cpu_run_names_no_device_kernels(case: str) -> None:
    for text in view_and_markdown(case, "compiled"):
        assert "the code Inductor generates for the CPU runs inside the host's ops" in text
        assert "Triton kernels" not in text


@pytest.mark.parametrize("case", ["compile_fallback", "c07_compile_break_listappend"])
def test_torch_compile_giving_up_is_said(case: str) -> None:
    """A list append of an ``.item()`` in the compiled forward: Dynamo recompiled every warm-up call until its
    recompile limit, then runs the forward eager (``timing.json``'s warm-up steps). In the profiled steps one
    cache lookup a step and no compiled region: the first finding says the function runs eager, with no gain
    claimed (compiled, ``compile_fallback``'s MLP measured 1.9 ms a step against 2.1-2.2 eager; the tester's 6.7
    against 7.0), and the compiled view says it."""
    adv = advice(case)
    f = adv.findings[0]
    assert f.rule == "compile-fell-back" and f.change.key == "compile-the-frame" and f.basis == "eager-time-unknown"
    e = f.evidence
    assert (e["cache_lookups_per_step"], e["compiled_regions_per_step"], e["eager_frames_per_step"]) == (1, 0, 1)
    assert e["steps_falling_back"] == e["steady_steps"] == e["steps"] and e["eager_ops_pct"] > 50
    assert e["top_eager_ops"][0]["name"] in ("aten::mm", "aten::addmm") and f.est_gain_ns == 0
    for text in view_and_markdown(case, "compiled"):
        assert "cache lookup a step and no compiled region: the frame runs eager" in text


@pytest.mark.parametrize(("case", "lookups"), [("compile_steady", 1), ("compile_recompile", 1),
                                               ("c07_compile_break", 2)])
def test_compiled_frames_and_a_graph_break_are_not_a_fallback(case: str, lookups: int) -> None:
    """Each lookup runs its compiled region (the graph break: two frames, two regions a step); the recompiling
    case compiles in every step (compile-in-step's)."""
    from stepscope.analysis.registry import COMPILED
    r = analyze(load(CASES / case)).rank(0).get(COMPILED)
    assert r is not None and r.frames.lookups.tolist() == r.frames.regions.tolist() == [lookups] * len(r.frames.step)
    assert not r.frames.falling_back.any()
    assert "compile-fell-back" not in {f.rule for f in advice(case).findings}


def test_a_cpu_jobs_late_rank_is_late_for_its_cpu_work_in_every_renderer() -> None:
    """The arrivals view and the Markdown report word a CPU-only culprit's host cause as the verdict does
    (its model's ops), not as a GPU rank's (CPU ops, launches)."""
    for text in view_and_markdown("ddp_gloo", "arrivals"):
        assert "culprit rank 0: its CPU work (its ops and the code around them)" in text and "launches" not in text


def test_a_cpu_step_timed_without_the_profiler_measures_its_cost() -> None:
    """--step-ms on a CPU run (no calibration there): the cost per recorded op is measured from the step the
    program timed without the profiler (its median, the first step's warm-up aside), and the verdict says the
    step it would be."""
    import statistics

    from stepscope.ingest.step_records import with_given_step
    timing = json.loads((CASES / "tiny_ops" / "timing.json").read_text())
    step_ms = statistics.median(timing["unprofiled_step_ms"][1:])
    adv = run_advisor(analyze(with_given_step(load(CASES / "tiny_ops"), step_ms)))
    v = adv.verdicts[0]
    assert v.cost_source == "given" and v.unprofiled_step_ns is not None
    assert v.unprofiled_step_ns / 1e6 == pytest.approx(step_ms, rel=0.05)
    assert 0.3e3 < (v.event_cost_ns or 0) < 1e3  # ~0.56 µs an op: a CPU's RecordFunction, not CUPTI's 8 µs
    assert "this machine's: the" in texts.verdict_text(v) or "you timed" in texts.unprofiled_text(v)


def test_the_users_logging_range_is_named_in_the_verdict() -> None:
    v = advice("c4_logging_annot").verdicts[0]
    assert v.top_annotation == "logging" and 55 < v.top_annotation_pct < 75  # the program timed 12.9 of 20.1 ms
    assert "inside record_function 'logging'" in texts.verdict_text(v)


def test_a_periodic_evaluation_step_is_named_beside_the_mean() -> None:
    v = advice("c6_periodic_eval").verdicts[0]
    assert v.median_step_ns is not None and v.step_ns > 2 * v.median_step_ns
    assert f"step {v.slowest_step} took" in texts.verdict_text(v) and v.slowest_step_ns > 300e6


def test_the_full_span_not_the_stop_fragment_and_workers_kept() -> None:
    trace = load(CASES / "c7_respawn_workers")
    assert trace.event_count > 1_000  # the fragment holds 13 events
    adv = run_advisor(analyze(trace))
    (f,) = [f for f in adv.findings if f.rule == "dataloader-bound"]
    assert f.change is not None and f.change.key == "keep-workers"


def test_iteration_ranges_are_steps_not_a_users_range() -> None:
    v = advice("c9_jit_rnn").verdicts[0]
    assert v.step_count >= 4 and not v.top_annotation.startswith("batch")
    assert "step 0 took" in texts.verdict_text(v)  # the first batch, 119 ms against ~15


def test_a_cpu_adam_stepping_tensor_by_tensor_is_a_finding_after_the_checkpoint() -> None:
    """ckpt_every_step's Adam runs 144 ops a step on the CPU (16 tensors), none multi-tensor: the second
    finding, after the checkpoint's; AdamW(foreach=True) in c4_logging_annot is none."""
    adv = advice("ckpt_every_step")
    assert [f.rule for f in adv.findings[:2]] == ["host-outside-ops", "small-kernel-optimizer"]
    f = adv.findings[1]
    assert f.evidence["ops_per_optimizer_step"] == 144.0 and texts.title_text(f).endswith("tensor by tensor")
    assert "small-kernel-optimizer" not in {f.rule for f in advice("c4_logging_annot").findings}


def test_whatif_without_the_profiler_on_a_timed_cpu_step_removes_its_measured_cost() -> None:
    """``whatif --unprofiled`` without a value takes the cost the given step measures on a CPU run too (it
    had fallen back to the calibrated 8 µs, and tiny_ops' 2.6 ms step to nothing)."""
    from stepscope.analysis.profiler_cost import measured_cost_us
    from stepscope.ingest.step_records import with_given_step
    cost = measured_cost_us(with_given_step(load(CASES / "tiny_ops"), 1.5))
    assert cost is not None and 0.3 < cost < 1.0


def test_a_gil_holding_thread_is_the_stalled_host_not_the_models_work() -> None:
    """``c04_gil_thread``: the model's step is 8.9 ms alone, 38.5 ms profiled beside a Python thread that holds
    the GIL; an ``aten::expand`` takes up to 8 ms, an ``AddmmBackward`` 5 ms against 5 µs. The verdict names
    the stall (about half the step: the rest is the model's ops and the GIL waits between them), and the first
    finding moves the other thread, not the model's ops."""
    adv = advice("c04_gil_thread")
    v = adv.verdicts[0]
    assert v.bound == "host" and 35.0 <= v.stalled_pct <= 60.0, v.stalled_pct
    assert "stalled inside its ops" in texts.verdict_text(v) and "the model's CPU work" not in texts.verdict_text(v)
    f = adv.findings[0]
    assert f.rule == "host-stalled" and f.change is not None and f.change.key == "unstall-host"
    own_ms = json.loads((CASES / "c04_gil_thread" / "timing.json").read_text())["extra"]["step_ms_without_bg_thread"]
    lost_ms = v.step_ns / 1e6 - own_ms  # what the thread cost the profiled step, 29.6 ms
    assert 0.4 * lost_ms <= f.est_gain_ms <= lost_ms, (f.est_gain_ms, lost_ms)  # a lower bound: 17.4 ms
    assert f.evidence["metadata_ms"] > 1.0  # views that took milliseconds


def test_more_threads_than_free_cores_stall_the_host() -> None:
    """``c08_threads2``: two OpenMP threads on two busy vCPUs: 130 ms a profiled step against 11.8 with one
    thread; an ``aten::clamp_min`` of 18 µs takes 47 ms once. The stalled part is named; one thread has none."""
    adv = advice("c08_threads2")
    v = adv.verdicts[0]
    assert v.bound == "host" and v.stalled_pct >= 25.0 and "stalled inside its ops" in texts.verdict_text(v)
    f = next(f for f in adv.findings if f.rule == "host-stalled")
    assert f.est_gain_ms >= 20.0 and f.severity in ("high", "medium")
    control = advice("c08_threads1")
    assert control.verdicts[0].stalled_pct == 0.0 and "the model's CPU work" in texts.verdict_text(control.verdicts[0])
    assert "host-stalled" not in {f.rule for f in control.findings}


@pytest.mark.parametrize("case", ["gc_pause", "ckpt_every_step", "alloc_churn", "tiny_ops", "matmul_chain",
                                  "compile_steady", "c4_logging_annot", "c6_periodic_eval", "c9_jit_rnn", *DDP])
def test_no_stall_where_the_program_has_none(case: str) -> None:
    """The other CPU cases: no finding, and the verdicts' stalled part small (``c9_jit_rnn``'s median batch loses
    3.6 ms of 15 inside ops of 7 µs taking 4-6 ms — the shared VM's preemption —, 9 % of its 38.8 ms mean; its
    first batch's 89 ms in the JIT's first runs is one step's, not counted)."""
    adv = advice(case)
    assert "host-stalled" not in {f.rule for f in adv.findings}
    assert all(v.stalled_pct < 10.0 for v in adv.verdicts), [v.stalled_pct for v in adv.verdicts]
