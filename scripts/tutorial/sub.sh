#!/bin/sh
# Subscriber board of the published perftest tutorial: the counterpart of pub.sh, case by
# case (one raw subscriber per size, one DDS subscriber per -scan run), each case's rows (one
# per size) appended to its own CSV file.
#
#   sub.sh PEER NIC OUTDIR
#
# PEER is the publisher board's address, NIC this board's interface. PERFTEST,
# PERFTEST_MICRO and SIZES as in pub.sh.
set -eu
peer=$1
nic=$2
out=$3
perftest=${PERFTEST:-perftest}
micro=${PERFTEST_MICRO:-perftest_micro}
sizes=${SIZES:-"32 64 128 256 512 1024 2048 4096 8192 16384 32768 63000"}
mkdir -p "$out"
for size in $sizes; do
    "$perftest" -sub -peer "$peer" -nic "$nic" -raw -noPrint -datalen "$size" \
        >>"$out/raw_throughput_sub.csv"
done
for size in $sizes; do
    "$perftest" -sub -peer "$peer" -nic "$nic" -raw -noPrint -datalen "$size" \
        >>"$out/raw_latency_sub.csv"
done
"$perftest" -sub -peer "$peer" -nic "$nic" -noPrint >"$out/full_batching_throughput_sub.csv"
"$perftest" -sub -peer "$peer" -nic "$nic" -noPrint >"$out/full_throughput_sub.csv"
"$perftest" -sub -peer "$peer" -nic "$nic" -noPrint >"$out/full_latency_sub.csv"
"$micro" -sub -peer "$peer" -nic "$nic" -noPrint >"$out/micro_throughput_sub.csv"
"$micro" -sub -peer "$peer" -nic "$nic" -noPrint >"$out/micro_latency_sub.csv"
