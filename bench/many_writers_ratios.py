#!/usr/bin/env python3
"""Issue 35's ratios from rcubatch_bench_many_writers' Google Benchmark JSON, per W and per
number of busy readers (real memb GPs only: the gp:1ms cases are left out).

  /usr/bin/python3 bench/many_writers_ratios.py bench/results/many_writers-STAMP.json [--counts]
  /usr/bin/python3 bench/many_writers_ratios.py RUN1.json RUN2.json RUN3.json   # each, then pooled

For each (readers, mode, W) the median objects/s over the repetitions (the lower middle of an even
count), then sync_combined / serialized and async / call_rcu of those medians — the must-show's
reading — with the spread of the per-repetition ratios (repetition i against repetition i).
Targets (issue 35): sync_combined / serialized >= 0.9x at W = 1, >= 1.0x at W = 2, 4, 8;
async / call_rcu >= 1.0x at W = 8. sync_combined is registry::unregister through the registry's
combining gate (registry_options::combining) since issue 35's r35-combine; before, it was
async_unregister::unregister (now sync_reclaimer, reported too when the JSON has it).

Beside it, readings of the same repetitions that say how much of a ratio is noise:
- serialized_twin / serialized (run with --mw_control: bench/run_many_writers.sh --issue35
  --control): serialized's code under two names, so any distance from 1.00x is the protocol's own
  noise — the floor the other ratios are read against (the "A/A control" section counts its cells
  below 1.0x and 0.9x).
- time-paired: the k-th repetition of one mode that ran against the k-th of the other in the order
  they ran (the case_start_s counter; Google Benchmark's JSON lists a case's repetitions together),
  and the median of those k ratios: each pair ran close in time, so a slow spell of the machine
  lands in both halves of a pair more often than in both medians.
- perm. p: the two-sided permutation test of the ratio of the medians (every split of the 2 x n
  repetitions into two groups of n): the share of splits whose ratio is at least as far from 1
  as the one observed. Small (< 0.05): the two modes' repetitions are unlikely one population.
- by state (with --mw_case_ping_pong's ping_pong_ns): the ratio of the medians over the cases
  that ran in the VM's fast cache-line state (ping-pong < 200 ns) only.
- GP-standardized (the sync modes, whose grace periods the bench counts and times): each case's
  time per object is its GPs per object x its mean GP + the rest (wall - GP time: the library's
  own path, the destroy, the writers' hand-offs and whatever else kept CPU 0 busy). With a busy
  reader on the writers' CPU the mean GP is what the scheduler decides — when that reader gets
  the CPU to leave its read-side section — and varies 10x from case to case in either mode, so
  the raw ratio is mostly the ratio of the two modes' GP draws. The standardized ratio is
  (den's median GPs per object x G + its median rest) / (num's ... ), G the median GP of both
  modes' cases: what each mode's own levers (GPs per object: combining's gain; its own time
  per object: its cost) give at the same GP. Beside it, the two modes' median GPs and the
  permutation p of their GP draws: a mode that made GPs longer (say, by handing the reader the
  CPU) shows there, not in the standardized ratio.
- identical code passes: with the control, the share of random 7/7 splits of a cell's 14
  serialized + serialized_twin cases (one code) whose ratios meet sync_combined's targets in
  every cell of the run — how often the must-show passes one run for a mode exactly as fast as
  serialized (cube it for three runs).
- pooled (several JSONs): per (readers, W), sync_combined's cases against serialized's and
  serialized_twin's of the same run: the share of pairs in which sync_combined's objects/s (mean
  GP, rest per object) is the larger, 0.50 meaning no difference, with a permutation p (labels
  shuffled within each run, so the runs' different loads do not count as a difference).
--counts adds the medians of the per-case counts (mean GP, the writers' context switches per
object) per mode, to compare what each mode's cases drew.
"""
import argparse
import itertools
import math
import statistics
import sys

from bench_json import load

PAIRS = [("sync_combined", "serialized"), ("sync_reclaimer", "serialized"), ("async", "call_rcu"),
         ("serialized_twin", "serialized")]
FAST_PING_PONG_NS = 200  # below: the VM's fast state (~60-130 ns); the slow one reads ~350-450 ns


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


def target_of(num, w):
    if num == "sync_combined":
        return ">= 0.9" if w == 1 else ">= 1.0"
    if num == "async":
        return ">= 1.0" if w == 8 else ""
    if num == "serialized_twin":
        return "1.00 (A/A)"
    return ""  # sync_reclaimer: for comparison only


