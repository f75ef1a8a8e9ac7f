"""Ping: measures round-trip latency against pong.py and prints percentiles of the one-way
latency (RTT / 2, as perftest reports it).

    python pong.py &  python ping.py [--size 32] [--count 20000] [--warmup 2000] [--shm]
"""

import argparse
import statistics
import sys
import time

import ferrodds
from latency_type import OVERHEAD_BYTES, QOS, TestData, participant


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--domain", type=int, default=0)
    ap.add_argument("--size", type=int, default=32, help="sample size in bytes (perftest -dataLen)")
    ap.add_argument("--count", type=int, default=20000, help="measured round trips")
    ap.add_argument("--warmup", type=int, default=2000, help="round trips not measured")
    ap.add_argument("--shm", action="store_true", help="also use the shared-memory transport")
    args = ap.parse_args()
    if not OVERHEAD_BYTES <= args.size <= 65470 + OVERHEAD_BYTES:
        ap.error(f"--size must be within {OVERHEAD_BYTES}..{65470 + OVERHEAD_BYTES}")
    payload = bytes(args.size - OVERHEAD_BYTES)
    with participant(args.domain, args.shm) as dp:
        ping = ferrodds.Topic(dp, "ping", TestData)
        pong = ferrodds.Topic(dp, "pong", TestData)
        writer = ferrodds.DataWriter(dp, ping, qos=QOS)
        reader = ferrodds.DataReader(dp, pong, qos=QOS)
        if not (writer.wait_for_matched(1, timeout=30) and reader.wait_for_matched(1, timeout=30)):
            print("ping: no pong matched within 30 s", file=sys.stderr)
            return 2
        time.sleep(0.2)
        sample = TestData([0, 0, 0, 0], 0, 0, 0, 0, 0, payload)
        rtts = []
        clock = time.perf_counter_ns
        for i in range(args.warmup + args.count):
            sample.seq_num = i
            t0 = clock()
            writer.write(sample)
            got = []
            while not got:
                if not reader.wait(timeout=5.0):
                    print(f"ping: no echo of sample {i} within 5 s", file=sys.stderr)
                    return 2
                got = reader.take()
            t1 = clock()
            if got[-1].data.seq_num != i:
                print(f"ping: echo {got[-1].data.seq_num} for ping {i}", file=sys.stderr)
                return 2
            if i >= args.warmup:
                rtts.append((t1 - t0) / 1000.0)
        sample.latency_ping = -1
        writer.write(sample)  # tells pong to exit
        writer.wait_for_acknowledgments(timeout=5)
    rtts.sort()
    pct = lambda p: rtts[min(len(rtts) - 1, int(p / 100 * len(rtts)))]
    one_way = {p: pct(p) / 2 for p in (50, 90, 99, 99.9)}
    print(f"size {args.size} B, {len(rtts)} round trips: one-way latency (RTT/2) "
          f"p50 {one_way[50]:.1f} us, p90 {one_way[90]:.1f} us, p99 {one_way[99]:.1f} us, "
          f"p99.9 {one_way[99.9]:.1f} us, mean {statistics.fmean(rtts) / 2:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
