#!/usr/bin/env bash
# Same-host latency side by side, in one interleaved run (issue 14's benchmark):
#   - FerroDDS (perftest) over UDPv4 on loopback and over shared memory (-transport SHMEM);
#   - the plain shared-memory ring (perftest -rawTransport -transport SHMEM: the same ring and
#     wake-up, no RTPS);
#   - eProsima Fast DDS 2.9 (interop/fastdds/peer.cpp ping / pong) over UDPv4 on loopback and
#     over its shared-memory transport.
# Reliable KEEP_ALL, unkeyed, perftest's TestData_t, stop-and-wait; both processes of every run
# pinned to one CPU. Each round runs every case once, in the same order; the table shows the
# median over rounds of each run's p50 and p99 (one way: RTT / 2, µs).
#
#   scripts/bench-shm.sh [--sizes "32 1024 63000"] [--rounds 3] [--seconds 5] [--cpu 0]
#
# What each side does: both answer from their listener and the pinger waits for the echo;
# perftest's writer keeps 50 samples and asks for acknowledgements as its window fills; the
# Fast DDS peer keeps 5,000 and sends a HEARTBEAT every millisecond (see peer.cpp: its default
# 3 s period leaves one sample per round trip unacknowledged). Throughput on shared memory is
# in the README's lab table (Fast DDS is not in it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
sizes="32 1024 63000"
rounds=3
seconds=5
cpu=0
while (($#)); do
  case "$1" in
    --sizes) sizes=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    *) echo "bench-shm: unknown option $1" >&2; exit 1 ;;
  esac
done
perftest=${PERFTEST:-$root/target/release/perftest}
fast=$root/target/peers/fastdds_peer
if [ -z "${PERFTEST:-}" ]; then
  (cd "$root" && cargo build --release --quiet -p ferrodds-perftest --bin perftest)
fi
bash "$root/scripts/build-fastdds-peer.sh"
pin=(taskset -c "$cpu")
timeout_s=$((seconds + 30))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# perftest latency: prints "p50 p99" (µs) of the publisher's summary line.
ours_latency() { # transport size
  # UDPv4 pinned to loopback (never the machine's real interface); SHMEM discovers over
  # loopback by itself and refuses -nic / -peer.
  local extra=(-transport "$1")
  [ "$1" = UDPv4 ] && extra+=(-nic 127.0.0.1 -peer 127.0.0.1)
  [ "$1" = RAW_SHMEM ] && extra=(-rawTransport -transport SHMEM)
  "${pin[@]}" timeout "$timeout_s" "$perftest" -sub -domain 189 -noPrint -dataLen "$2" \
    "${extra[@]}" >/dev/null 2>&1 &
  local sub=$!
  "${pin[@]}" timeout "$timeout_s" "$perftest" -pub -domain 189 -noPrint -dataLen "$2" \
    -latencyTest -executionTime "$seconds" "${extra[@]}" >"$work/pub.csv" 2>/dev/null || true
  wait "$sub" || true
  awk -F, -v n="$2" '$1+0 == n && NF >= 8 {gsub(/ /, ""); print $6, $8}' "$work/pub.csv" | tail -1
}

fast_args() { # shm size
  local a=(--domain 190 --timeout "$timeout_s" --size "$2")
  if [ "$2" -gt 65470 ]; then a+=(--type large); else a+=(--type unkeyed); fi
  [ "$1" = shm ] && a+=(--shm)
  echo "${a[@]}"
}

fast_latency() { # udp|shm size
  # shellcheck disable=SC2046
  "${pin[@]}" timeout "$timeout_s" "$fast" pong --topic bench_lat $(fast_args "$1" "$2") \
    >/dev/null 2>&1 &
  local pong=$!
  # shellcheck disable=SC2046
  "${pin[@]}" timeout "$timeout_s" "$fast" ping --topic bench_lat --seconds "$seconds" \
    $(fast_args "$1" "$2") \
    >"$work/ping.out" 2>/dev/null || true
  kill "$pong" 2>/dev/null || true
  wait "$pong" 2>/dev/null || true
  awk '$1 == "LATENCY" && $2 > 0 {print $3, $5}' "$work/ping.out"
}

median() { # values...
  printf '%s\n' "$@" | grep -v '^$' | sort -n | awk '{v[NR]=$1} END {
    if (NR == 0) { print "-"; exit }
    if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

declare -A res
cases_lat="UDPv4 SHMEM RAW_SHMEM fast_udp fast_shm"
for ((r = 1; r <= rounds; r++)); do
  for size in $sizes; do
    for c in $cases_lat; do
      case $c in
        fast_udp) v=$(fast_latency udp "$size") ;;
        fast_shm) v=$(fast_latency shm "$size") ;;
        *) v=$(ours_latency "$c" "$size") ;;
      esac
      res[lat50,$c,$size]+="${v%% *} "
      res[lat99,$c,$size]+="${v##* } "
      echo "round $r size $size latency $c: ${v:-failed}" >&2
    done
  done
done

m() { # key case size
  # shellcheck disable=SC2086
  median ${res[$1,$2,$3]:-}
}
echo
echo "Latency p50 / p99 (µs, one way), median of $rounds rounds, CPU $cpu, ${seconds} s per run:"
echo
echo "| size | FerroDDS UDPv4 | FerroDDS SHMEM | raw SHM ring | Fast DDS UDPv4 | Fast DDS SHM | FerroDDS SHMEM / Fast DDS SHM (p50) |"
echo "|---|---|---|---|---|---|---|"
for size in $sizes; do
  row="| $size B"
  for c in $cases_lat; do
    row+=" | $(m lat50 "$c" "$size") / $(m lat99 "$c" "$size")"
  done
  ratio=$(awk -v a="$(m lat50 SHMEM "$size")" -v b="$(m lat50 fast_shm "$size")" \
    'BEGIN { if (b > 0 && a > 0) printf "%.2f", a / b; else print "-" }')
  echo "$row | $ratio |"
done
