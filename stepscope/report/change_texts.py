"""What each advisor change says, by change key (a finding's ``Change.key``); ``texts.change_text`` fills
them with the change's parameters and the finding's evidence. Platform dialects:
:mod:`stepscope.report.platform_texts`."""

from __future__ import annotations

#: where the ``enable-amp`` change offers TF32, by its ``tf32`` param: the device has it (compute
#: capability >= 8.0), or its compute capability is unknown; not at all on a device without TF32 (False)
TF32_WHERE: dict[bool | None, str] = {True: "on this GPU (TF32)", None: "on Ampere or newer (TF32)"}

#: said after a graph-capture change where a tensor grows by concatenation every call (analysis/kv_cache.py)
GROWING_CACHE = ("⟨ A graph keeps the shapes it was captured with, and a {growing_cache} tensor grows by one "
                 "position a call by torch.cat (a KV cache: lengths {cache_lengths} here): preallocate it and write "
                 "each position in place (Hugging Face: generate(..., cache_implementation='static'), a "
                 "StaticCache).⟩")

CHANGES: dict[str, str] = {
    "set-num-workers": "Load batches in background workers: DataLoader(..., num_workers={num_workers}, "
                       "pin_memory=True, persistent_workers=True) — size num_workers to the free CPU cores; "
                       "move heavy preprocessing to the GPU (e.g. DALI) or pre-decode the data set.",
    "speed-up-input-pipeline": "The loader already has workers and they do not keep up: more workers if the CPU "
                               "has cores to spare (num_workers up to the free cores, prefetch_factor="
                               "{prefetch_factor}, persistent_workers=True), else make each sample cheaper: cache "
                               "the decoded samples (pre-decoded binary shards), fewer small files, augmentation on "
                               "the GPU.",
    "pin-memory": "Copy from pinned memory: DataLoader(..., pin_memory=True), or tensor.pin_memory() for "
                  "buffers you reuse, then .to(device, non_blocking=True).",
    "remove-step-sync": "Remove per-step host syncs⟨ (here {call}⟨ under {op}⟩⟨ from {call_site}⟩)⟩: no .item() / "
                        ".cpu() / .tolist() / "
                        "print of GPU tensors each step — accumulate on the GPU and read every N steps; use "
                        "CUDA events instead of torch.cuda.synchronize().",
    "async-copy-to-device": "The host waits in synchronous copies to the device⟨ (here {call}⟨ under {op}⟩⟨ from "
                            "{call_site}⟩)⟩, not for a result: make the tensors on the device (torch.randn(..., "
                            "device=device), torch.tensor(..., device=device)) or copy them from pinned memory "
                            "without blocking (x.pin_memory().to(device, non_blocking=True); DataLoader(..., "
                            "pin_memory=True) for batches).",
    "overlap-device-to-host": "The host waits for the data itself ({mb_per_step} MB per step read back at "
                              "{gb_per_s} GB/s), so the read-back cannot simply go: copy it asynchronously into "
                              "pinned buffers (.to('cpu', non_blocking=True) into a pin_memory() tensor, with a "
                              "CUDA event per piece) and consume each piece as soon as its event completes while the "
                              "next one copies (an offloaded optimizer stepping tensor by tensor); or read back fewer "
                              "bytes (keep the consumer on the GPU, copy bf16 instead of fp32).",
    "cuda-graphs-or-compile": "Launch less: capture the step with CUDA Graphs (torch.cuda.graphs / "
                              "torch.compile(mode='reduce-overhead')), fuse small ops (torch.compile), or give "
                              "each launch more work (a larger batch)." + GROWING_CACHE,
    "graph-capture-compiled": "The model already runs under torch.compile, so fusing is done: capture it in CUDA "
                              "Graphs (torch.compile(mode='reduce-overhead') or torch.cuda.graphs) so the host stops "
                              "launching each of its small kernels, or make the kernels larger (a larger batch, "
                              "max-autotune)." + GROWING_CACHE,
    "reduce-host-work": "Take the host off the critical path: less Python per step (move bookkeeping out "
                        "of the loop), torch.compile, a larger batch per launch; find the slow host ops in "
                        "the operator view (host self time).",
    "move-python-off-path": "Most of the host's time on the step's path is Python outside every op ({untraced_pct}% "
                            "of the step: metrics, logging, data handling in the loop): move it out of the step "
                            "(every N steps, a step late, another thread) or onto the GPU; with_stack=True names "
                            "the lines. Graphs and torch.compile do not remove it.",
    "move-loop-code": "Most of the step ({untraced_pct}%) is code outside every op — the loop's Python, I/O, "
                      "garbage collection; the longest stretch {longest_ms} ms a step. Find it (with_stack=True "
                      "names the lines; time the loop's parts with time.perf_counter) and move it out of the "
                      "step: checkpoints and logs every N steps or on a background thread, gc.freeze() after "
                      "setup instead of a collection every step.",
    "communicate-less": "The collectives run on the CPU and hold {comm_pct}% of the step: communicate less per "
                        "sample — accumulate gradients over N micro-batches under DDP's no_sync() (one all-reduce "
                        "every N), a larger batch per rank, a compression hook "
                        "(model.register_comm_hook with ddp_comm_hooks.default_hooks.fp16_compress_hook), or fewer, "
                        "larger buckets (DistributedDataParallel's bucket_cap_mb).",
    "keep-workers": "The waits come in bursts: {steps_waiting} of the {steps} steps hold {share_pct}% of them — an "
                    "epoch's first batches, its worker processes started again for each epoch's iterator. Keep "
                    "them: DataLoader(..., persistent_workers=True) (and prefetch_factor to fill their queue "
                    "across the epoch's start); if the slow batches are slow samples, more workers.",
    "keep-float32": "Keep the tensors float32 ({float64_pct}% of the step is float64 math): torch.from_numpy keeps "
                    "numpy's float64 default (make the arrays np.float32, or .float() the tensor), torch.tensor(..., "
                    "dtype=torch.float64) and .double() / .to(torch.float64) make it; a loss is stable in float32 "
                    "(cross_entropy works in log space).⟨ {device_rate}⟩",
    "unstall-host": "{lost_pct}% of the step is the host thread kept waiting inside its ops ({op} and others "
                    "taking many times their usual time): not the model's work. Give the thread its core: move "
                    "another Python thread's work in the process (metrics, logging, data handling) to a process, "
                    "or make it release the GIL (vectorised numpy, torch ops); set torch.set_num_threads / "
                    "OMP_NUM_THREADS to at most the physical cores less the other busy threads (several "
                    "processes' thread pools on one machine add up); keep other jobs off the cores (taskset, "
                    "fewer processes per machine).",
    "fewer-ops": "{untraced_pct}% of the step passes between the model's ops, in many short gaps: its own Python "
                 "for each of many small ops. Issue fewer, larger ops: vectorise (one op over stacked tensors "
                 "instead of a loop of small ones), torch.compile the model (fuses the ops and drops the per-op "
                 "Python), or a larger batch per op.",
    "reuse-buffers": "{untraced_pct}% of the step is outside every op, where {freed_mb} MB of host memory is freed "
                     "a step: big temporaries dropped at the end of the step, their pages returned to the system. "
                     "Allocate them once and reuse them (preallocated buffers, out= and in-place ops, writing into "
                     "slices instead of torch.cat / clone).",
    "fused-optimizer": "Use the multi-tensor optimizer: torch.optim.{optimizer}(..., {kwargs}, and fold weight "
                       "decay into the step.",
    "enable-amp": "Run the model under mixed precision: with torch.autocast('cuda', dtype=torch.{dtype}): ... "
                  "(fp16 needs torch.cuda.amp.GradScaler; on Ampere+ bf16 does not).⟨ "
                  "One-line alternative {tf32_where}: torch.backends.cuda.matmul.allow_tf32 = True; "
                  "torch.backends.cudnn.allow_tf32 = True.⟩",
    "pad-shapes-for-tensor-cores": "The ops already take half inputs, yet no Tensor-Core kernel runs: pad "
                                   "the GEMM/conv dimensions (hidden size, vocabulary, channels, batch) to "
                                   "multiples of {multiple}.",
    "pad-gemm-dims": "Pad the GEMM dimensions (hidden size, vocabulary, heads x head_dim, batch x seq) to "
                     "multiples of {multiple}, e.g. round the vocabulary up and mask the padding.",
    "bf16-autocast": "Run the forward pass and the loss inside with torch.autocast('cuda', dtype=torch.bfloat16) "
                     "(bf16 needs no GradScaler): these GEMMs and convolutions then run on bf16 Tensor Cores, "
                     "~{speedup}x TF32's throughput, and the activations between them move half the bytes.",
    "compile-elementwise": "Fuse them: model = torch.compile(model) (or @torch.compile on the function the chain "
                           "is in); Inductor turns each chain into one kernel that reads and writes the data once.",
    "fix-graph-breaks": "These ops run eagerly outside the compiled regions: find the graph breaks "
                        "(TORCH_LOGS=graph_breaks, torch._dynamo.explain) and remove them so the chains compile too.",
    "channels-last": "Use NHWC: model = model.to(memory_format=torch.channels_last) and the same for the "
                     "input batch, together with AMP.",
    "fill-the-gpu": "Give these kernels more parallel work: a larger batch, fused ops (torch.compile), or a "
                    "split-K / stream-K kernel variant, so that all⟨ {sm_count}⟩ SMs have blocks.",
    "overlap-communication": "Overlap collectives with backward compute: DDP(bucket_cap_mb=...) tuned (default "
                             "{bucket_cap_mb}), no find_unused_parameters unless needed, gradient accumulation "
                             "with no_sync(); FSDP backward/forward prefetch.",
    "use-nccl": "Run the CUDA tensors' collectives on NCCL: dist.init_process_group('cuda:nccl,cpu:{backend}') "
                "(or 'nccl'); {backend} reduces them on the CPU, copying each to the host and back.",
    "fix-slow-rank": "Shorten what rank {rank} does before the collectives it is late at ({cause_word}): compare it "
                     "with an early rank (stepscope diff), then balance its work, data or placement (a hot host, "
                     "a slower input pipeline).",
    "balance-work": "Balance the work across ranks: even sharding of embedding tables / data, equal "
                    "sequence lengths per rank (bucketing), pipeline stages of equal cost.",
    "balance-per-step": "Balance each step's work across ranks, not only the average: the inputs differ in size "
                        "from rank to rank at each step (sequence lengths, images, graphs) — bucket samples by "
                        "length so that every rank draws similar ones at a step, pack sequences to a fixed number "
                        "of tokens, or batch by tokens rather than samples. No one rank is slow: fixing one does "
                        "not help.",
    "shrink-pipeline-bubble": "Shrink the pipeline bubble of the {stages} stages: more micro-batches per step (the "
                              "GPipe / 1F1B bubble is (stages - 1) / (micro-batches + stages - 1) of the step), an "
                              "interleaved 1F1B schedule (virtual stages: ScheduleInterleaved1F1B, Megatron "
                              "--num-layers-per-virtual-pipeline-stage) or a zero-bubble schedule.",
    "allocator-config": "Set PYTORCH_CUDA_ALLOC_CONF={PYTORCH_CUDA_ALLOC_CONF} (or max_split_size_mb:<MB>); "
                        "do not call torch.cuda.empty_cache() in the loop; preallocate buffers you reuse.",
    "reduce-memory": "Make room: activation checkpointing, ZeRO / FSDP sharding, a smaller micro-batch with "
                     "gradient accumulation; parallelise TP (within a node) -> PP -> DP.",
    "move-host-work": "Move {op} out of the step, onto the GPU, or into a background thread / the "
                      "DataLoader workers.",
    "cpu-optimizer-step": "The optimizer steps on the CPU ({op}) while the GPU idles: keep the parameters and "
                          "the optimizer state on the GPU if memory allows (a fused / foreach optimizer there), "
                          "or overlap the CPU step with the device's work (ZeRO-Offload's one-step delayed "
                          "parameter update; DeepSpeed's CPU Adam) and copy its tensors asynchronously.",
    "cudnn-benchmark": "Set torch.backends.cudnn.benchmark = True (with static input shapes) so cuDNN "
                       "times the algorithms once per shape and keeps the fastest.",
    "static-shapes-for-benchmark": "Keep shapes static so the benchmark cache hits: fixed image sizes, "
                                   "drop_last=True, sequence-length buckets; or turn cudnn.benchmark off for "
                                   "truly dynamic shapes.",
    "overlap-or-avoid-copies": "Move fewer bytes first: keep the tensors on the device between steps, copy once "
                               "instead of every step, or copy in a smaller dtype; then overlap what remains: "
                               "pinned memory, .to(device, non_blocking=True) on a side stream "
                               "(torch.cuda.Stream + wait_stream) one step ahead of its use.",
    "use-fused-attention": "Let SDPA pick a fused kernel: drop sdpa_kernel(SDPBackend.MATH) / enable_math_sdp-only "
                           "settings; pass is_causal=True rather than a materialised causal mask; give it "
                           "bf16 / fp16 q, k, v with a contiguous last dimension and a supported head size; "
                           "torch.backends.cuda.can_use_flash_attention(params, debug=True) says why it falls back.",
    "avoid-recompiles": "Stop recompiling: TORCH_LOGS=recompiles names the guard that fails; for a size that "
                        "varies, torch._dynamo.mark_dynamic(x, dim) (or torch.compile(dynamic=True)), else pad to "
                        "a few fixed sizes; keep the Python values the graph reads (ints, flags) constant.",
    "compile-the-frame": "Find why Dynamo gave up on the frame: TORCH_LOGS=recompiles,graph_breaks names the guard "
                         "that fails on every call and the warning 'hit config.recompile_limit' the frame. Take the "
                         "data-dependent Python out of the compiled function (.item() results, list appends, Python "
                         "values that change each call: log them outside it, or keep them as tensors) or mark that "
                         "code @torch.compiler.disable; use dynamic=True (or torch._dynamo.mark_dynamic) where shapes "
                         "vary; raise torch._dynamo.config.recompile_limit only for a bounded set of variants. Then "
                         "profile the compiled step and compare (stepscope diff).",
    "profile-after-warmup": "The profile caught the first compile: run warm-up steps before recording "
                            "(torch.profiler.schedule(wait=1, warmup=2, active=N)) so it shows the compiled step.",
    "bucket-by-length": "Batch by length (bucketing / sorting by sequence length) or pad to a few fixed "
                        "sizes, so the same shapes repeat.",
    "upgrade-software": "Upgrade the stack: CUDA >= {min_cuda_runtime} with a matching driver, a current "
                        "PyTorch and cuDNN.",
    "zero-grad-set-to-none": "Call optimizer.zero_grad(set_to_none=True) (the default since PyTorch 2.0).",
    "batch-small-copies": "Batch the {count_per_step} small copies per step into one tensor (torch.cat / a "
                          "preallocated pinned buffer), or keep the values on the GPU.",
    "unset-launch-blocking": "Unset {env} (a debugging switch): launches become asynchronous again.",
}
