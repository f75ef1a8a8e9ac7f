#!/usr/bin/env bash
# Records real Cyclone DDS RTPS traffic (ddsperf scenarios) on the loopback
# interface into small pcapng files used as golden bytes by the wire crate's
# tests, and regenerates crates/wire/tests/data/README.md describing them.
#
# Usage: scripts/record-cyclone-capture.sh [SCENARIO...]
#        scripts/record-cyclone-capture.sh --readme-only   (regenerate README.md)
#   Scenarios: ping-reliable ping-besteffort pubsub-frag pubsub-frag-besteffort
#              pubsub-frag-lossy (default: all)
#   pubsub-frag-lossy runs in a private network namespace (`unshare -n`, its
#   own loopback) where an nftables rule drops 20% of the datagrams sent to
#   the user-data ports, so Cyclone repairs with NACK_FRAG/HEARTBEAT_FRAG.
# Environment:
#   OUT_DIR   where to put cyclone-<scenario>.pcapng (default crates/wire/tests/data)
#   DOMAIN    DDS domain id used by ddsperf (default 77; keeps ports away from
#             other tests that may be running on loopback)
#   DURATION  seconds each scenario runs (default 3)
#
# Everything stays on 127.0.0.1: Cyclone is pinned to `lo` with multicast off
# and unicast discovery to 127.0.0.1, the capture filter only accepts UDP on
# 127.0.0.1 within the domain's port range, and the result is checked for
# foreign addresses before it is kept.
#
# Needs root (or capture rights) for dumpcap on lo. Installs
# cyclonedds-tools and tshark with apt-get when they are missing.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT_DIR=${OUT_DIR:-$REPO_ROOT/crates/wire/tests/data}
DOMAIN=${DOMAIN:-77}
DURATION=${DURATION:-3}
ALL_SCENARIOS=(ping-reliable ping-besteffort pubsub-frag pubsub-frag-besteffort pubsub-frag-lossy)
IN_NETNS=${_RECORD_IN_NETNS:-}

log() { printf '[record-cyclone] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else die "need root to run: $*"
    fi
}

apt_install() {
    log "installing $*"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}

ensure_tools() {
    local missing=()
    command -v ddsperf >/dev/null 2>&1 || missing+=(cyclonedds-tools)
    { command -v tshark >/dev/null 2>&1 && command -v dumpcap >/dev/null 2>&1 \
        && command -v capinfos >/dev/null 2>&1; } || missing+=(tshark)
    if [[ " ${SCENARIOS[*]} " == *-lossy* ]]; then
        command -v nft >/dev/null 2>&1 || missing+=(nftables)
        command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
    fi
    if [ "${#missing[@]}" -gt 0 ]; then
        if ! apt_install "${missing[@]}"; then
            as_root apt-get update
            apt_install "${missing[@]}"
        fi
    fi
}

[ "$DOMAIN" -ge 0 ] && [ "$DOMAIN" -le 232 ] || die "DOMAIN must be 0..232"
README_ONLY=
if [ "${1:-}" = "--readme-only" ]; then README_ONLY=1; shift; fi
SCENARIOS=("$@")
[ "${#SCENARIOS[@]}" -gt 0 ] || SCENARIOS=("${ALL_SCENARIOS[@]}")
[ -n "$README_ONLY" ] && SCENARIOS=()
ensure_tools

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# Same settings as shared/peers/cyclone-loopback.xml, shipped here so the
# script works from a clean clone.
cat >"$WORK/cyclone-loopback.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<CycloneDDS xmlns="https://cdds.io/config">
  <Domain Id="any">
    <General>
      <Interfaces><NetworkInterface name="lo"/></Interfaces>
      <AllowMulticast>false</AllowMulticast>
    </General>
    <Discovery>
      <ParticipantIndex>auto</ParticipantIndex>
      <Peers><Peer Address="127.0.0.1"/></Peers>
    </Discovery>
  </Domain>
</CycloneDDS>
EOF
export CYCLONEDDS_URI="file://$WORK/cyclone-loopback.xml"

# RTPS port range of the domain: PB + DG * domain + [0, 250).
PORT_BASE=$((7400 + 250 * DOMAIN))
FILTER="udp and src host 127.0.0.1 and dst host 127.0.0.1 and portrange $PORT_BASE-$((PORT_BASE + 249))"

# Starts a ddsperf process in the background, bounded by timeout.
ddsperf_bg() {
    local logf=$1; shift
    timeout -k 2 $((DURATION + 10)) ddsperf -i "$DOMAIN" -D "$DURATION" "$@" >"$logf" 2>&1 &
    PIDS+=($!)
}

