#!/usr/bin/env bash
# Regression guard on the hot path: user-space instructions per 32 B round trip (UDPv4,
# both processes under callgrind, N round trips; scripts/callgrind-roundtrip.sh) compared
# with the committed baseline in data/callgrind-baseline.txt. Fails when the count grew by
# more than the allowed percentage (default 5). Instruction counts are deterministic to
# about 0.1 % at N=20000, so this is a stable signal on a noisy machine where timings are not.
#
#   scripts/callgrind-guard.sh           check (scripts/test.sh runs this)
#   scripts/callgrind-guard.sh --update  measure and write the baseline (commit it with the
#                                        change that moved it, saying why)
#
# Environment: ALLOW_PCT (5), N (20000), SKIP_BUILD=1 (the release perftest is built).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
baseline_file="$root/data/callgrind-baseline.txt"
n="${N:-20000}"
allow="${ALLOW_PCT:-5}"
out=$(N="$n" DOMAIN="${DOMAIN:-162}" bash "$root/scripts/callgrind-roundtrip.sh" -transport UDPv4)
echo "$out"
both=$(echo "$out" | sed -n 's/.*both \([0-9]*\).*/\1/p')
[ -n "$both" ] || { echo "callgrind-guard: no instruction count measured" >&2; exit 1; }
if [ "${1:-}" = "--update" ]; then
  {
    echo "# Instructions per 32 B round trip (UDPv4, publisher + subscriber, N=$n),"
    echo "# measured by scripts/callgrind-guard.sh --update; checked by scripts/test.sh."
    echo "both=$both"
  } >"$baseline_file"
  echo "callgrind-guard: baseline written: $both"
  exit 0
fi
base=$(sed -n 's/^both=\([0-9]*\)$/\1/p' "$baseline_file")
[ -n "$base" ] || { echo "callgrind-guard: no baseline in $baseline_file" >&2; exit 1; }
limit=$((base + base * allow / 100))
pct=$(awk -v a="$both" -v b="$base" 'BEGIN { printf "%+.1f", (a - b) * 100 / b }')
echo "callgrind-guard: $both instructions per round trip, baseline $base ($pct %), limit $limit (+$allow %)"
if [ "$both" -gt "$limit" ]; then
  echo "callgrind-guard: the 32 B round trip grew by more than $allow %: find the cause" \
    "(callgrind_annotate on the files above), or update the baseline with a reason" >&2
  exit 1
fi
