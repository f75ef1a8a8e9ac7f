#!/usr/bin/env bash
# Soak test (issue 18): two reliable perftest latency flows run side by side on loopback for
# --minutes (default 10):
#   - 32 B at a fixed 1,000 samples/s          (domain 41)
#   - 1 MiB samples at a fixed 50 samples/s    (domain 42)
# Every second the resident memory (VmRSS) of the four processes is sampled. At the end it prints
# per minute the latency p50 / p99 / p99.99 of each flow (from perftest's -latencyFile, one-way
# = RTT/2 as perftest reports it) and each process's RSS, then checks:
#   - RSS after warm-up (the first minute) grows by at most --max-growth percent (default 1);
#   - no sample lost (the subscribers' Lost Samples are 0) and both runs ended cleanly.
# Exit status 0 when both hold. Not part of the regular test run (it takes --minutes).
#
#   bash scripts/soak.sh [--minutes N] [--out DIR] [--cpu LIST] [--max-growth PCT]
#
# --cpu pins all four processes (taskset), e.g. --cpu 0; default: not pinned.
# Output: DIR/rss.csv, DIR/minutes.csv, DIR/lat32.csv, DIR/lat1m.csv and the perftest logs.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=10
out=target/soak
cpu=""
max_growth=1
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --max-growth) max_growth=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "soak.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$minutes" in ''|*[!0-9]*) echo "soak.sh: --minutes must be a whole number" >&2; exit 2 ;; esac
if [ "$minutes" -lt 2 ]; then
  echo "soak.sh: --minutes must be at least 2 (the first minute is warm-up)" >&2
  exit 2
fi

