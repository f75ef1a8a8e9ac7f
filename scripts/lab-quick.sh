#!/usr/bin/env bash
# The main job on a fresh machine: build FerroDDS, perftest and the lab (release), then run the
# lab's quick characterisation of this host (loopback; FerroDDS vs raw UDP vs Cyclone DDS ddsperf)
# and write CSV, JSON and an HTML report to results/quick/ (or the --out you pass).
# Cyclone's ddsperf (Debian cyclonedds-tools) is installed when missing and apt is usable;
# without it the lab still runs and notes the missing baseline in the report.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v ddsperf >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo -n"
  echo "lab-quick: installing cyclonedds-tools for the ddsperf baseline" >&2
  (export DEBIAN_FRONTEND=noninteractive; $SUDO apt-get update -qq && \
     $SUDO apt-get install -y -qq --no-install-recommends cyclonedds-tools >/dev/null) \
    || echo "lab-quick: could not install cyclonedds-tools; running without the ddsperf baseline" >&2
fi
cargo build --release --locked -p ferrodds-perftest -p ferrodds-lab
out=results/quick
for a in "$@"; do case "$a" in --out|--out=*) out="";; esac; done
if [ -n "$out" ]; then set -- --out "$out" "$@"; fi
exec target/release/lab run --quick "$@"
