#!/usr/bin/env python3
"""Issue 35's ratios from rcubatch_bench_many_writers' Google Benchmark JSON, per W and per
number of busy readers (real memb GPs only: the gp:1ms cases are left out).

  /usr/bin/python3 bench/many_writers_ratios.py bench/results/many_writers-STAMP.json

For each (readers, mode, W) the median objects/s over the repetitions (the lower middle of an even
count), then sync_combined / serialized and async / call_rcu of those medians, with the spread of
the per-repetition ratios (repetition i against repetition i; with random interleaving they ran
side by side). Targets (issue 35): sync_combined / serialized >= 0.9x at W = 1, >= 1.0x at
W = 2, 4, 8; async / call_rcu >= 1.0x at W = 8. sync_combined is registry::unregister through the
registry's combining gate (registry_options::combining) since issue 35's r35-combine; before, it was
async_unregister::unregister (now sync_reclaimer, reported too when the JSON has it).
"""
import argparse
import statistics
import sys

from bench_json import load

PAIRS = [("sync_combined", "serialized"), ("sync_reclaimer", "serialized"), ("async", "call_rcu")]


def parse(name):
    """BM_ManyWriters/memb[/readers:2]/<mode>/threads:<W> -> (readers, mode, W); None otherwise."""
    parts = name.split("/")
    if parts[0] != "BM_ManyWriters" or "gp:1ms" in parts:
        return None
    readers = 1
    if parts[2].startswith("readers:"):
        readers = int(parts[2].split(":")[1])
        parts = parts[:2] + parts[3:]
    return readers, parts[2], int(parts[-1].split(":")[1])


def lower_median(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json")
    args = ap.parse_args()
    ctx, runs = load(args.json)
    reps = {}
    for r in runs:
        key = parse(r["name"])
        if key and "objects_per_s" in r and not r.get("error_occurred"):
            reps.setdefault(key, []).append(r["objects_per_s"])
    if not reps:
        sys.exit(f"{args.json}: no BM_ManyWriters results with real GPs")
    print(f"{args.json}: run date {ctx.get('date', '?')}, load average {ctx.get('load_avg', '?')}, "
          f"CPUs: {ctx.get('mw_cpus', '?')}")
    print("| readers | W | pair | ratio of the medians | per-repetition min..max | repetitions | target |")
    print("|---|---|---|---|---|---|---|")
    for readers in sorted({k[0] for k in reps}):
        for num, den in PAIRS:
            for w in sorted({k[2] for k in reps}):
                a, b = reps.get((readers, num, w)), reps.get((readers, den, w))
                if not a or not b:
                    continue
                ratio = lower_median(a) / lower_median(b)
                per = [x / y for x, y in zip(a, b)]
                if num == "sync_combined":
                    target = ">= 0.9" if w == 1 else ">= 1.0"
                elif num == "sync_reclaimer":
                    target = ""  # for comparison only
                else:
                    target = ">= 1.0" if w == 8 else ""
                print(f"| {readers} | {w} | {num} / {den} | {ratio:.2f}x | {min(per):.2f}..{max(per):.2f} | "
                      f"{len(a)}/{len(b)} | {target} |")


if __name__ == "__main__":
    main()
