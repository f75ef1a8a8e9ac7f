#!/usr/bin/env bash
# User-space instructions per 32 B round trip, counted by callgrind (deterministic, so
# changes to the hot path can be compared on a noisy machine where timings cannot).
#
# Runs a perftest latency test (publisher and subscriber as separate processes, both on
# loopback and pinned to one CPU), each under `valgrind --tool=callgrind`, and prints
# the instructions per round trip of each side: startup and discovery are included but
# amortised over N round trips (use the same N when comparing).
#
#   scripts/callgrind-roundtrip.sh [extra perftest options, e.g. -rawTransport, -transport SHMEM]
#
# Environment: N (round trips, 20000), DOMAIN (160), OUT (directory for the
# callgrind.out files, default a temporary one), SKIP_BUILD=1, CARGO_TARGET_DIR.
# Inspect a side with: callgrind_annotate --inclusive=yes "$OUT"/cg.sub.out | head -60
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
n="${N:-20000}"
dom="${DOMAIN:-160}"
out="${OUT:-$(mktemp -d)}"
command -v valgrind >/dev/null || { echo "valgrind is needed (apt install valgrind)" >&2; exit 1; }
if [ "${SKIP_BUILD:-0}" != 1 ]; then
    (cd "$root" && cargo build --release --locked -p ferrodds-perftest >&2)
fi
p="$target/release/perftest"
mkdir -p "$out"
rm -f "$out"/cg.sub.out "$out"/cg.pub.out "$out"/latency.txt
common=(-domain "$dom" -noPrint -dataLen 32)
# UDPv4 unless the options name a transport (perftest's default also runs shared memory
# between processes of one host; the figures in the README are UDPv4's). Shared memory
# refuses -nic/-peer (its discovery stays on the loopback interface).
case " $* " in
    *" -transport SHMEM "*) ;;
    *" -transport "*) common+=(-nic 127.0.0.1 -peer 127.0.0.1) ;;
    *) common+=(-nic 127.0.0.1 -peer 127.0.0.1 -transport UDPv4) ;;
esac
taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$out/cg.sub.out" \
    "$p" -sub "${common[@]}" "$@" >"$out/sub.out" 2>"$out/sub.err" &
sub=$!
trap 'kill $sub 2>/dev/null || true' EXIT
timeout 600 taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$out/cg.pub.out" \
    "$p" -pub -latencyTest "${common[@]}" -numIter "$n" -latencyFile "$out/latency.txt" "$@" \
    >"$out/pub.out" 2>"$out/pub.err"
wait $sub || true
trap - EXIT
pongs=$(grep -c '^[0-9]*, [0-9]' "$out/latency.txt" || true)
[ "${pongs:-0}" -gt 0 ] || { echo "no round trips measured; see $out/pub.err" >&2; exit 1; }
total() { grep -m1 '^totals:\|^summary:' "$1" | awk '{print $2}'; }
s=$(total "$out/cg.sub.out")
q=$(total "$out/cg.pub.out")
echo "round trips: $pongs (N=$n) options: ${*:-none}"
echo "instructions per round trip: subscriber $((s / pongs)), publisher $((q / pongs)), both $(((s + q) / pongs))"
echo "callgrind files: $out/cg.sub.out $out/cg.pub.out"