cargo build --release --locked -p ferrodds-perftest --bin perftest >&2
perftest=target/release/perftest
mkdir -p "$out"
rm -f "$out"/lat32.csv "$out"/lat1m.csv "$out"/*.log
secs=$((minutes * 60))
pin=()
if [ -n "$cpu" ]; then pin=(taskset -c "$cpu"); fi

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

start_pair() { # domain tag datalen rate
  local d=$1 tag=$2 len=$3 rate=$4
  "${pin[@]}" "$perftest" -sub -transport UDPv4 -nic 127.0.0.1 -domain "$d" -dataLen "$len" -noPrint \
    >"$out/sub$tag.log" 2>&1 &
  pids+=($!)
  "${pin[@]}" "$perftest" -pub -transport UDPv4 -nic 127.0.0.1 -domain "$d" -dataLen "$len" -latencyTest \
    -pubRate "$rate:sleep" -executionTime "$secs" -noPrint -latencyFile "$out/lat$tag.csv" \
    >"$out/pub$tag.log" 2>&1 &
  pids+=($!)
}
start_pair 41 32 32 1000
start_pair 42 1m 1048576 50
echo "soak: ${minutes} min, pids ${pids[*]}, output in $out" >&2

rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
echo "second,pub32_kib,sub32_kib,pub1m_kib,sub1m_kib" >"$out/rss.csv"
t=0
while [ $t -lt $((secs + 60)) ]; do
  alive=0
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ $alive = 1 ] || break
  echo "$t,$(rss "${pids[1]}"),$(rss "${pids[0]}"),$(rss "${pids[3]}"),$(rss "${pids[2]}")" >>"$out/rss.csv"
  sleep 1
  t=$((t + 1))
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
pids=()
if [ $status != 0 ]; then
  echo "soak: a perftest process failed; see $out/*.log" >&2
fi

# Per-minute latency percentiles: sample i of a flow at a fixed rate r was sent in second i / r.
percentiles() { # file rate -> lines "minute p50 p99 p99.99"
  local f=$1 rate=$2
  for m in $(seq 0 $((minutes - 1))); do
    awk -F', *' -v lo=$((m * 60 * rate)) -v hi=$(((m + 1) * 60 * rate)) \
      'NR > 1 && NF == 2 && $1 >= lo && $1 < hi {print $2}' "$f" | sort -n >"$out/.minute"
    n=$(wc -l <"$out/.minute")
    if [ "$n" -eq 0 ]; then echo "$((m + 1)) - - -"; continue; fi
    pick() { sed -n "$(( ($1 * n + 9999) / 10000 ))p" "$out/.minute"; }
    echo "$((m + 1)) $(pick 5000) $(pick 9900) $(pick 9999)"
  done
  rm -f "$out/.minute"
}
percentiles "$out/lat32.csv" 1000 >"$out/.p32"
percentiles "$out/lat1m.csv" 50 >"$out/.p1m"

echo "minute,lat32_p50_us,lat32_p99_us,lat32_p9999_us,lat1m_p50_us,lat1m_p99_us,lat1m_p9999_us,pub32_kib,sub32_kib,pub1m_kib,sub1m_kib" \
  >"$out/minutes.csv"
echo
echo "| minute | 32 B p50 / p99 / p99.99 (µs) | 1 MiB p50 / p99 / p99.99 (µs) | RSS pub/sub 32 B (KiB) | RSS pub/sub 1 MiB (KiB) |"
echo "|---|---|---|---|---|"
paste -d' ' "$out/.p32" "$out/.p1m" | while read -r m a50 a99 a9999 _ b50 b99 b9999; do
  last=$(awk -F, -v s=$((m * 60 - 1)) 'NR > 1 && $1 <= s && $2 > 0 && $3 > 0 && $4 > 0 && $5 > 0 {l = $0} END {print l}' "$out/rss.csv")
  IFS=, read -r _ p32 s32 p1m s1m <<<"$last"
  echo "$m,$a50,$a99,$a9999,$b50,$b99,$b9999,$p32,$s32,$p1m,$s1m" >>"$out/minutes.csv"
  echo "| $m | $a50 / $a99 / $a9999 | $b50 / $b99 / $b9999 | $p32 / $s32 | $p1m / $s1m |"
done
rm -f "$out/.p32" "$out/.p1m"

# RSS growth after warm-up: the largest RSS after minute 1 against the RSS at second 60.
verdict=0
for col in 2 3 4 5; do
  name=$(head -1 "$out/rss.csv" | cut -d, -f$col)
  read -r base peak <<<"$(awk -F, -v c=$col 'NR > 1 && $1 == 60 {b = $c} NR > 1 && $1 > 60 && $c > p {p = $c} END {print b + 0, p + 0}' "$out/rss.csv")"
  if [ "$base" -eq 0 ]; then
    echo "soak: $name: no RSS sample at second 60" >&2
    verdict=1
    continue
  fi
  growth=$(awk -v b="$base" -v p="$peak" 'BEGIN {g = (p - b) * 100 / b; if (g < 0) g = 0; printf "%.2f", g}')
  echo "RSS $name: $base KiB at 1 min, peak after $peak KiB: +$growth %"
  if awk -v g="$growth" -v m="$max_growth" 'BEGIN {exit !(g > m)}'; then
    echo "soak: $name grew by $growth % after warm-up (limit $max_growth %)" >&2
    verdict=1
  fi
done

# Lost samples: the last field but one of each subscriber's summary line.
for tag in 32 1m; do
  lost=$(grep -E '^ *[0-9]+, *[0-9]+,' "$out/sub$tag.log" | tail -1 | awk -F, '{gsub(/ /, "", $(NF-1)); print $(NF-1)}')
  echo "lost samples ($tag): ${lost:-none reported}"
  if [ "${lost:-x}" != 0 ]; then
    echo "soak: subscriber $tag lost ${lost:-?} samples (or printed no summary); see $out/sub$tag.log" >&2
    verdict=1
  fi
done
if [ $status != 0 ] || [ $verdict != 0 ]; then
  echo "soak: FAILED" >&2
  exit 1
fi
echo "soak: passed (${minutes} min)"
