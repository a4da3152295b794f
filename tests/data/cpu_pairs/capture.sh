#!/bin/sh
# Re-capture the CPU before/after pairs of tests/data/cpu_pairs (run from the repository root).
#
#   sh tests/data/cpu_pairs/capture.sh [PAIR ...]     # PAIR: workers no_item fused batch (default: all)
#
# Each pair is captured three times, alternating: before/1, after/1, before/2, after/2, before/3,
# after/3 (before: no flag; after: the pair's one flag), each with
#   stepscope run --wait 1 --warmup 2 --active 6 --no-profile-memory --no-record-shapes
# (the batch pair records input shapes: its what-if finds the work that grows with the batch by them).
# Before each capture the script waits (up to an hour) until the machine's CPU use over 3 s is
# under 15 % for the workers pair (the worker needs the second core) and under 80 % for the others
# (their one process needs one core; the shared machine was rarely idler than that).
set -eu
PY=${PY:-python}
flag() {
    case $1 in
        workers) echo "--workers 1" ;;
        no_item) echo "--no-item" ;;
        fused) echo "--fused" ;;
        batch) echo "--batch-size 64" ;;
        *) echo "unknown pair $1" >&2; exit 2 ;;
    esac
}
busy_pct() {  # whole-machine CPU use over 3 s, from /proc/stat
    a=$(head -1 /proc/stat); sleep 3; b=$(head -1 /proc/stat)
    printf '%s\n%s\n' "$a" "$b" | awk '{t = 0; for (i = 2; i <= NF; i++) t += $i; idle = $5 + $6}
        NR == 1 {t1 = t; i1 = idle} NR == 2 {printf "%d", 100 * (1 - (idle - i1) / (t - t1))}'
}
wait_idle() {  # $1: the most CPU use (%) to start a capture at
    n=0
    while [ "$(busy_pct)" -ge "$1" ] && [ $n -lt 1200 ]; do n=$((n + 1)); done
}
[ $# -eq 0 ] && set -- workers no_item fused batch
for pair in "$@"; do
    for rep in ${REPS:-1 2 3}; do
        for side in before after; do
            out=tests/data/cpu_pairs/$pair/$side/$rep
            rm -rf "$out"
            extra=""
            [ "$side" = after ] && extra=$(flag "$pair")
            if [ "$pair" = workers ]; then wait_idle 15; else wait_idle 80; fi
            shapes=--no-record-shapes
            [ "$pair" = batch ] && shapes=--record-shapes
            echo "== $pair/$side/$rep: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
            # shellcheck disable=SC2086
            $PY -m stepscope run --out "$out" --wait 1 --warmup 2 --active 6 --no-profile-memory \
                $shapes --worker-name "$side" --log-every 0 \
                -- python tests/data/cpu_pairs/train.py $extra >/dev/null 2>&1
        done
    done
done