# scenario_args NAME -> sets A (first process) and B (second process) arrays.
scenario_args() {
    case "$1" in
        ping-reliable)           A=(pong);      B=(ping 20Hz size 32) ;;
        ping-besteffort)         A=(-u pong);   B=(-u ping 20Hz size 32) ;;
        pubsub-frag)             A=(sub);       B=(pub 1Hz size 100000) ;;
        pubsub-frag-besteffort)  A=(-u sub);    B=(-u pub 1Hz size 100000) ;;
        pubsub-frag-lossy)       A=(sub);       B=(pub 2Hz size 40000) ;;
        *) die "unknown scenario $1 (known: ${ALL_SCENARIOS[*]})" ;;
    esac
}

# Extra sentence for the README.
scenario_note() {
    case "$1" in
        *-lossy) printf '%s' "Recorded in a private network namespace whose loopback drops 20% of the" \
            " datagrams sent to the user-data unicast ports (nftables rule" \
            ' `udp dport { ... } numgen random mod 5 0 drop`' \
            " on ports $((PORT_BASE + 11)), $((PORT_BASE + 13)), ..., $((PORT_BASE + 29)));" \
            " the capture sees every datagram, including the dropped ones, and the repairs."
            echo ;;
        *) echo "" ;;
    esac
}

# Drops 20% of the datagrams to user-data unicast ports (PB+DG*d+d3+PG*i).
add_loss_rule() {
    local ports i
    ports=$(for i in $(seq 0 9); do printf '%s, ' $((PORT_BASE + 11 + 2 * i)); done)
    nft add table ip ferrodds_loss
    nft "add chain ip ferrodds_loss input { type filter hook input priority 0; }"
    nft add rule ip ferrodds_loss input udp dport "{ ${ports%, } }" numgen random mod 5 0 drop
}

record() {
    local name=$1 file="$WORK/cyclone-$1.pcapng"
    scenario_args "$name"
    if [[ "$name" == *-lossy && -z "$IN_NETNS" ]]; then
        # Re-run this script for the one scenario inside a fresh network
        # namespace; the loss rule and the namespace vanish when it exits.
        log "scenario $name: entering a private network namespace"
        _RECORD_IN_NETNS=1 OUT_DIR="$OUT_DIR" DOMAIN="$DOMAIN" DURATION="$DURATION" \
            unshare -n "${BASH_SOURCE[0]}" "$name" || die "$name failed in its network namespace"
        return
    fi
    if [[ "$name" == *-lossy ]]; then add_loss_rule; fi
    log "scenario $name: ddsperf ${A[*]}  +  ddsperf ${B[*]}"
    timeout -k 2 $((DURATION + 20)) dumpcap -q -i lo -f "$FILTER" -a duration:$((DURATION + 3)) \
        -w "$file" >"$WORK/$name.dumpcap.log" 2>&1 &
    local cap=$!
    PIDS+=("$cap")
    local i
    for i in $(seq 50); do
        grep -q "Capturing on" "$WORK/$name.dumpcap.log" 2>/dev/null && break
        sleep 0.1
    done
    grep -q "Capturing on" "$WORK/$name.dumpcap.log" || die "dumpcap did not start: $(cat "$WORK/$name.dumpcap.log")"
    ddsperf_bg "$WORK/$name.a.log" "${A[@]}"
    local a=$!
    sleep 0.3
    ddsperf_bg "$WORK/$name.b.log" "${B[@]}"
    local b=$!
    wait "$a" || log "ddsperf ${A[*]} exited with $? (see below)"
    wait "$b" || log "ddsperf ${B[*]} exited with $?"
    wait "$cap" || die "dumpcap failed: $(cat "$WORK/$name.dumpcap.log")"
    tail -n 3 "$WORK/$name.b.log" | sed 's/^/    /' >&2

    # Only loopback addresses may appear.
    local addrs
    addrs=$(tshark -r "$file" -T fields -e ip.src -e ip.dst 2>/dev/null | tr '\t' '\n' | sort -u | grep -v '^$' || true)
    [ "$addrs" = "127.0.0.1" ] || die "$name: unexpected addresses in capture: $addrs"
    [ "$(tshark -r "$file" -Y rtps 2>/dev/null | wc -l)" -gt 0 ] || die "$name: no RTPS traffic captured"
    mkdir -p "$OUT_DIR"
    cp "$file" "$OUT_DIR/cyclone-$name.pcapng"
    chmod 644 "$OUT_DIR/cyclone-$name.pcapng"
    log "wrote $OUT_DIR/cyclone-$name.pcapng ($(stat -c %s "$file") bytes)"
}

