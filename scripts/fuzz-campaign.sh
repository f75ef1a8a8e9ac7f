#!/usr/bin/env bash
# Fuzzing campaign: runs every cargo-fuzz target (or the ones named) for a bounded time with
# the committed seed corpora, on stable Rust (`cargo fuzz run -s none`, as scripts/test.sh),
# and prints one Markdown table: executions, executions per second, coverage (edges),
# features, corpus units, peak RSS, crashes and time per target.
#
#   bash scripts/fuzz-campaign.sh [-t SECONDS] [-r RUNS] [-c CPU] [-o DIR] [TARGET[=SECONDS] ...] [-- ARGS]
#
#   -t SECONDS  time per target (default 600); 0 = no time limit (then give -r)
#   -r RUNS     also stop a target after RUNS executions (libFuzzer -runs)
#   -c CPU      pin each target's run (and the build) to this CPU with taskset
#   -o DIR      where the logs and summary.md go (default target/fuzz-campaign)
#   TARGET      run only these targets (default: every target `cargo fuzz list` prints);
#               TARGET=SECONDS overrides -t for that target
#   -- ARGS     passed to libFuzzer as they are (e.g. -- -timeout=30)
#
# New corpus units go to fuzz/corpus/<target> (not committed); the committed seeds in
# fuzz/corpus-seeds/<target> are read too. A crash, timeout or out-of-memory input is kept
# where libFuzzer writes it (fuzz/artifacts/<target>/), named in the table, and makes the
# script exit 1 after the remaining targets ran; a build failure exits 2 at once.
# Needs cargo-fuzz (installed here when missing, as scripts/install-test-deps.sh does).
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

usage() {
  sed -n '7,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

secs=600
runs=""
cpu=""
out="${CARGO_TARGET_DIR:-target}/fuzz-campaign"
while getopts "t:r:c:o:h" opt; do
  case "$opt" in
    t) secs="$OPTARG" ;;
    r) runs="$OPTARG" ;;
    c) cpu="$OPTARG" ;;
    o) out="$OPTARG" ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))

