"""A FerroDDS Python peer in its own process for the two-process tests.

    proc_peer.py pub|sub DOMAIN TOPIC COUNT

pub: waits for a reader, writes COUNT TestDataKeyed samples (seq 0..COUNT-1), waits for
their acknowledgment, prints DONE. sub: prints READY, takes COUNT samples, checks their
order and payloads, prints GOT <n> and exits 0 (2 on timeout or a bad sample)."""

import sys
import time

import ferrodds
from conftest import RELIABLE, TestDataKeyed, loopback, payload_for


def main() -> int:
    role, domain, topic_name, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    deadline = time.monotonic() + 30
    with loopback(domain) as dp:
        topic = ferrodds.Topic(dp, topic_name, TestDataKeyed)
        if role == "pub":
            w = ferrodds.DataWriter(dp, topic, qos=ferrodds.Qos(
                reliability=ferrodds.Reliability.RELIABLE, history=ferrodds.KeepAll(),
                max_blocking_time=5.0))
            print("READY", flush=True)
            if not w.wait_for_matched(1, timeout=20):
                return 2
            for i in range(count):
                w.write(TestDataKeyed([2, 0, 0, 0], 7, i, 0, 0, -1, payload_for(i)))
            w.wait_for_acknowledgments(timeout=20)
            print("DONE", flush=True)
            time.sleep(0.2)
            return 0
        r = ferrodds.DataReader(dp, topic, qos=RELIABLE)
        print("READY", flush=True)
        n = 0
        while n < count and time.monotonic() < deadline:
            r.wait(timeout=0.5)
            for s in r.take():
                if s.data.seq_num != n or s.data.bin_data != payload_for(n):
                    print(f"BAD {s.data}", flush=True)
                    return 2
                n += 1
        print(f"GOT {n}", flush=True)
        return 0 if n == count else 2


if __name__ == "__main__":
    sys.exit(main())
