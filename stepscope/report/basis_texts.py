"""How each finding's estimated gain was estimated, in words, by basis key (the advisor's ``Finding.basis``);
``texts.basis_text`` fills them with the finding's evidence. A rule read on another basis than its
usual one (launch-bound without launch links) gets its title and found sentence here too."""

from __future__ import annotations

BASIS: dict[str, str] = {
    "replayed": "every step replayed ⟨without the profiler's own cost ({whatif_unprofiled_us:g} µs a recorded op: "
                "{whatif_recorded_ms:.2f} ms recorded) and ⟩with the change ({whatif_basis}): the mean step goes from "
                "{whatif_measured_ms:.2f} to {whatif_predicted_ms:.2f} ms (stepscope whatif TRACE⟨ --unprofiled "
                "{whatif_unprofiled_us:g}⟩ --remedy {whatif_remedy})",
    "exposed-input-time": "time per step spent only in the DataLoader (GPU idle, no other work) — what "
                          "background workers can hide; an upper bound, since workers share the host CPU",
    "burst-waits": "the waits of the steps that hold the bursts (an epoch's first batches, its workers started "
                   "again) brought down to the other steps' median wait, per average step ({burst_excess_ms:.2f} ms): "
                   "what workers kept across epochs save — the steady waits stay",
    "amp-speedup": "eligible non-Tensor-Core kernel time per step ({eligible_non_tc_ms:.1f} ms) x "
                   "(1 - 1/{amp_speedup}): the device's half-precision Tensor-Core peak over its FP32 peak (2 "
                   "where the device is unknown)"
                   "⟨, x the {on_path_pct}% of their time on the step's critical path⟩",
    "pinned-bandwidth": "half of the pageable copies' GPU time (pinned copies reach about twice the bandwidth)",
    "blocked-host-time": "host time blocked in syncs per step, capped by the GPU's host-wait idle time",
    "host-wait-idle": "median over steps of the GPU idle time waiting for the host, outside the DataLoader",
    "host-on-path": "median over steps of the host's time on the step's critical path, outside the DataLoader "
                    "(no device work is linked to a launch call in this trace, so idle gaps cannot be told apart)",
    "fused-optimizer-speedup": "optimizer kernel time per step x (1 - 1/{fused_speedup})",
    "misaligned-share": "the misaligned GEMMs' kernel time per step x the share padding recovers "
                        "(gemm_misaligned_recoverable)⟨, x the {on_path_pct}% of their time on the step's critical "
                        "path⟩",
    "layout-transform-time": "layout-transform kernel time per step + 10% of the Tensor-Core conv time⟨, x the "
                             "{on_path_pct}% of their time on the step's critical path⟩",
    "idle-sm-share": "the SM time left idle by under-filled kernels per step x the share recovered "
                     "(underfill_recoverable)⟨, x the {on_path_pct}% "
                     "of their time on the step's critical path⟩",
    "bf16-over-tf32": "TF32 kernel time per step ({tf32_ms:.2f} ms) x (1 - 1/{bf16_over_tf32}), the device's bf16 "
                      "over TF32 Tensor-Core peak⟨, x the {on_path_pct}% of their time on the step's critical "
                      "path⟩: a lower bound (bf16 kernels also reach more of "
                      "their peak, and bf16 activations halve the traffic of the ops around them)",
    "fused-one-pass": "the runs' kernel time beyond each run's longest kernel per step (fused, a run makes one "
                      "pass over its data)⟨, x the {on_path_pct}% of their time on the step's critical path⟩",
    "hideable-comm": "exposed communication that is transfer (not waiting), capped by the computation "
                     "it could hide behind",
    "host-side-comm": "the host's time inside collectives on the step's critical path per step (no device work "
                      "beside it): an upper bound, since the collectives on the device still take part of it",
    "cpu-comm": "the time inside the CPU's collectives on the step's critical path per step: an upper bound "
                "(communicating less shortens them, and waiting there for a late rank is not transfer)",
    "untraced-host-time": "the mean over steps of the host's time on the step's critical path "
                          "outside every recorded op",
    "float32-half": "half the float64 ops' time on the step's path: a lower bound (float32 halves the bytes and "
                    "doubles the elements per vector⟨; {device_rate}⟩)",
    "stalled-excess": "the median over steps of the stalled op calls' own time beyond the "
                      "typical time of the same op on the same shapes (calls of 10x it and 1 ms beyond), where it "
                      "lies on the step's path (all of it on a CPU-only rank; on a device rank while the device "
                      "idles): a lower bound, smaller stalls not counted",
    "excess-over-median": "the slow rank's excess time per step over the median rank",
    "culprit-lateness": "what-if the slow rank is fixed: it arrives with the second-to-last rank at every "
                        "collective it is last at, so each of them, and the job's step, ends earlier by its "
                        "lateness; summed per step, capped by the step",
    "imbalance-excess": "(max - mean) of the per-rank compute time at each step, averaged, capped by what the "
                        "collectives lose to uneven arrivals (last - mean arrival, per step)",
    "imbalance-moving": "(max - mean) of the per-rank compute time at each step (the busiest rank changes from "
                        "step to step), averaged, capped by what the collectives lose to uneven arrivals (last - "
                        "mean arrival, per step)",
    "critical-bubble": "the busiest pipeline stage's idle time per step (step - its compute - its other device "
                       "work): on the critical path, since the step cannot be shorter than that stage's work",
    "overlap-bound": "per step the smaller of the copies' and the compute's time on the critical path: the most "
                     "overlapping them (a side stream) can save; fewer bytes save more",
    "fused-attention-peak": "the math backend's kernel time per step less what a fused kernel needs at least (the "
                            "attention's FLOPs at the device's dense peak, {fused_min_ms:.2f} ms)⟨, x the "
                            "{on_path_pct}% of their time on the step's critical path⟩: an upper bound",
    "math-attention-time": "the math backend's kernel time per step⟨, x the {on_path_pct}% of their time on the "
                           "step's critical path⟩ (the device or the shapes unknown: an upper bound)",
    "compile-time": "host time per step inside torch.compile's compilation ranges",
    "allocator-call-time": "host time in cudaMalloc/cudaFree per step",
    "headroom-only": "no time estimate: the finding is about memory headroom",
    "gpu-idle-in-host-ops": "GPU idle time inside the ops per step",
    "benchmark-share": "the fallback conv kernel time per step x the share benchmarking saves "
                       "(cudnn_benchmark_gain)⟨, x the {on_path_pct}% of their time on "
                       "the step's critical path⟩",
    "search-time": ("the larger of the searching calls' kernel time per step beyond one kernel per call and their "
                    "host time beyond a call's that did not search (which holds the waits for the trials)"),
    "not-estimated": "no time estimate",
    "eager-time-unknown": "no time estimate: what the {eager_ops_ms:.2f} ms of eager ops a step would take compiled "
                          "cannot be read from a trace where they ran eager (compiled can be much faster, or no "
                          "faster: a small CPU MLP measured the same either way); profile a step where the frame "
                          "compiles and compare",
    "compiled-steps-measured": "the steps where frames ran eager ({eager_step_ms:.2f} ms) measured against the steady "
                               "steps of the same trace where every frame ran compiled ({compiled_step_ms:.2f} ms, "
                               "{steps_compiled} steps), per average step",
    "kernel-time-removed": "the zeroing kernels' and the first accumulations' GPU time per step",
    "copy-latency": "half of the small copies' GPU time per step",
    "launch-excess": "blocking launch calls' host time beyond 5 µs each, per step",
}


#: a rule's finding read on another basis than its usual one: its title, then what was measured instead
TITLE_BY_BASIS: dict[tuple[str, str], str] = {
    ("launch-bound", "host-on-path"): "The host's work holds up the step",
}
FOUND_BY_BASIS: dict[tuple[str, str], str] = {
    ("load-imbalance", "imbalance-moving"):
        "The busiest rank changes from step to step (rank {busiest_steps_text} at the steps in turn): at each "
        "step the busiest one computes {step_excess_ms:.2f} ms longer than the average rank ({imbalance_pct:.0f}% "
        "of the work), where their averages differ less ({rank_compute_text} ms per step).",
    ("launch-bound", "host-on-path"):
        "The host's own work is on the step's critical path {host_wait_ms:.1f} ms per step ({host_wait_pct:.1f}%, "
        "median over steps, DataLoader time excluded): the trace links no device work to its launch, so the "
        "GPU's idle time cannot be split by what it waited for.",
}