sm_name() {
    case "$1" in
        0x01) echo PAD ;; 0x06) echo ACKNACK ;; 0x07) echo HEARTBEAT ;; 0x08) echo GAP ;;
        0x09) echo INFO_TS ;; 0x0c) echo INFO_SRC ;; 0x0d) echo INFO_REPLY_IP4 ;;
        0x0e) echo INFO_DST ;; 0x0f) echo INFO_REPLY ;; 0x12) echo NACK_FRAG ;;
        0x13) echo HEARTBEAT_FRAG ;; 0x15) echo DATA ;; 0x16) echo DATA_FRAG ;;
        0x80) echo "vendor 0x80 (Cyclone: ADLINK_MSG_LEN)" ;;
        0x81) echo "vendor 0x81 (Cyclone ADLINK_MSG_LEN)" ;;
        0x82) echo "vendor 0x82 (Cyclone ADLINK_ENTITY_ID)" ;;
        *) echo "unknown $1" ;;
    esac
}

# Markdown table rows "| count | id | name |" for one file.
sm_table() {
    tshark -r "$1" -o rtps.enable_rtps_reassembly:FALSE -Y rtps -T fields -e rtps.sm.id 2>/dev/null \
        | tr ',' '\n' | grep -v '^$' | sort | uniq -c \
        | while read -r count id; do printf '| %s | %s | %s |\n' "$id" "$(sm_name "$id")" "$count"; done
}

if [ -n "$IN_NETNS" ]; then
    ip link set lo up
    for s in "${SCENARIOS[@]}"; do record "$s"; done
    exit 0
fi
for s in "${SCENARIOS[@]}"; do record "$s"; done

# Regenerate the README from whatever cyclone-*.pcapng files are present.
CYCLONE_VERSION=$(dpkg-query -W -f '${Version}' cyclonedds-tools 2>/dev/null || echo unknown)
TSHARK_VERSION=$(tshark --version 2>/dev/null | head -n 1)
{
    cat <<EOF
# Captured RTPS traffic

Real Cyclone DDS traffic for golden-byte tests, recorded on the loopback
interface only (all addresses are 127.0.0.1) by \`scripts/record-cyclone-capture.sh\`.

- Peer: Eclipse Cyclone DDS \`ddsperf\`, Debian package \`cyclonedds-tools\` $CYCLONE_VERSION
- Recorded with: $TSHARK_VERSION (\`dumpcap -i lo -f '<udp on 127.0.0.1, domain port range>'\`)
- Recorded on: $(date -u +%Y-%m-%d)
- Domain id $DOMAIN (RTPS ports $PORT_BASE-$((PORT_BASE + 249))), each scenario ran for ${DURATION} s
  (\`ddsperf -i $DOMAIN -D $DURATION ...\`), both processes started within 0.3 s of each other,
  so each file also contains SPDP/SEDP discovery.
- Cyclone configuration: \`lo\` only, \`AllowMulticast=false\`, \`ParticipantIndex=auto\`,
  unicast peer 127.0.0.1 (the same settings as \`cyclone-loopback.xml\` in the peers notes).
- Format: pcapng, link type Ethernet (DLT 1) as dumpcap records \`lo\`; read them with
  \`ferrodds_capture::read_udp_payloads\`.

Things to know when cutting golden bytes from these files:

- UDP checksums are not valid: loopback leaves them to checksum offload, so the
  captured value is a partial sum. Don't turn on Wireshark's UDP checksum validation
  (\`ferrodds_capture::testing::TsharkOptions::real_capture()\`).
- Besides RTPS, each file holds a few 1-byte UDP datagrams Cyclone sends to its own
  sockets to wake its receive threads when shutting down; skip payloads that do not
  start with \`RTPS\`.
- Timestamps are nanosecond resolution; the SPDP user data carries the recording
  host's name and ddsperf's process id.

Re-record with \`scripts/record-cyclone-capture.sh [scenario...]\` (needs root for dumpcap);
the script regenerates this file. Submessage counts come from
\`tshark -r FILE -Y rtps -T fields -e rtps.sm.id | tr ',' '\n' | sort | uniq -c\`.

EOF
    for f in "$OUT_DIR"/cyclone-*.pcapng; do
        [ -e "$f" ] || continue
        name=$(basename "$f" .pcapng); name=${name#cyclone-}
        scenario_args "$name" 2>/dev/null || { A=(?); B=(?); }
        frames=$(capinfos -c -M "$f" 2>/dev/null | awk -F': *' '/Number of packets/ {print $2}')
        printf '## `cyclone-%s.pcapng`\n\n' "$name"
        printf 'Command: `ddsperf -i %s -D %s %s` and `ddsperf -i %s -D %s %s`; %s frames, %s bytes.\n\n' \
            "$DOMAIN" "$DURATION" "${A[*]}" "$DOMAIN" "$DURATION" "${B[*]}" "$frames" "$(stat -c %s "$f")"
        note=$(scenario_note "$name")
        [ -z "$note" ] || printf '%s\n\n' "$note"
        printf '| id | submessage | count |\n|---|---|---|\n'
        sm_table "$f"
        printf '\n'
    done
} >"$OUT_DIR/README.md"
log "wrote $OUT_DIR/README.md"
du -ch "$OUT_DIR"/cyclone-*.pcapng | tail -n 1 >&2