def time_paired(a, b):
    """The k-th (by case_start_s) of a against the k-th of b: the ratios, or None without times."""
    if any(r.get("case_start_s") is None for r in a + b):
        return None
    a = sorted(a, key=lambda r: r["case_start_s"])
    b = sorted(b, key=lambda r: r["case_start_s"])
    return [x["objects_per_s"] / y["objects_per_s"] for x, y in zip(a, b)]


def permutation_p(a, b, limit=20000):
    """Two-sided: the share of the splits of a + b into len(a), len(b) whose ratio of lower
    medians is at least as far from 1 (in log) as a's over b's. Exact up to `limit` splits."""
    pooled = a + b
    observed = abs(math.log(lower_median(a) / lower_median(b)))
    n = len(pooled)
    splits = itertools.combinations(range(n), len(a))
    if math.comb(n, len(a)) > limit:
        import random
        rng = random.Random(35)
        splits = (tuple(sorted(rng.sample(range(n), len(a)))) for _ in range(limit))
    hits = total = 0
    for idx in splits:
        chosen = set(idx)
        x = [pooled[i] for i in idx]
        y = [pooled[i] for i in range(n) if i not in chosen]
        total += 1
        if abs(math.log(lower_median(x) / lower_median(y))) >= observed - 1e-12:
            hits += 1
    return hits / total


def fast_only(rows):
    return [r["objects_per_s"] for r in rows if 0 < r.get("ping_pong_ns", 0) < FAST_PING_PONG_NS]


def gp_per_object_us(r):
    return r["mean_gp_us"] * r["gps_per_object"]


def rest_us(r):
    """Wall time per object minus GP time per object (µs): what is not the grace period."""
    return 1e6 / r["objects_per_s"] - gp_per_object_us(r)


def standardized(rows):
    """The GP-standardized reading (module doc) of sync_combined and serialized_twin over serialized."""
    out = []
    for (readers, num, w) in sorted(rows, key=lambda k: (k[0], k[2], k[1])):
        if num not in ("sync_combined", "serialized_twin") or (readers, "serialized", w) not in rows:
            continue
        a, b = rows[(readers, num, w)], rows[(readers, "serialized", w)]
        if any(r.get("gps_per_object", -1) <= 0 or "mean_gp_us" not in r for r in a + b):
            continue
        g = statistics.median([r["mean_gp_us"] for r in a + b])
        med = lambda rs, f: statistics.median([f(r) for r in rs])
        t = lambda rs: med(rs, lambda r: r["gps_per_object"]) * g + med(rs, rest_us)
        gp_a, gp_b = [r["mean_gp_us"] for r in a], [r["mean_gp_us"] for r in b]
        out.append(f"| {readers} | {w} | {num} / serialized | {t(b) / t(a):.3f}x | {g:.0f} | "
                   f"{med(a, lambda r: r['gps_per_object']):.3f} / {med(b, lambda r: r['gps_per_object']):.3f} | "
                   f"{med(a, rest_us):.2f} / {med(b, rest_us):.2f} | "
                   f"{lower_median(gp_a):.0f} / {lower_median(gp_b):.0f} (p {permutation_p(gp_a, gp_b):.3f}) |")
    if out:
        print()
        print("GP-standardized (module doc): the ratio at the cell's median GP G; GPs per object, the rest "
              "(wall - GP time, µs per object) and the median GP (µs) of num / den, with the permutation p of "
              "the GP draws:")
        print("| readers | W | pair | standardized ratio | G (µs) | GPs per object | rest µs per object | median GP, µs |")
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(out))


def identical_code_passes(rows, rng, splits=2000):
    """The share of random 7/7 splits of each cell's serialized + serialized_twin cases (the same
    code) whose ratios of the medians meet the must-show's sync_combined targets in every cell of
    the run (>= 0.9 at W = 1, >= 1.0 at W = 2, 4, 8): how often a mode no faster than serialized
    passes one run. None without the control."""
    cells = [(k[0], k[2]) for k in rows if k[1] == "serialized" and (k[0], "serialized_twin", k[2]) in rows]
    if not cells:
        return None
    passed = 0
    for _ in range(splits):
        ok = True
        for readers, w in cells:
            pool = [r["objects_per_s"] for r in rows[(readers, "serialized", w)] + rows[(readers, "serialized_twin", w)]]
            rng.shuffle(pool)
            half = len(pool) // 2
            if lower_median(pool[:half]) / lower_median(pool[half:]) < (0.9 if w == 1 else 1.0):
                ok = False
                break
        passed += ok
    return passed / splits


