#!/bin/sh
# Subscriber side of the published Connext TCP latency test (see tcp_pub.sh): one perftest
# subscriber per combination and size, over TCP to the publisher host, one CSV row (no headers)
# appended to the output file of that combination.
#
#   tcp_sub.sh PEER NIC OUTDIR
#
# PEER is the publisher host's address, NIC this host's interface; PERFTEST, SIZES, RELIABILITY
# and KEYED as in tcp_pub.sh (they must match the publisher's).
set -eu
peer=$1
nic=$2
out=$3
perftest=${PERFTEST:-perftest}
sizes=${SIZES:-"32 64 128 256 512 1024 2048 4096 8192 16384 32768 63000"}
mkdir -p "$out"
for rel in ${RELIABILITY:-reliable best}; do
    rel_opt=""
    [ "$rel" = best ] && rel_opt="-best"
    for key in ${KEYED:-unkeyed keyed}; do
        key_opt=""
        [ "$key" = keyed ] && key_opt="-keyed -instances 100000"
        file="$out/tcp_${key}_${rel}_sub.csv"
        for size in $sizes; do
            # shellcheck disable=SC2086
            "$perftest" -sub -transport TCP -peer "0@tcpv4_lan://$peer:7400" -nic "$nic" \
                -noPrint -noOutputHeaders -noXML -dataLen "$size" $rel_opt $key_opt >>"$file"
        done
    done
done
