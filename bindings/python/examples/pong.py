"""Pong: echoes every ping sample back (run before ping.py).

    python pong.py [--domain 0] [--shm] [--timeout 60]
"""

import argparse
import time

import ferrodds
from latency_type import QOS, TestData, participant


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--domain", type=int, default=0)
    ap.add_argument("--shm", action="store_true", help="also use the shared-memory transport")
    ap.add_argument("--timeout", type=float, default=60.0, help="exit after this many idle seconds")
    args = ap.parse_args()
    with participant(args.domain, args.shm) as dp:
        ping = ferrodds.Topic(dp, "ping", TestData)
        pong = ferrodds.Topic(dp, "pong", TestData)
        reader = ferrodds.DataReader(dp, ping, qos=QOS)
        writer = ferrodds.DataWriter(dp, pong, qos=QOS)
        print("pong: ready", flush=True)
        idle_since = time.monotonic()
        echoed = 0
        while time.monotonic() - idle_since < args.timeout:
            if not reader.wait(timeout=0.5):
                continue
            for s in reader.take():
                if s.data is None:
                    continue
                if s.data.latency_ping < 0:  # the ping's "done" marker
                    print(f"pong: echoed {echoed} samples", flush=True)
                    return
                writer.write(s.data)
                echoed += 1
            idle_since = time.monotonic()


if __name__ == "__main__":
    main()
