#!/usr/bin/env bash
# Capture the one-change GPU what-if pairs of tests/data/cuda_train.py on a CUDA machine.
# Usage (repo root, stepscope importable):  bash tests/data/h200_pairs/capture.sh OUT_DIR
# Each variant is captured twice, alternating (base/1, workers/1, ..., base/2, workers/2, ...),
# so machine drift falls on both sides of every pair. VARIANTS names them (a variant is a
# comma-separated remedy list; its folder joins them with '+'), e.g.
#   VARIANTS="workers workers,pinned workers,no_item" bash tests/data/h200_pairs/capture.sh OUT
set -uo pipefail
out="${1:?OUT_DIR}"
variants="${VARIANTS:-base workers pinned no_item amp fused graph}"
for round in 1 2; do
  for v in $variants; do
    fix="$v"; [ "$v" = base ] && fix=""
    name="${v//,/+}"  # workers,pinned -> workers+pinned
    python3 -m stepscope run --out "$out/$name/$round" --wait 3 --warmup 2 --active 5 --worker-name "${name}_$round" \
      -- python3 tests/data/cuda_train.py --steps 16 ${fix:+--fix "$fix"} > "$out/$name.$round.log" 2>&1 \
      || echo "FAILED: $name/$round (see $name.$round.log)"
    tail -n 1 "$out/$name.$round.log"
  done
done
