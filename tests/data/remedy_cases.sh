#!/usr/bin/env bash
# Capture remedy_cases.py's pairs on a CUDA machine in two rounds (r16, then r17), the cases of each
# pair one after the other, so machine drift falls on both sides of every pair:
#   bash tests/data/remedy_cases.sh OUT_DIR
# CASES and DEVICE override the case list and the device; no case starts after BUDGET_S seconds.
set -uo pipefail
out="${1:?OUT_DIR}"
cases="${CASES:-zero_keep zero_none launch launch_blocking bf16 bf16_blocking gemm_odd gemm_pad conv_search conv_fixed}"
budget_s="${BUDGET_S:-400}"
mkdir -p "$out"
log="$out/capture.log"
{ nvidia-smi --query-gpu=name,driver_version --format=csv 2>&1
  python3 -c "import sys, torch; print(torch.__version__, sys.version.split()[0], torch.cuda.is_available() and torch.cuda.get_device_name())"
  nproc; } > "$log"
for round in r16 r17; do
  for c in $cases; do
    if (( SECONDS > budget_s )); then echo "stopped before $round/$c: ${SECONDS} s > ${budget_s} s" >> "$log"; break 2; fi
    echo "== $round/$c" >> "$log"
    python3 tests/data/remedy_cases.py --case "$c" --out "$out/$round" --device "${DEVICE:-cuda}" >> "$log" 2>&1 \
      || echo "FAILED: $round/$c" >> "$log"
  done
done