def pooled(all_rows, field, rng, perms=2000):
    """Over several runs, per (readers, W): whether sync_combined's cases draw `field` from the
    same population as serialized's and serialized_twin's of the same run. The statistic: the
    share of (combined, baseline) case pairs of a run in which combined's is the larger (0.5:
    no difference), pooled over the runs; p: permuting the mode labels within each run."""
    def auc(groups):
        wins = total = 0
        for a, b in groups:
            for x in a:
                for y in b:
                    wins += (x > y) + 0.5 * (x == y)
                    total += 1
        return wins / total if total else float("nan")
    out = []
    keys = sorted({(k[0], k[2]) for rows in all_rows for k in rows if k[1] == "sync_combined"})
    for readers, w in keys:
        groups = []
        for rows in all_rows:
            a = [r[field] for r in rows.get((readers, "sync_combined", w), []) if field in r]
            b = [r[field] for m in ("serialized", "serialized_twin") for r in rows.get((readers, m, w), []) if field in r]
            if a and b:
                groups.append((a, b))
        if not groups:
            continue
        observed = auc(groups)
        extreme = 0
        for _ in range(perms):
            shuffled = []
            for a, b in groups:
                pool = a + b
                rng.shuffle(pool)
                shuffled.append((pool[:len(a)], pool[len(a):]))
            extreme += abs(auc(shuffled) - 0.5) >= abs(observed - 0.5) - 1e-12
        out.append((readers, w, observed, extreme / perms, sum(len(a) for a, _ in groups), sum(len(b) for _, b in groups)))
    return out


def read_rows(path):
    ctx, runs = load(path)
    rows = {}
    for r in runs:
        key = parse(r["name"])
        if key and "objects_per_s" in r and not r.get("error_occurred"):
            rows.setdefault(key, []).append(r)
    if not rows:
        sys.exit(f"{path}: no BM_ManyWriters results with real GPs")
    return ctx, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json", nargs="+", help="one run's JSON; several: each, then what they show pooled")
    ap.add_argument("--counts", action="store_true", help="also the medians of the per-case counts per mode")
    args = ap.parse_args()
    import random
    rng = random.Random(35)
    all_rows = []
    for path in args.json:
        ctx, rows = read_rows(path)
        all_rows.append(rows)
        report(path, ctx, rows, args.counts)
        p = identical_code_passes(rows, rng)
        if p is not None:
            print(f"- identical code (random 7/7 splits of serialized + serialized_twin) meets the must-show's "
                  f"sync_combined targets in every cell of this run in {100 * p:.1f} % of 2,000 splits")
        print()
    if len(all_rows) > 1:
        print(f"Pooled over {len(all_rows)} runs: sync_combined's cases against serialized's and serialized_twin's "
              "of the same run — the share of pairs in which sync_combined's is the larger (0.50: no difference; "
              "p: labels permuted within each run, 2,000 times):")
        print("| readers | W | objects/s: share (p) | mean GP: share (p) | rest per object: share (p) | cases |")
        print("|---|---|---|---|---|---|")
        for r in all_rows:
            for v in r.values():
                for case in v:
                    if case.get("gps_per_object", -1) > 0 and "mean_gp_us" in case:
                        case["rest_us"] = rest_us(case)
        ops, gp, rest = (pooled(all_rows, f, rng) for f in ("objects_per_s", "mean_gp_us", "rest_us"))
        for (readers, w, a, pa, na, nb), (_, _, g, pg, _, _), (_, _, x, px, _, _) in zip(ops, gp, rest):
            print(f"| {readers} | {w} | {a:.2f} ({pa:.3f}) | {g:.2f} ({pg:.3f}) | {x:.2f} ({px:.3f}) | {na} vs {nb} |")


