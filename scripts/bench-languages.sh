#!/usr/bin/env bash
# Latency of FerroDDS from each language, in one interleaved run (issue 17, item 5): the Rust
# perftest, the C# perftest (bindings/csharp), the Python ping/pong example (bindings/python)
# and the C ping-pong (bindings/c/tests/c/pingpong.c), strict reliable, loopback, UDPv4 only
# (no shared memory, so every language takes the same path), both processes of a pair pinned
# to one CPU. Rounds go rust, cs, python, c for every size, then again; the table shows the
# median across rounds of each p50 (one-way = round trip / 2) and the ratio to Rust. Perftest
# prints whole µs, so the Rust and C# perftests also write -latencyFile, and a second table
# shows their p50 interpolated within its µs (the median of every value, linearly within the
# bin of values it falls in): ratios finer than the ~0.14 steps of whole µs at 7 µs.
#
#   bash scripts/bench-languages.sh [--sizes 32,1024,63000,1048576] [--rounds 3] [--seconds 5] [--cpu 0]
#                                   [--languages rust,cs,python,c]
#
# Needs: cargo, cc, mono/mcs (scripts/install-test-deps.sh), target/peers-venv with maturin
# (the same). Sizes are perftest's -dataLen (sample bytes); Python and C carry TestData_t, so
# sizes above 63000 B run for Rust and C# only.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=32,1024,63000,1048576
rounds=3
seconds=5
cpu=0
languages=rust,cs,python,c
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) sizes=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --languages) languages=$2; shift 2 ;;
    *) echo "bench-languages: unknown option '$1' (--sizes, --rounds, --seconds, --cpu, --languages)" >&2; exit 2 ;;
  esac
done
want() { [[ ",$languages," == *",$1,"* ]]; }
for l in ${languages//,/ }; do
  case "$l" in rust | cs | python | c) ;; *) echo "bench-languages: unknown language '$l' (rust, cs, python, c)" >&2; exit 2 ;; esac
done
IFS=, read -r -a size_list <<<"$sizes"
for s in "${size_list[@]}"; do
  [[ "$s" =~ ^[0-9]+$ ]] && [ "$s" -ge 28 ] || { echo "bench-languages: bad size '$s'" >&2; exit 2; }
done

echo "building (release: perftest, C API, C ping-pong, C# perftest, Python wheel) ..." >&2
cargo build --release --locked -p ferrodds-perftest -p ferrodds-c >&2
out=target/bench-languages
mkdir -p "$out"
if want c; then
  cc -O2 -Wall -Ibindings/c/include bindings/c/tests/c/pingpong.c -Ltarget/release -lferrodds_c \
    -Wl,-rpath,"$PWD/target/release" -o "$out/pingpong"
fi
venv=target/peers-venv
if want python; then
  CARGO_TARGET_DIR="$PWD/target" "$venv/bin/maturin" build --release --locked \
    -m bindings/python/Cargo.toml --out "$out/wheels" >&2
  "$venv/bin/pip" install --quiet --force-reinstall --no-deps "$out"/wheels/ferrodds-*.whl
fi
cs=bindings/csharp/perftest/perftest_cs
pin=(taskset -c "$cpu")
T=$((seconds * 4 + 60))

