#!/bin/sh
# The published Connext suite's base script, as its transport cases read: for each size, one
# perftest latency test (publisher side) or its subscriber, with the transport options of the
# selected case, appending one CSV row (no headers) per size to the side's output file.
#
#   suite.sh pub|sub --transport UDPv4|TCP|TLS|UDPv4_WAN --peer ADDR --nic NIC \
#            [--public-address ADDR:PORT] [--exec SECONDS] [--best] --out DIR
#
# --peer is the other host's address; --public-address (UDPv4_WAN) the address this side is
# reached at. PERFTEST names the perftest binary (default: perftest on the PATH); SIZES narrows
# the sizes (default 32 ... 63000). Start the subscriber side first.
set -eu
role=$1
shift
transport=UDPv4
peer=
nic=
public=
exec_time=10
best=
out=
while [ $# -gt 0 ]; do
    case $1 in
    --transport) transport=$2; shift 2 ;;
    --peer) peer=$2; shift 2 ;;
    --nic) nic=$2; shift 2 ;;
    --public-address) public=$2; shift 2 ;;
    --exec) exec_time=$2; shift 2 ;;
    --best) best=-best; shift ;;
    --out) out=$2; shift 2 ;;
    *) echo "suite.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -n "$peer" ] && [ -n "$nic" ] && [ -n "$out" ] || {
    echo "suite.sh: --peer, --nic and --out are required" >&2
    exit 2
}
perftest=${PERFTEST:-perftest}
sizes=${SIZES:-"32 64 128 256 512 1024 2048 4096 8192 16384 32768 63000"}
case $transport in
UDPv4) transport_opts="-transport UDPv4 -peer $peer" ;;
TCP) transport_opts="-transport TCP -peer 0@tcpv4_lan://$peer:7400" ;;
TLS) transport_opts="-transport TLS -peer 0@tlsv4_lan://$peer:7400" ;;
UDPv4_WAN)
    transport_opts="-transport UDPv4_WAN -peer 0@udpv4_wan://$peer:7400"
    [ -n "$public" ] && transport_opts="$transport_opts -transportPublicAddress $public"
    ;;
*) echo "suite.sh: unknown transport $transport" >&2; exit 2 ;;
esac
mkdir -p "$out"
file="$out/$(echo "$transport" | tr 'A-Z' 'a-z')_${role}.csv"
for size in $sizes; do
    if [ "$role" = pub ]; then
        # Let the subscriber of the previous size exit and the next one start.
        sleep 2
        # shellcheck disable=SC2086
        "$perftest" -pub $transport_opts -nic "$nic" -noPrint -noOutputHeaders \
            -exec "$exec_time" -noXML -latencyTest -dataLen "$size" $best >>"$file"
    else
        # shellcheck disable=SC2086
        "$perftest" -sub $transport_opts -nic "$nic" -noPrint -noOutputHeaders \
            -noXML -dataLen "$size" $best >>"$file"
    fi
done
