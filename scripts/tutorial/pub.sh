#!/bin/sh
# Publisher board of the published perftest tutorial ("performance validation"), as its
# command lines read: the raw UDP baseline (throughput, then latency) in a loop over the sizes,
# one process per size; then the full build with -scan, with and without batching (throughput),
# and its latency; then the small-footprint build (perftest_micro) the same way without
# batching. Each case appends its rows (one per size) to its own CSV file.
#
#   pub.sh PEER NIC EXEC_TIME OUTDIR
#
# PEER is the subscriber board's address, NIC this board's interface (a name such as eth0, as
# the tutorial gives it). PERFTEST and PERFTEST_MICRO name the two builds (default: perftest
# and perftest_micro on the PATH); SIZES narrows the sizes for short runs. Start sub.sh on the
# other board first, with the same SIZES.
set -eu
peer=$1
nic=$2
exec_time=$3
out=$4
perftest=${PERFTEST:-perftest}
micro=${PERFTEST_MICRO:-perftest_micro}
sizes=${SIZES:-"32 64 128 256 512 1024 2048 4096 8192 16384 32768 63000"}
scan=$(echo $sizes | tr ' ' ':')
mkdir -p "$out"
# Let the subscriber of the previous run exit and the next one start.
pause() { sleep 2; }
for size in $sizes; do
    pause
    "$perftest" -pub -peer "$peer" -nic "$nic" -raw -noPrint -exec "$exec_time" \
        -datalen "$size" -batchSize 0 >>"$out/raw_throughput_pub.csv"
done
for size in $sizes; do
    pause
    "$perftest" -pub -peer "$peer" -nic "$nic" -raw -noPrint -exec "$exec_time" \
        -datalen "$size" -batchSize 0 -latencyTest >>"$out/raw_latency_pub.csv"
done
pause
"$perftest" -pub -peer "$peer" -nic "$nic" -noPrint -exec "$exec_time" -scan "$scan" \
    >"$out/full_batching_throughput_pub.csv"
pause
"$perftest" -pub -peer "$peer" -nic "$nic" -noPrint -exec "$exec_time" -scan "$scan" \
    -batchSize 0 >"$out/full_throughput_pub.csv"
pause
"$perftest" -pub -peer "$peer" -nic "$nic" -noPrint -exec "$exec_time" -scan "$scan" \
    -latencyTest >"$out/full_latency_pub.csv"
pause
"$micro" -pub -peer "$peer" -nic "$nic" -noPrint -exec "$exec_time" -scan "$scan" \
    >"$out/micro_throughput_pub.csv"
pause
"$micro" -pub -peer "$peer" -nic "$nic" -noPrint -exec "$exec_time" -scan "$scan" \
    -latencyTest >"$out/micro_latency_pub.csv"