requested=()
while (($#)); do
  if [ "$1" = "--" ]; then
    shift
    break
  fi
  requested+=("$1")
  shift
done
extra=("$@")

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
is_uint "$secs" || { echo "fuzz-campaign: -t wants whole seconds, not '$secs'" >&2; exit 2; }
[ -z "$runs" ] || is_uint "$runs" || { echo "fuzz-campaign: -r wants a count, not '$runs'" >&2; exit 2; }
if [ "$secs" = 0 ] && [ -z "$runs" ]; then
  echo "fuzz-campaign: -t 0 (no time limit) needs -r RUNS" >&2
  exit 2
fi

pin=()
if [ -n "$cpu" ]; then
  command -v taskset >/dev/null 2>&1 || { echo "fuzz-campaign: -c needs taskset (util-linux)" >&2; exit 2; }
  pin=(taskset -c "$cpu")
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz-campaign: cargo install cargo-fuzz --locked" >&2
  cargo install cargo-fuzz --locked --quiet || exit 2
fi

mapfile -t all < <(cd fuzz && cargo fuzz list)
if ((${#all[@]} == 0)); then
  echo "fuzz-campaign: no fuzz targets found" >&2
  exit 2
fi
targets=()
declare -A target_secs=()
if ((${#requested[@]} == 0)); then
  targets=("${all[@]}")
else
  for r in "${requested[@]}"; do
    name="${r%%=*}"
    if [[ " ${all[*]} " != *" $name "* ]]; then
      echo "fuzz-campaign: no target '$name' (targets: ${all[*]})" >&2
      exit 2
    fi
    if [[ "$r" == *=* ]]; then
      is_uint "${r#*=}" || { echo "fuzz-campaign: '$r': seconds must be a number" >&2; exit 2; }
      target_secs[$name]="${r#*=}"
    fi
    targets+=("$name")
  done
fi

mkdir -p "$out"
echo "fuzz-campaign: building ${#targets[@]} targets (release, -s none)" >&2
if ! (cd fuzz && "${pin[@]}" cargo fuzz build -s none --release) >"$out/build.log" 2>&1; then
  tail -n 40 "$out/build.log" >&2
  echo "fuzz-campaign: build failed (see $out/build.log)" >&2
  exit 2
fi

# 1234567 -> 1,234,567
commas() { echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }
# The value after `key:` (e.g. "cov: 1234") in a libFuzzer status line.
field() { echo "$2" | grep -oE "(^|[[:space:]])$1: *[0-9]+" | grep -oE '[0-9]+$' | head -n 1; }
final_stat() { grep -E "^stat::$1:" "$2" | tail -n 1 | awk '{print $2}'; }

header='| target | executions | exec/s | coverage (edges) | features | corpus units (start → end) | peak RSS (MB) | crashes | time (s) |'
rule='|---|---:|---:|---:|---:|---:|---:|---|---:|'
rows=()
failed=0
pinned_note=""
[ -n "$cpu" ] && pinned_note=", pinned to CPU $cpu"
started_at="$(date -u +%Y-%m-%dT%H:%MZ)"

for t in "${targets[@]}"; do
  s="${target_secs[$t]:-$secs}"
  log="$out/$t.log"
  mkdir -p "fuzz/corpus/$t"
  dirs=("corpus/$t")
  [ -d "fuzz/corpus-seeds/$t" ] && dirs+=("corpus-seeds/$t")
  args=(-print_final_stats=1)
  [ "$s" != 0 ] && args+=("-max_total_time=$s")
  [ -n "$runs" ] && args+=("-runs=$runs")
  limit="${s}s"
  [ "$s" = 0 ] && limit="no time limit"
  [ -n "$runs" ] && limit="$limit, at most $(commas "$runs") executions"
  echo "fuzz-campaign: $t ($limit$pinned_note)" >&2
  t0=$(date +%s)
  (cd fuzz && "${pin[@]}" cargo fuzz run -s none --release "$t" "${dirs[@]}" -- "${args[@]}" ${extra[@]+"${extra[@]}"}) >"$log" 2>&1
  rc=$?
  elapsed=$(($(date +%s) - t0))

  execs=$(final_stat number_of_executed_units "$log")
  eps=$(final_stat average_exec_per_sec "$log")
  rss=$(final_stat peak_rss_mb "$log")
  last=$(grep -E '^#[0-9]+[[:space:]]+(INITED|NEW|REDUCE|pulse|RELOAD|DONE)' "$log" | tail -n 1)
  inited=$(grep -E '^#[0-9]+[[:space:]]+INITED' "$log" | tail -n 1)
  cov=$(field cov "$last")
  ft=$(field ft "$last")
  corp_end=$(field corp "$last")
  corp_start=$(field corp "$inited")
  # Executions when libFuzzer stopped before its final statistics (a crash): the last status line.
  [ -z "$execs" ] && execs=$(echo "$last" | grep -oE '^#[0-9]+' | tr -d '#')
  artifact=$(grep -oE 'Test unit written to [^[:space:]]+' "$log" | tail -n 1 | sed 's/^Test unit written to //')
  if [ -n "$artifact" ]; then
    case "$artifact" in
      "$root"/*) artifact="${artifact#"$root"/}" ;;
      ./*) artifact="fuzz/${artifact#./}" ;;
      /*) ;;
      *) artifact="fuzz/$artifact" ;;
    esac
  fi
  crash=0
  if [ -n "$artifact" ]; then
    crash="\`$artifact\`"
    failed=1
  elif [ "$rc" != 0 ]; then
    crash="exit $rc (see \`$log\`)"
    failed=1
  fi
  row="| $t | $(commas "${execs:-?}") | $(commas "${eps:-?}") | $(commas "${cov:-?}") | $(commas "${ft:-?}") | $(commas "${corp_start:-?}") → $(commas "${corp_end:-?}") | ${rss:-?} | $crash | $elapsed |"
  rows+=("$row")
  echo "$row" >&2
  if [ "$crash" != 0 ]; then
    grep -E 'panicked at|ERROR: libFuzzer|SUMMARY' "$log" | head -n 5 >&2
  fi
done

{
  echo "Fuzzing campaign started $started_at on $(nproc) CPUs$pinned_note: $(cargo fuzz --version), $(rustc --version | cut -d' ' -f1-2)."
  echo
  echo "$header"
  echo "$rule"
  printf '%s\n' "${rows[@]}"
} | tee "$out/summary.md"
echo >&2
echo "fuzz-campaign: logs and summary.md in $out" >&2
exit "$failed"
