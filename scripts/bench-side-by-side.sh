#!/usr/bin/env bash
# Side-by-side benchmark on this machine: perftest over FerroDDS, perftest -rawTransport
# (plain UDP) and Cyclone DDS ddsperf, in one run, through the lab.
#
#   latency:    32, 1024, 8192, 63000 B; one-way median and p99; strict reliable
#   throughput: same sizes; samples/s, Mbit/s, lost; reliable; FerroDDS with and
#               without batching (8192 B batches where a batch holds two samples)
#
# Both processes of a run are pinned to one CPU (taskset -c $CPU, default 0) and the
# systems alternate run by run (A B C A B C ...) for $REPS rounds (default 3). Cyclone
# gets a loopback-only CYCLONEDDS_URI (the lab writes tools/lab/cyclone-loopback.xml
# into the results directory). Prints one Markdown table: medians with the min–max
# spread over the rounds, and the ratios FerroDDS/raw and FerroDDS/ddsperf.
#
# Environment: REPS (3), EXEC (seconds per run, 5), SIZES (32,1024,8192,63000),
# CPU (0), OUT (results directory, default results/side-by-side-<time>),
# DOMAIN_BASE (100: runs cycle through domains 100-139, away from the test suites'),
# SKIP_BUILD=1 (use the binaries already built), CARGO_TARGET_DIR (default target).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
reps="${REPS:-3}"
exec_s="${EXEC:-5}"
sizes="${SIZES:-32,1024,8192,63000}"
cpu="${CPU:-0}"
domain_base="${DOMAIN_BASE:-100}"
out="${OUT:-results/side-by-side-$(date +%Y%m%d-%H%M%S)}"
target="${CARGO_TARGET_DIR:-target}"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
    cargo build --release --locked -p ferrodds-perftest -p ferrodds-lab >&2
fi
lab="$target/release/lab"
perftest="$target/release/perftest"
for b in "$lab" "$perftest"; do
    [ -x "$b" ] || { echo "missing $b (build it, or unset SKIP_BUILD)" >&2; exit 1; }
done
systems="ferrodds,raw"
if command -v ddsperf >/dev/null 2>&1; then
    systems="$systems,cyclone"
else
    echo "note: ddsperf not found (Debian package cyclonedds-tools); Cyclone is left out" >&2
fi

mkdir -p "$out"
"$lab" run \
    --perftest "$perftest" \
    --sizes "$sizes" \
    --tests latency,throughput \
    --reliability reliable \
    --keyed off \
    --batching both \
    --systems "$systems" \
    --repetitions "$reps" \
    --execution-time "$exec_s" \
    --cpu "$cpu" \
    --domain-base "$domain_base" \
    --out "$out" >&2 || echo "lab exited with status $? (table from what finished)" >&2

{
    echo "Side-by-side, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, pinned to CPU $cpu, $reps rounds of ${exec_s} s, loopback."
    echo "Medians over the rounds (min–max in parentheses); ratios of medians."
    echo
    python3 "$root/tools/perftest/bench_table.py" "$out"
} | tee "$out/side-by-side.md"
