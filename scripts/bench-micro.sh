#!/usr/bin/env bash
# perftest_micro against the full perftest, in one run (issue 19, item 5): stripped binary size,
# resident memory after discovery, and 32 B latency (strict reliable, one-way p50 and p99),
# both over UDPv4 on loopback (the full build with -transport UDPv4: no shared memory, the
# same path as micro), each pair of processes pinned to one CPU, the builds alternating round
# by round.
#
#   bash scripts/bench-micro.sh [--rounds 3] [--seconds 5] [--cpu 0]
#
# RSS: VmRSS of the publisher and of the subscriber, read from /proc 2 s into a latency run
# (after discovery: one participant with its three topics, writers and readers, as RTI's
# perftest has).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3
seconds=5
cpu=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    *) echo "bench-micro: unknown option '$1' (--rounds, --seconds, --cpu)" >&2; exit 2 ;;
  esac
done
[ "$seconds" -ge 3 ] || { echo "bench-micro: --seconds must be at least 3" >&2; exit 2; }

echo "building (release perftest, perftest_micro) ..." >&2
cargo build --release --locked -p ferrodds-perftest >&2
CARGO_TARGET_DIR="$PWD/target" cargo build --profile micro --locked \
  --manifest-path tools/perftest-micro/Cargo.toml >&2
out=target/bench-micro
mkdir -p "$out"
strip -o "$out/perftest.stripped" target/release/perftest
full_size=$(stat -c %s "$out/perftest.stripped")
micro_size=$(stat -c %s target/micro/perftest_micro)
pin=(taskset -c "$cpu")
T=$((seconds * 4 + 60))

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo nan; }

# One latency run of `tool`; prints "p50 p99 pub_rss_kb sub_rss_kb".
run() { # tool domain
  local tool=$1 dom=$2 args=()
  [ "$tool" = target/release/perftest ] && args=(-transport UDPv4)
  timeout "$T" "${pin[@]}" "$tool" -sub -nic 127.0.0.1 -domain "$dom" "${args[@]}" -dataLen 32 \
    -noPrint >/dev/null 2>"$out/sub.err" &
  local sub=$!
  timeout "$T" "${pin[@]}" "$tool" -pub -nic 127.0.0.1 -domain "$dom" "${args[@]}" -dataLen 32 \
    -latencyTest -executionTime "$seconds" -noPrint >"$out/pub.out" 2>"$out/pub.err" &
  local publ=$!
  sleep 2
  local pub_rss sub_rss
  pub_rss=$(rss_kb "$(pgrep -P "$publ" -f perftest | head -1 || echo "$publ")")
  sub_rss=$(rss_kb "$(pgrep -P "$sub" -f perftest | head -1 || echo "$sub")")
  wait "$publ" || true
  wait "$sub" || true
  awk -F, -v a="$pub_rss" -v b="$sub_rss" '$1+0 > 0 && NF >= 10 {p50=$6; p99=$8}
    END {gsub(/ /, "", p50); gsub(/ /, "", p99); print (p50 == "" ? "nan" : p50), (p99 == "" ? "nan" : p99), a, b}' \
    "$out/pub.out"
}

declare -A res
for r in $(seq 1 "$rounds"); do
  for b in full micro; do
    tool=target/release/perftest
    [ "$b" = micro ] && tool=target/micro/perftest_micro
    line=$(run "$tool" 36)
    echo "round $r $b: p50 p99 pub_rss sub_rss = $line" >&2
    res[$b]+="$line"$'\n'
  done
done

median() { sort -n | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else print v[int((NR + 1) / 2)]}'; }
col() { printf '%s' "${res[$1]}" | awk -v c="$2" 'NF {print $c}' | median; }
echo
echo "| build | stripped binary | RSS publisher | RSS subscriber | 32 B p50 | 32 B p99 |"
echo "|---|---|---|---|---|---|"
for b in full micro; do
  size=$full_size
  [ "$b" = micro ] && size=$micro_size
  printf '| %s | %.2f MB | %.1f MB | %.1f MB | %s us | %s us |\n' "$b" \
    "$(echo "$size / 1000000" | bc -l)" "$(echo "$(col "$b" 3) / 1024" | bc -l)" \
    "$(echo "$(col "$b" 4) / 1024" | bc -l)" "$(col "$b" 1)" "$(col "$b" 2)"
done
echo
echo "(medians of $rounds rounds of ${seconds} s; one-way latency = round trip / 2; RSS 2 s into the run)"
