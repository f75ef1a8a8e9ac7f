"""Cyclone DDS (Python binding) peer for the FerroDDS interop tests.

One process plays one role on one topic:

  peer.py sub --type keyed --topic T --count 1000 [--reliable] [--transient-local]
  peer.py pub --type unkeyed --topic T --count 1000 [--reliable] [--transient-local]

Types (must match the Rust side, see crates/ferrodds/tests/interop_cyclone.rs):
  shape    -> OMG ShapeType {@key string<128> color; long x; long y; long shapesize}
  keyed    -> perftest TestDataKeyed_t (@key octet key[4], ...)
  unkeyed  -> perftest TestData_t
  large    -> perftest TestDataLarge_t (unbounded payload; use --size for fragmented samples)

Output protocol (stdout, one line each, flushed):
  READY                         entities created
  MATCHED <n>                   publication/subscription matched count changed
  SAMPLE <fields...>            a received valid sample (sub)
  DISPOSED <key>                an instance was disposed (sub; key = color or key number)
  WROTE <n>                     all samples written (pub)
  ACKED                         wait_for_acks succeeded (pub, reliable)
  DONE <count>                  normal end
Exit status 0 on success, 2 on timeout before --count samples/matches.

The CYCLONEDDS_URI environment variable must point to a loopback-only
configuration (interop/cyclone/cyclone-loopback.xml); the script refuses to
run without it so Cyclone never multicasts on a real interface.
"""

import argparse
import os
import sys
import time
from dataclasses import dataclass

from cyclonedds.core import InstanceState, Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl import annotations as annotate
from cyclonedds.idl import types
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration


@dataclass
@annotate.appendable
class ShapeType(IdlStruct, typename="ShapeType"):
    color: types.bounded_str[128]
    annotate.key("color")
    x: types.int32
    y: types.int32
    shapesize: types.int32


@dataclass
@annotate.final
class TestDataKeyed(IdlStruct, typename="TestDataKeyed_t"):
    key: types.array[types.uint8, 4]
    annotate.key("key")
    entity_id: types.int32
    seq_num: types.uint32
    timestamp_sec: types.int32
    timestamp_usec: types.uint32
    latency_ping: types.int32
    bin_data: types.sequence[types.uint8, 65470]


@dataclass
@annotate.final
class TestData(IdlStruct, typename="TestData_t"):
    key: types.array[types.uint8, 4]
    entity_id: types.int32
    seq_num: types.uint32
    timestamp_sec: types.int32
    timestamp_usec: types.uint32
    latency_ping: types.int32
    bin_data: types.sequence[types.uint8, 65470]


PAYLOAD_SIZE = None  # set by --size: fixed payload length instead of seq % 64


def payload_for(seq):
    """Deterministic payload: length seq % 64 (or --size), bytes (seq + i) % 256."""
    n = seq % 64 if PAYLOAD_SIZE is None else PAYLOAD_SIZE
    return [(seq + i) % 256 for i in range(n)]


@dataclass
@annotate.final
class TestDataLarge(IdlStruct, typename="TestDataLarge_t"):
    key: types.array[types.uint8, 4]
    entity_id: types.int32
    seq_num: types.uint32
    timestamp_sec: types.int32
    timestamp_usec: types.uint32
    latency_ping: types.int32
    bin_data: types.sequence[types.uint8]


def make_sample(kind, i, instances, color):
    if kind == "shape":
        if instances > 1:
            color = f"{color}{i % instances}"
        return ShapeType(color=color, x=i % 250, y=(2 * i) % 250, shapesize=30)
    inst = i % instances
    key = [inst & 0xFF, (inst >> 8) & 0xFF, (inst >> 16) & 0xFF, (inst >> 24) & 0xFF]
    cls = {"keyed": TestDataKeyed, "unkeyed": TestData, "large": TestDataLarge}[kind]
    return cls(key=key, entity_id=7, seq_num=i, timestamp_sec=0, timestamp_usec=0,
               latency_ping=-1, bin_data=payload_for(i))


def describe(kind, s):
    if kind == "shape":
        return f"{s.color} {s.x} {s.y} {s.shapesize}"
    key = s.key[0] | (s.key[1] << 8) | (s.key[2] << 16) | (s.key[3] << 24)
    ok = list(s.bin_data) == payload_for(s.seq_num)
    return f"{key} {s.seq_num} {s.entity_id} {len(s.bin_data)} {'ok' if ok else 'BAD'}"


def describe_key(kind, k):
    if kind == "shape":
        return k.color
    return str(k.key[0] | (k.key[1] << 8) | (k.key[2] << 16) | (k.key[3] << 24))


