#!/usr/bin/env bash
# The whole test suite, as CI runs it (`.ci/run` calls this script).
#   1. installs missing test dependencies (scripts/install-test-deps.sh)
#   2. rustfmt check, clippy with -D warnings
#   3. the release perftest (one test compares its latency with its own network capture) and
#      the small-footprint perftest_micro (built on its own, size-optimised),
#      then every unit, integration, doc and bench-smoke test of the workspace, the
#      callgrind guard (instructions per 32 B round trip within 5 % of the committed baseline)
#      and the C# binding's tests (Mono; release C API library, C# <-> Rust interop)
#   4. the Python package: clippy, wheel built with maturin, installed into target/peers-venv,
#      its pytest suite (including interop with Cyclone DDS's `cyclonedds` package)
#   5. every cargo-fuzz target for a bounded time on stable (`-s none`), built once and run two
#      at a time; a crash fails the run
# Environment: FUZZ_SECONDS (default 10) per fuzz target; SKIP_FUZZ=1 skips step 5.
# (Long fuzzing runs are scripts/fuzz-campaign.sh's: here each target gets a smoke run.)
# A test whose external dependency (root for namespaces, tshark, ddsperf, …) is missing skips
# through `ferrodds_testkit::skip`, which records it in target/skipped-tests.txt; the summary
# counts the skips. Under CI=true a skip fails its test instead (FERRODDS_ALLOW_SKIP=1 allows
# skipping there).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n==> %s (t+%ss)\n' "$*" "$(( $(date +%s) - start ))"; }

step "installing test dependencies"
bash scripts/install-test-deps.sh

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
# The code perftest_micro compiles (without TLS, shared memory and security).
cargo clippy -p ferrodds-perftest --lib --no-default-features --features dds,micro --locked -- -D warnings

step "cargo build --release -p ferrodds-perftest -p ferrodds-c (the capture truth check compares the optimised tool with the wire; the lab's C# rows run over the release C API)"
cargo build --release -p ferrodds-perftest -p ferrodds-c --locked

step "perftest_micro (tools/perftest-micro, its own build: the micro tests run it beside the full perftest)"
CARGO_TARGET_DIR="$PWD/target" cargo build --profile micro --locked \
  --manifest-path tools/perftest-micro/Cargo.toml

step "cargo test (unit, integration, benches in test mode)"
export FERRODDS_SKIP_LOG="$PWD/target/skipped-tests.txt"
rm -f "$FERRODDS_SKIP_LOG"
cargo test --workspace --all-targets --locked 2>&1 | tee target/test-output.txt
step "callgrind regression guard (instructions per 32 B round trip vs data/callgrind-baseline.txt)"
SKIP_BUILD=1 bash scripts/callgrind-guard.sh
step "C# binding: mcs build and tests (bindings/csharp/run-tests.sh, bounded to 120 s)"
bash bindings/csharp/run-tests.sh --release 2>&1 | tee target/csharp-test-output.txt
step "cargo test --doc"
cargo test --workspace --doc --locked 2>&1 | tee -a target/test-output.txt

step "Python package (bindings/python): fmt, clippy, maturin wheel, pytest"
# Its own cargo workspace (an extension module cannot link into test binaries); it shares
# target/ so the FerroDDS crates are not built twice. Tests use domains 211, 212, 217-219.
(cd bindings/python && cargo fmt -- --check &&
  CARGO_TARGET_DIR="$PWD/../../target" cargo clippy --all-targets --locked -- -D warnings)
rm -f target/wheels/ferrodds-*.whl
CARGO_TARGET_DIR="$PWD/target" target/peers-venv/bin/maturin build --release --locked \
  -m bindings/python/Cargo.toml --out target/wheels
target/peers-venv/bin/pip install --quiet --force-reinstall --no-deps target/wheels/ferrodds-*.whl
# the .pyi stubs must match the native module
(cd target && peers-venv/bin/python -m mypy.stubtest ferrodds._ferrodds)
timeout 600 target/peers-venv/bin/python -m pytest bindings/python/tests -q -p no:cacheprovider \
  2>&1 | tee target/pytest-output.txt

if [ "${SKIP_FUZZ:-0}" != 1 ] && [ -d fuzz ]; then
  secs=${FUZZ_SECONDS:-10}
  step "fuzz targets: build"
  (cd fuzz && cargo fuzz build -s none --release) >target/fuzz-build.log 2>&1 || {
    tail -n 60 target/fuzz-build.log >&2
    echo "fuzz targets failed to build: see target/fuzz-build.log" >&2
    exit 1
  }
  # One target: libFuzzer for $secs s; its log in target/fuzz-<target>.log. Committed seeds
  # (real Cyclone traffic, our own messages) go second: libFuzzer writes new units into the
  # first corpus directory, which stays out of git.
  fuzz_one() {
    local t=$1 log="target/fuzz-$1.log" seeds=()
    mkdir -p "fuzz/corpus/$t"
    if [ -d "fuzz/corpus-seeds/$t" ]; then seeds=("corpus-seeds/$t"); fi
    (cd fuzz && cargo fuzz run -s none --release "$t" "corpus/$t" ${seeds[@]+"${seeds[@]}"} \
      -- -max_total_time="$secs" -print_final_stats=1) >"$log" 2>&1
  }
  # Two targets at a time (CI has two cores; each libFuzzer run is one thread).
  targets=($(cd fuzz && cargo fuzz list))
  step "fuzz ${#targets[@]} targets for ${secs}s each, two at a time"
  fuzz_failed=()
  for ((i = 0; i < ${#targets[@]}; i += 2)); do
    pids=()
    for t in "${targets[@]:i:2}"; do
      fuzz_one "$t" &
      pids+=("$!:$t")
    done
    for pt in "${pids[@]}"; do
      t=${pt#*:}
      if wait "${pt%%:*}"; then
        printf '%s: ' "$t"
        grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "target/fuzz-$t.log" |
          tr -s ' ' | tr '\n' ' ' || true
        echo
      else
        tail -n 60 "target/fuzz-$t.log" >&2
        fuzz_failed+=("$t")
      fi
    done
  done
  if [ ${#fuzz_failed[@]} -gt 0 ]; then
    for t in "${fuzz_failed[@]}"; do
      echo "fuzz target $t failed (crash, leak, timeout or build error): see target/fuzz-$t.log and fuzz/artifacts/$t" >&2
    done
    exit 1
  fi
fi

passed=$(grep -Eo 'test result: ok\. [0-9]+ passed' target/test-output.txt | awk '{s+=$4} END {print s+0}')
failed=$(grep -Eo '[0-9]+ failed' target/test-output.txt | awk '{s+=$1} END {print s+0}')
py_passed=$(grep -Eo '[0-9]+ passed' target/pytest-output.txt | tail -1 | awk '{print $1+0}')
passed=$((passed + ${py_passed:-0}))
skipped=0
if [ -f "$FERRODDS_SKIP_LOG" ]; then skipped=$(wc -l <"$FERRODDS_SKIP_LOG"); fi
step "done"
if [ "$skipped" -gt 0 ]; then
  echo "skipped (missing dependencies; counted in 'passed' by cargo):"
  sed 's/^/  /' "$FERRODDS_SKIP_LOG"
fi
echo "tests: ${passed} passed, ${failed} failed, ${skipped} skipped"
grep -h "csharp tests:" target/csharp-test-output.txt 2>/dev/null || true
