#!/usr/bin/env python3
"""Side-by-side table from a lab results directory (latency.csv, throughput.csv).

Usage: bench_table.py RESULTS_DIR

Prints one Markdown table: per size, FerroDDS / raw UDP / Cyclone ddsperf medians over the
repetitions with their min-max spread, and the ratios FerroDDS/raw and FerroDDS/ddsperf.
Latency: one-way median (p50) and p99 in microseconds, reliable, unbatched. Throughput:
samples/s, Mbit/s, lost samples and samples per UDP datagram (the lab's `udp_datagrams`
count), reliable (raw UDP has no reliability), FerroDDS with and without batching. Each
FerroDDS row is compared with what sends alike: unbatched with raw UDP (one sample per
datagram), batched with ddsperf (which packs samples into datagrams and has no switch).
"""
import csv
import statistics
import sys
from pathlib import Path

SYSTEMS = ("ferrodds", "raw", "cyclone")


def rows(path):
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("status") == "ok"]


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def collect(rs, key, batching=None):
    """{(system, size): [values]} for one column (ddsperf, which has no batching
    switch, is in both the batched and the unbatched selection)."""
    out = {}
    for r in rs:
        if batching is not None and r["system"] != "cyclone":
            if (r["batching"] == "true") != batching:
                continue
        v = num(r.get(key))
        if v is None:
            continue
        out.setdefault((r["system"], int(r["size_bytes"])), []).append(v)
    return out


def med(vals):
    return statistics.median(vals) if vals else None


def cell(vals, fmt):
    if not vals:
        return "–"
    m = med(vals)
    if len(vals) > 1 and min(vals) != max(vals):
        return f"{fmt(m)} ({fmt(min(vals))}–{fmt(max(vals))})"
    return fmt(m)


def ratio(a, b):
    if not a or not b:
        return "–"
    mb = med(b)
    if not mb:
        return "–"
    return f"{med(a) / mb:.2f}"


def us(v):
    return f"{v:.0f}"


def rate(v):
    if v >= 1e6:
        return f"{v / 1e6:.2f} M"
    if v >= 1e3:
        return f"{v / 1e3:.0f} k"
    return f"{v:.0f}"


def mbps(v):
    return f"{v:.0f}"


def lost(v):
    return f"{v:.0f}"


def per_dgram(v):
    return f"{v:.1f}"


def collect_per_datagram(rs, batching):
    """{(system, size): [samples per UDP datagram]} (runs with a datagram count)."""
    out = {}
    for r in rs:
        if r["system"] != "cyclone" and (r["batching"] == "true") != batching:
            continue
        t, d = num(r.get("total_samples")), num(r.get("udp_datagrams"))
        if t is None or not d:
            continue
        out.setdefault((r["system"], int(r["size_bytes"])), []).append(t / d)
    return out


def main():
    d = Path(sys.argv[1])
    lat = rows(d / "latency.csv")
    thr = rows(d / "throughput.csv")
    sizes = sorted({int(r["size_bytes"]) for r in lat + thr})
    out = []
    out.append(
        "| test | size (B) | metric | FerroDDS | raw UDP | Cyclone ddsperf | FerroDDS/raw | FerroDDS/ddsperf |"
    )
    out.append("|---|---:|---|---:|---:|---:|---:|---:|")
    for key, label in (("p50_us", "one-way median µs"), ("p99_us", "one-way p99 µs")):
        c = collect(lat, key)
        for s in sizes:
            f, r, y = (c.get((sys_, s), []) for sys_ in SYSTEMS)
            if not (f or r or y):
                continue
            out.append(
                f"| latency | {s} | {label} | {cell(f, us)} | {cell(r, us)} | {cell(y, us)} "
                f"| {ratio(f, r)} | {ratio(f, y)} |"
            )
    for batching, tag in ((False, ""), (True, " (FerroDDS and raw batching 8192 B)")):
        cs = collect(thr, "samples_per_s", batching)
        cm = collect(thr, "mbps", batching)
        cl = collect(thr, "lost_samples", batching)
        cd = collect_per_datagram(thr, batching)
        for s in sizes:
            f = cs.get(("ferrodds", s), [])
            if not f:
                continue
            r = cs.get(("raw", s), [])
            # ddsperf has no batching switch: its (only) figure is the comparison.
            y = cs.get(("cyclone", s), [])
            # Compared with what sends alike: unbatched with raw UDP, batched with ddsperf.
            def vs_raw(a, b):
                return ratio(a, b) if not batching else "–"

            def vs_dds(a, b):
                return ratio(a, b) if batching else "–"

            out.append(
                f"| throughput{tag} | {s} | samples/s | {cell(f, rate)} | {cell(r, rate)} "
                f"| {cell(y, rate)} | {vs_raw(f, r)} | {vs_dds(f, y)} |"
            )
            fm, rm = cm.get(("ferrodds", s), []), cm.get(("raw", s), [])
            ym = cm.get(("cyclone", s), [])
            out.append(
                f"| throughput{tag} | {s} | Mbit/s | {cell(fm, mbps)} | {cell(rm, mbps)} "
                f"| {cell(ym, mbps)} | {vs_raw(fm, rm)} | {vs_dds(fm, ym)} |"
            )
            fd, rd = cd.get(("ferrodds", s), []), cd.get(("raw", s), [])
            yd = cd.get(("cyclone", s), [])
            if fd or rd or yd:
                out.append(
                    f"| throughput{tag} | {s} | samples per UDP datagram | {cell(fd, per_dgram)} "
                    f"| {cell(rd, per_dgram)} | {cell(yd, per_dgram)} | | |"
                )
            fl, rl = cl.get(("ferrodds", s), []), cl.get(("raw", s), [])
            yl = cl.get(("cyclone", s), [])
            out.append(
                f"| throughput{tag} | {s} | lost samples | {cell(fl, lost)} | {cell(rl, lost)} "
                f"| {cell(yl, lost)} | | |"
            )
    # Batching gain at each batched size.
    cs_on = collect(thr, "samples_per_s", True)
    cs_off = collect(thr, "samples_per_s", False)
    for s in sizes:
        on, off = cs_on.get(("ferrodds", s), []), cs_off.get(("ferrodds", s), [])
        if on and off:
            out.append(
                f"| throughput | {s} | FerroDDS batching / no batching (samples/s) "
                f"| {ratio(on, off)} | | | | |"
            )
    print("\n".join(out))
    failed = []
    for name in ("latency.csv", "throughput.csv"):
        p = d / name
        if p.exists():
            with p.open(newline="") as f:
                failed += [r for r in csv.DictReader(f) if r.get("status") != "ok"]
    if failed:
        print()
        print(f"{len(failed)} run(s) failed or timed out (not in the table):")
        for r in failed:
            print(f"- {r['system']} {r['test']} {r['size_bytes']} B rep {r['repetition']}: "
                  f"{r.get('status')} {r.get('error', '')[:120]}")


if __name__ == "__main__":
    main()
