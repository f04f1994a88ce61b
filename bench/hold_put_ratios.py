"""Ratios of bench_hold_put.cpp's kinds from one interleaved run (issue 26).

    python3 bench/hold_put_ratios.py hold_put.json

Prints, per thread count W, the median holds_per_s of each kind over the repetitions and the
ratios sharded/atomic and tracked/atomic, and the cost of one hold+put in ns at 1 thread.
"""
import statistics
import sys

from bench_json import load


def main(path):
    context, runs = load(path)
    rates = {}
    for r in runs:
        name = r["run_name"] if "run_name" in r else r["name"]
        # "BM_HoldPut/<kind>/real_time/threads:<W>" or "BM_HoldPut/<kind>/threads:<W>/real_time"
        parts = name.split("/")
        kind = parts[1]
        w = int([p for p in parts if p.startswith("threads:")][0].split(":")[1])
        rates.setdefault((kind, w), []).append(r["holds_per_s"])
    print(f"host {context.get('host_name', '?')}, {context.get('num_cpus', '?')} CPUs, {context.get('date', '?')}")
    print("W  kind     reps  median holds/s   ratio to atomic")
    for w in sorted({w for _, w in rates}):
        base = statistics.median(rates[("atomic", w)]) if ("atomic", w) in rates else None
        for kind in ("atomic", "sharded", "tracked"):
            if (kind, w) not in rates:
                continue
            med = statistics.median(rates[(kind, w)])
            ratio = f"{med / base:.2f}" if base else "-"
            print(f"{w:<2} {kind:<8} {len(rates[(kind, w)]):>4}  {med:>14.3e}   {ratio}")
    for kind in ("atomic", "sharded", "tracked"):
        if (kind, 1) in rates:
            print(f"1 thread, {kind}: {1e9 / statistics.median(rates[(kind, 1)]):.1f} ns per hold+put")


if __name__ == "__main__":
    main(sys.argv[1])
