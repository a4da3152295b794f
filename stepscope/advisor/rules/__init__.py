"""The advisor's rules, one module each (stable kebab-case ``RULE_ID``; docs/rules/<id>.md).

Every module provides ``RULE_ID``, ``SCOPE`` (``"rank"`` or ``"cluster"``), ``ADDRESSES`` (the bounds its
change shortens, see advisor/ranking.py) and
``detect(ctx) -> list[Finding]``; a rule that reads the host timeline (ops, launches, annotations, copies)
also sets ``NEEDS_HOST_TIMELINE = True``, so that it reports "not run" on a summary-only trace instead
of finding nothing where it saw nothing. Add a rule by writing its module and listing it here.
"""

from __future__ import annotations

from types import ModuleType

from stepscope.advisor.rules import (
    allocator_fragmentation,
    attention_math_fallback,
    channels_last,
    comm_not_overlapped,
    compile_fell_back,
    compile_in_step,
    conv_algo_search,
    copy_bound,
    cuda_launch_blocking,
    cudnn_benchmark_off,
    dataloader_bound,
    float64_ops,
    gemm_dims_not_multiple_of_8,
    heavy_host_op_no_gpu,
    host_outside_ops,
    host_stalled,
    launch_bound,
    load_imbalance,
    memory_near_capacity,
    no_tensor_cores,
    outdated_software,
    pageable_memcpy,
    pipeline_bubble,
    small_kernel_optimizer,
    small_memcpy,
    straggler_rank,
    sync_in_step,
    tf32_not_bf16,
    under_filled_grid,
    unfused_elementwise,
    variable_input_shapes,
    zero_grad_not_none,
)

#: in SPEC §6 order, then the rules from the peers (HTA, Nsight, msprof-analyze, tuning guide)
ALL_RULES: tuple[ModuleType, ...] = (
    dataloader_bound,
    pageable_memcpy,
    copy_bound,
    sync_in_step,
    launch_bound,
    host_outside_ops,
    host_stalled,
    small_kernel_optimizer,
    float64_ops,
    no_tensor_cores,
    tf32_not_bf16,
    gemm_dims_not_multiple_of_8,
    channels_last,
    unfused_elementwise,
    attention_math_fallback,
    under_filled_grid,
    comm_not_overlapped,
    straggler_rank,
    load_imbalance,
    pipeline_bubble,
    allocator_fragmentation,
    memory_near_capacity,
    heavy_host_op_no_gpu,
    compile_in_step,
    compile_fell_back,
    cudnn_benchmark_off,
    conv_algo_search,
    variable_input_shapes,
    outdated_software,
    zero_grad_not_none,
    small_memcpy,
    cuda_launch_blocking,
)