# One-way p50 (µs) of a perftest-compatible tool (Rust or C#): the latency summary's 50 % column,
# then the median of its -latencyFile values interpolated within their µs.
perftest_p50() { # tool domain size
  local tool=$1 dom=$2 size=$3
  timeout "$T" "${pin[@]}" "$tool" -sub -nic 127.0.0.1 -domain "$dom" -transport UDPv4 -dataLen "$size" \
    -noPrint >/dev/null 2>"$out/sub.err" &
  local sub=$!
  local line fine
  rm -f "$out/latency.csv"
  line=$(timeout "$T" "${pin[@]}" "$tool" -pub -nic 127.0.0.1 -domain "$dom" -transport UDPv4 \
    -dataLen "$size" -latencyTest -executionTime "$seconds" -noPrint -latencyFile "$out/latency.csv" 2>"$out/pub.err" |
    awk -F, '$1+0 > 0 && NF >= 10 {v=$6} END {gsub(/ /, "", v); print v}')
  wait "$sub" || true
  fine=$(awk -F', ' 'NF == 2 && $1 ~ /^[0-9]+$/ {c[$2 + 0]++; n++}
    END {if (n == 0) {print "nan"; exit}
         for (v in c) k[++m] = v + 0
         for (i = 2; i <= m; i++) {x = k[i]; for (j = i - 1; j >= 1 && k[j] > x; j--) k[j + 1] = k[j]; k[j + 1] = x}
         for (i = 1; i <= m; i++) {if (cum + c[k[i]] >= n / 2) {printf "%.2f", k[i] + (n / 2 - cum) / c[k[i]]; exit} cum += c[k[i]]}}' \
    "$out/latency.csv" 2>/dev/null)
  echo "${line:-nan} ${fine:-nan}"
}

python_p50() { # domain size
  local dom=$1 size=$2 count=$((seconds * 8000))
  [ "$size" -gt 8192 ] && count=$((seconds * 1500))
  local v
  v=$(cd bindings/python/examples || exit 1
    timeout "$T" "${pin[@]}" "../../../$venv/bin/python" pong.py --domain "$dom" >/dev/null 2>&1 &
    timeout "$T" "${pin[@]}" "../../../$venv/bin/python" ping.py --domain "$dom" --size "$size" \
      --count "$count" --warmup 1000 2>"../../../$out/ping.err" | sed -n 's/.* p50 \([0-9.]*\) us.*/\1/p'
    wait)
  echo "${v:-nan}"
}

c_p50() { # domain size (the C program takes payload bytes and prints the round trip)
  local dom=$1 size=$2 n=$((seconds * 8000))
  [ "$size" -gt 8192 ] && n=$((seconds * 1500))
  timeout "$T" "${pin[@]}" "$out/pingpong" pong "$dom" >/dev/null 2>&1 &
  local pong=$!
  local rtt
  rtt=$(timeout "$T" "${pin[@]}" "$out/pingpong" ping "$dom" "$n" $((size - 28)) 2>/dev/null |
    sed -n 's/.* p50 \([0-9.]*\) us.*/\1/p')
  wait "$pong" || true
  if [ -n "$rtt" ]; then awk -v r="$rtt" 'BEGIN {printf "%.1f", r / 2}'; else echo nan; fi
}

results="$out/results.txt"
: >"$results"
for round in $(seq 1 "$rounds"); do
  for size in "${size_list[@]}"; do
    echo "round $round, $size B ..." >&2
    if want rust; then echo "rust $size $(perftest_p50 target/release/perftest 190 "$size")" >>"$results"; fi
    if want cs; then echo "cs $size $(perftest_p50 "$cs" 191 "$size")" >>"$results"; fi
    if [ "$size" -le 63000 ]; then
      if want python; then echo "python $size $(python_p50 192 "$size")" >>"$results"; fi
      if want c; then echo "c $size $(c_p50 193 "$size")" >>"$results"; fi
    fi
  done
done

echo
echo "| size | Rust perftest | C# perftest | Python ping/pong | C ping-pong | C# / Rust | Python / Rust | C / Rust |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
med() { # lang [column: 3 the printed p50, 4 the interpolated one]
  awk -v l="$1" -v s="$size" -v c="${2:-3}" '$1 == l && $2 == s && $c != "" && $c != "nan" {print $c}' "$results" | sort -g |
    awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
for size in "${size_list[@]}"; do
  r=$(med rust); c=$(med cs); p=$(med python); k=$(med c)
  ratio() { awk -v a="$1" -v b="$r" 'BEGIN {if (a == "nan" || b == "nan" || b == 0) print "–"; else printf "%.2f", a / b}'; }
  show() { [ "$1" = nan ] && echo "–" || echo "$1 µs"; }
  echo "| $size B | $(show "$r") | $(show "$c") | $(show "$p") | $(show "$k") | $(ratio "$c") | $(ratio "$p") | $(ratio "$k") |"
done
echo
echo "Rust and C# perftest p50 interpolated within its µs (median of every -latencyFile value):"
echo
echo "| size | Rust perftest | C# perftest | C# / Rust |"
echo "|---:|---:|---:|---:|"
for size in "${size_list[@]}"; do
  r=$(med rust 4); c=$(med cs 4)
  echo "| $size B | $r µs | $c µs | $(awk -v a="$c" -v b="$r" 'BEGIN {if (a == "nan" || b == "nan" || b == 0) print "–"; else printf "%.3f", a / b}') |"
done
echo
echo "raw values: $results (language, size, one-way p50 in µs per round; perftests: printed, interpolated)"