def qos_for(args, writer):
    policies = [
        Policy.Reliability.Reliable(duration(seconds=1)) if args.reliable
        else Policy.Reliability.BestEffort,
        Policy.Durability.TransientLocal if args.transient_local else Policy.Durability.Volatile,
        Policy.History.KeepAll if args.keep_all else Policy.History.KeepLast(args.depth),
        Policy.DataRepresentation(use_xcdrv2_representation=True) if args.xcdr2
        else Policy.DataRepresentation(use_cdrv0_representation=True),
    ]
    if writer and args.transient_local:
        # Cyclone serves late joiners from the DURABILITY_SERVICE history (default
        # KEEP_LAST 1); make it match the writer history.
        policies.append(Policy.DurabilityService(
            cleanup_delay=0,
            history=Policy.History.KeepAll if args.keep_all else Policy.History.KeepLast(args.depth),
            max_samples=-1, max_instances=-1, max_samples_per_instance=-1))
    return Qos(*policies)


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    if "CYCLONEDDS_URI" not in os.environ:
        sys.exit("CYCLONEDDS_URI must point to interop/cyclone/cyclone-loopback.xml")
    p = argparse.ArgumentParser()
    p.add_argument("role", choices=["pub", "sub"])
    p.add_argument("--type", dest="kind", choices=["shape", "keyed", "unkeyed", "large"],
                   required=True)
    p.add_argument("--size", type=int, default=None,
                   help="fixed payload size in bytes (default: seq % 64)")
    p.add_argument("--topic", required=True)
    p.add_argument("--domain", type=int, default=0)
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--instances", type=int, default=1)
    p.add_argument("--color", default="BLUE")
    p.add_argument("--reliable", action="store_true")
    p.add_argument("--transient-local", action="store_true")
    p.add_argument("--keep-all", action="store_true")
    p.add_argument("--depth", type=int, default=1)
    p.add_argument("--xcdr2", action="store_true",
                   help="use XCDR2 (DATA_REPRESENTATION [XCDR2]) instead of XCDR1")
    p.add_argument("--disposals", type=int, default=0,
                   help="sub: also wait for this many disposed-instance notifications")
    p.add_argument("--dispose", action="store_true", help="pub: dispose every instance at the end")
    p.add_argument("--no-wait-match", action="store_true",
                   help="pub: write without waiting for a matched reader")
    p.add_argument("--linger", type=float, default=1.0, help="seconds to stay alive after writing")
    p.add_argument("--timeout", type=float, default=30.0)
    args = p.parse_args()
    global PAYLOAD_SIZE
    PAYLOAD_SIZE = args.size

    cls = {"shape": ShapeType, "keyed": TestDataKeyed, "unkeyed": TestData,
           "large": TestDataLarge}[args.kind]
    dp = DomainParticipant(args.domain)
    topic = Topic(dp, args.topic, cls)
    deadline = time.monotonic() + args.timeout

    if args.role == "sub":
        reader = DataReader(dp, topic, qos=qos_for(args, False))
        out("READY")
        received = 0
        disposed = 0
        seen = set()
        disposed_keys = set()
        last_matched = 0
        while time.monotonic() < deadline and (received < args.count
                                               or disposed < args.disposals):
            m = reader.get_subscription_matched_status().current_count
            if m != last_matched:
                last_matched = m
                out(f"MATCHED {m}")
            got = False
            if args.disposals > 0:
                # Keep samples in the reader (read, not take): Cyclone reports a disposal as
                # the instance state of the instance's samples.
                for s in reader.read(N=100000):
                    info = s.sample_info
                    if info.valid_data:
                        key = describe_key(args.kind, s)
                        ident = (key, s.x if args.kind == "shape" else s.seq_num)
                        if ident not in seen:
                            seen.add(ident)
                            got = True
                            received += 1
                            out("SAMPLE " + describe(args.kind, s))
                    else:
                        key = describe_key(args.kind, s.key_sample)
                    if (info.instance_state == InstanceState.NotAliveDisposed
                            and key not in disposed_keys):
                        disposed_keys.add(key)
                        disposed += 1
                        got = True
                        out("DISPOSED " + key)
            else:
                for s in reader.take(N=256):
                    got = True
                    info = s.sample_info
                    if info.valid_data:
                        received += 1
                        out("SAMPLE " + describe(args.kind, s))
                    elif info.instance_state == InstanceState.NotAliveDisposed:
                        disposed += 1
                        out("DISPOSED " + describe_key(args.kind, s.key_sample))
            if not got:
                time.sleep(0.002)
        out(f"DONE {received}")
        sys.exit(0 if received >= args.count and disposed >= args.disposals else 2)

    writer = DataWriter(dp, topic, qos=qos_for(args, True))
    out("READY")
    if not args.no_wait_match:
        while writer.get_publication_matched_status().current_count < 1:
            if time.monotonic() > deadline:
                out("DONE 0")
                sys.exit(2)
            time.sleep(0.01)
        out(f"MATCHED {writer.get_publication_matched_status().current_count}")
        # give the remote reader a moment to see the match too
        time.sleep(0.3)
    for i in range(args.count):
        writer.write(make_sample(args.kind, i, args.instances, args.color))
        if not args.reliable and i % 50 == 49:
            time.sleep(0.002)  # best effort: do not overrun the receiver
    out(f"WROTE {args.count}")
    if args.dispose:
        for i in range(min(args.instances, args.count)):
            writer.dispose(make_sample(args.kind, i, args.instances, args.color))
    if args.reliable:
        try:
            writer.wait_for_acks(duration(seconds=max(1.0, deadline - time.monotonic())))
            out("ACKED")
        except Exception as e:  # noqa: BLE001 - report and go on
            out(f"ACKFAIL {e}")
    time.sleep(args.linger)
    out(f"DONE {args.count}")


if __name__ == "__main__":
    main()
