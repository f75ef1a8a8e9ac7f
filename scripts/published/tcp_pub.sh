#!/bin/sh
# Publisher side of the published Connext TCP latency test, as its command lines read: for each
# reliability (reliable, best effort), each key mode (unkeyed, keyed with 100,000 instances) and
# each size from 32 to 63000 B, one perftest publisher over TCP to the subscriber host, with
# one CSV row (no headers) appended to the output file of that combination.
#
#   tcp_pub.sh PEER NIC EXEC_TIME OUTDIR
#
# PEER is the subscriber host's address, NIC this host's interface. PERFTEST names the perftest
# binary (default: perftest on the PATH). SIZES, RELIABILITY ("reliable best") and KEYED
# ("unkeyed keyed") narrow the matrix for short runs. Start tcp_sub.sh on the other host first.
set -eu
peer=$1
nic=$2
exec_time=$3
out=$4
perftest=${PERFTEST:-perftest}
sizes=${SIZES:-"32 64 128 256 512 1024 2048 4096 8192 16384 32768 63000"}
mkdir -p "$out"
for rel in ${RELIABILITY:-reliable best}; do
    rel_opt=""
    [ "$rel" = best ] && rel_opt="-best"
    for key in ${KEYED:-unkeyed keyed}; do
        key_opt=""
        [ "$key" = keyed ] && key_opt="-keyed -instances 100000"
        file="$out/tcp_${key}_${rel}_pub.csv"
        for size in $sizes; do
            # Let the subscriber of the previous size exit and the next one start.
            sleep 2
            # shellcheck disable=SC2086
            "$perftest" -pub -transport TCP -peer "0@tcpv4_lan://$peer:7400" -nic "$nic" \
                -noPrint -noOutputHeaders -exec "$exec_time" -initialBurst 100 -noXML \
                -latencyTest -dataLen "$size" $rel_opt $key_opt >>"$file"
        done
    done
done