def report(path, ctx, rows, counts):
    reps = {k: [r["objects_per_s"] for r in v] for k, v in rows.items()}
    has_state = any("ping_pong_ns" in r for v in rows.values() for r in v)
    print(f"{path}: run date {ctx.get('date', '?')}, load average {ctx.get('load_avg', '?')}, "
          f"CPUs: {ctx.get('mw_cpus', '?')}")
    state_col = " | fast state only (n) " if has_state else " "
    print(f"| readers | W | pair | ratio of the medians | per-repetition min..max | repetitions | target "
          f"| time-paired median (min..max) | perm. p{state_col}|")
    print("|---|---|---|---|---|---|---|---|---|" + ("---|" if has_state else ""))
    control = []
    for readers in sorted({k[0] for k in reps}):
        for num, den in PAIRS:
            for w in sorted({k[2] for k in reps}):
                a, b = reps.get((readers, num, w)), reps.get((readers, den, w))
                if not a or not b:
                    continue
                ratio = lower_median(a) / lower_median(b)
                per = [x / y for x, y in zip(a, b)]
                tp = time_paired(rows[(readers, num, w)], rows[(readers, den, w)])
                tp_text = f"{statistics.median(tp):.2f}x ({min(tp):.2f}..{max(tp):.2f})" if tp else "-"
                p = permutation_p(a, b)
                state = ""
                if has_state:
                    fa, fb = fast_only(rows[(readers, num, w)]), fast_only(rows[(readers, den, w)])
                    state = (f" {lower_median(fa) / lower_median(fb):.2f}x ({len(fa)}/{len(fb)}) |"
                             if fa and fb else f" - ({len(fa)}/{len(fb)}) |")
                print(f"| {readers} | {w} | {num} / {den} | {ratio:.2f}x | {min(per):.2f}..{max(per):.2f} | "
                      f"{len(a)}/{len(b)} | {target_of(num, w)} | {tp_text} | {p:.3f} |{state}")
                if num == "serialized_twin":
                    control.append((readers, w, ratio, per, tp))
    if control:
        print()
        print("A/A control (serialized_twin / serialized: the same code; every distance from 1.00x is noise):")
        medians = [c[2] for c in control]
        per_all = [x for c in control for x in c[3]]
        print(f"- ratio of the medians, {len(medians)} cells: {min(medians):.2f}..{max(medians):.2f}; "
              f"below 1.0x: {sum(m < 1.0 for m in medians)}, below 0.9x: {sum(m < 0.9 for m in medians)}, "
              f"above 1.1x: {sum(m > 1.1 for m in medians)}")
        print(f"- per-repetition ratios, {len(per_all)}: below 1.0x: {sum(x < 1.0 for x in per_all)}, "
              f"below 0.9x: {sum(x < 0.9 for x in per_all)}, range {min(per_all):.2f}..{max(per_all):.2f}")
        tps = [statistics.median(c[4]) for c in control if c[4]]
        if tps:
            print(f"- time-paired medians, {len(tps)} cells: {min(tps):.2f}..{max(tps):.2f}; "
                  f"below 1.0x: {sum(t < 1.0 for t in tps)}, below 0.9x: {sum(t < 0.9 for t in tps)}")
    standardized(rows)
    if counts:
        print()
        print("Medians per case: objects/s (k); mean GP (µs); the writers' voluntary / involuntary context "
              "switches per object; the writers' time on a CPU / runnable waiting for one per object (µs, "
              "schedstat); the co-located reader's (readers:2's second) share of the wall time on a CPU / "
              "runnable; ping-pong (ns) when probed:")
        print("| readers | W | mode | objects/s | mean GP | vol. sw. | invol. sw. | writer run | writer runqueue "
              "| reader2 CPU | reader2 runqueue | ping-pong | cases |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for (readers, m, w) in sorted(rows, key=lambda k: (k[0], k[2], k[1])):
            rs = rows[(readers, m, w)]

            def med(field, scale=1.0, fmt="{:.2f}"):
                xs = [r[field] for r in rs if field in r]
                return fmt.format(statistics.median(xs) * scale) if xs else "-"
            print(f"| {readers} | {w} | {m} | {med('objects_per_s', 1e-3, '{:.1f}')} | {med('mean_gp_us', 1, '{:.0f}')} | "
                  f"{med('writer_voluntary_switches_per_object')} | {med('writer_involuntary_switches_per_object', 1, '{:.3f}')} | "
                  f"{med('writer_run_us_per_object', 1, '{:.1f}')} | {med('writer_runqueue_us_per_object', 1, '{:.1f}')} | "
                  f"{med('reader2_cpu_share')} | {med('reader2_runqueue_share')} | "
                  f"{med('ping_pong_ns', 1, '{:.0f}')} | {len(rs)} |")

if __name__ == "__main__":
    main()
