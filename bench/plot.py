#!/usr/bin/python3
"""Plots and tables from one rcubatch_bench JSON run (Google Benchmark format).

    /usr/bin/python3 bench/plot.py bench/results/quick-<stamp>.json --out-dir bench \
        --summary bench/results/quick-<stamp>.md

Writes <out-dir>/teardown_ns_per_object.png (ns/object against N, log-log, one line per method,
one panel per flavor, one reader), <out-dir>/teardown_ratios.png (each method's cost over
rollback_many's, urcu-memb, one reader) and a Markdown summary with the issue's goal table. Every
figure comes from the one JSON file given, so every ratio comes from one run.

Every ratio is computed here, from the JSON's per-repetition rows (Google Benchmark's
--benchmark_repetitions; bench/run.sh passes it with --benchmark_enable_random_interleaving, so
the repetitions of all cases are shuffled together). Which median where (one definition,
examples/common/median.hpp: the middle value, the mean of the two middle ones for an even count;
Python's statistics.median and Google Benchmark's median aggregate are the same):
  - a case's per-object cost: the median over its repetitions of each repetition's mean
    (counter ns_per_obj), unless --mean (the mean over repetitions) is given; on this shared
    2-vCPU VM a grace period now and then waits a whole scheduler slice for a reader preempted
    inside its read-side section, and the mean carries those outliers. Tables show both;
  - a ratio between two cases (legacy / rollback_many, ...): the ratio of their medians;
  - the goal case's rollback_many / hand floor: the median of the per-pair ratios (one pair per
    repetition), over all pairs, the undisturbed ones, and the fast and slow pairs.
Uses Debian's python3-matplotlib; run it with /usr/bin/python3.
"""
import argparse
import math
import re
import statistics
import sys
from collections import defaultdict

from bench_json import load

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

TEARDOWN = re.compile(r"^BM_Teardown_(\w+)/([^/]+)/readers:(\d+)/N:(\d+)")
METHODS = ["RollbackMany", "Floor", "HandFloor", "Legacy1GP", "Legacy3GP", "CallRcuBarrier", "LibcdsRetire", "DpdkDeferQueue"]
PEERS = {"LibcdsRetire", "DpdkDeferQueue"}
LABELS = {
    "RollbackMany": "rollback_many (rcubatch)",
    "Floor": "floor (GPs stubbed)",
    "HandFloor": "by hand, no library (the floor)",
    "Legacy1GP": "legacy, 1 GP/object",
    "Legacy3GP": "legacy, 3 GPs/object",
    "CallRcuBarrier": "call_rcu + rcu_barrier",
    "LibcdsRetire": "libcds general_buffered retire",
    "DpdkDeferQueue": "DPDK rte_rcu_qsbr defer queue",
}
STYLE = {
    "RollbackMany": dict(color="C0", marker="o", lw=2.2),
    "Floor": dict(color="C7", marker=".", ls="--"),
    "HandFloor": dict(color="k", marker="x", ls="--"),
    "Legacy1GP": dict(color="C3", marker="v"),
    "Legacy3GP": dict(color="C1", marker="^"),
    "CallRcuBarrier": dict(color="C2", marker="s"),
    "LibcdsRetire": dict(color="C4", marker="D", ls=":"),
    "DpdkDeferQueue": dict(color="C5", marker="P", ls=":"),
}
FLAVORS = ["memb", "qsbr", "mb", "bp"]


def by_case(runs):
    """{run_name: [per-repetition rows]} in the order the cases first appear."""
    out = defaultdict(list)
    for b in runs:
        if not b.get("error_occurred"):
            out[b.get("run_name", b["name"])].append(b)
    return out


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def teardown_table(runs, use_mean):
    """{(method, flavor, readers, n): row} — flavor is the liburcu flavor, or the peer's own name."""
    out = {}
    for name, reps in by_case(runs).items():
        m = TEARDOWN.match(name)
        if not m:
            continue
        method, flavor, readers, n = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        per_rep = [b.get("ns_per_obj") for b in reps]
        mean, med = statistics.fmean(per_rep), statistics.median(per_rep)
        first = reps[0]
        out[(method, flavor, readers, n)] = dict(
            mean=mean, median=med, value=mean if use_mean else med, repetitions=len(reps),
            gps=first.get("gps_per_batch", -1), iterations=first.get("iterations"),
            gp_wait_us=median(b.get("gp_wait_us") for b in reps),
            drain_destroy_us=median(b.get("drain_destroy_us") for b in reps),
            hooks_us=median(b.get("hooks_us") for b in reps),
            reader_lookups_per_s=median(b.get("reader_lookups_per_s") for b in reps), name=name)
    return out


def lookup(table, method, flavor, readers, n):
    if method in PEERS:
        for (m, _f, r, nn), row in table.items():
            if m == method and r == readers and nn == n:
                return row
        return None
    return table.get((method, flavor, readers, n))


def series(table, method, flavor, readers):
    pts = []
    for (m, f, r, n), row in table.items():
        if m != method or r != readers:
            continue
        if method not in PEERS and f != flavor:
            continue
        pts.append((n, row["value"]))
    return sorted(pts)


def plot_ns_per_object(table, path, readers, stat):
    fig, axes = plt.subplots(2, 2, figsize=(12, 9), sharex=True)
    for ax, flavor in zip(axes.flat, FLAVORS):
        for method in METHODS:
            pts = series(table, method, flavor, readers)
            if not pts:
                continue
            xs, ys = zip(*pts)
            ax.plot(xs, ys, label=LABELS[method], **STYLE[method])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"urcu-{flavor}, {readers} reader thread(s)")
        ax.set_xlabel("N objects per teardown")
        ax.set_ylabel(f"ns per object ({stat}, until all freed)")
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=9)
    fig.suptitle("Tearing down N registry objects: time per object (peers use their own read side)")
    fig.tight_layout(rect=(0, 0.07, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_ratios(table, path, flavor, readers, stat):
    fig, ax = plt.subplots(figsize=(9, 6))
    base = dict(series(table, "RollbackMany", flavor, readers))
    goals = {"Floor": None, "HandFloor": None, "Legacy3GP": 1000, "CallRcuBarrier": 20, "LibcdsRetire": 2, "DpdkDeferQueue": 2}
    for method in METHODS:
        if method == "RollbackMany":
            continue
        pts = [(n, v / base[n]) for n, v in series(table, method, flavor, readers) if n in base and base[n] > 0]
        if not pts:
            continue
        xs, ys = zip(*pts)
        ax.plot(xs, ys, label=f"{LABELS[method]} / rollback_many", **STYLE[method])
        goal = goals.get(method)
        if goal:
            ax.axhline(goal, color=STYLE[method]["color"], alpha=0.35, lw=1)
    ax.axhline(1 / 1.25, color="C7", alpha=0.35, lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N objects per teardown")
    ax.set_ylabel(f"time until all freed, relative to rollback_many ({stat})")
    ax.set_title(f"Cost relative to rollback_many — urcu-{flavor}, {readers} reader; faint lines: the issue's goals")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fmt(x, digits=3):
    if x is None:
        return "–"
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return "–"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def summary(ctx, runs, table, path, src):
    L = []
    L.append(f"Source: `{src}`  ")
    L.append(f"Date (from the run): {ctx.get('date', '?')}; mode: {ctx.get('rcubatch_mode', '?')}; "
             f"host: {ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz; "
             f"load average at start: {', '.join(fmt(x) for x in ctx.get('load_avg', []))}  ")
    pps = [(b["name"].split("/")[1], b.get("roundtrip_ns"), b.get("roundtrip_ns_mean"))
           for b in runs if b["name"].startswith("BM_System_PingPong")]
    L.append("Cross-core ping-pong round trip, ns — best round of 64 trips (the cache-line state) / mean "
             "(includes waits for a descheduled thread): at start "
             f"{fmt(float(ctx.get('ping_pong_ns_at_start', 'nan')))} / {fmt(float(ctx.get('ping_pong_ns_mean_at_start', 'nan')))}; "
             + "; ".join(f"{w} {fmt(v)} / {fmt(m)}" for w, v, m in pps) + "  ")
    L.append(f"DPDK EAL: {ctx.get('dpdk_eal', '?')}")
    L.append("")

    # --- the goal case: rollback_many / hand floor, one adjacent pair per repetition ---
    pairs = [b for b in runs if b["name"].startswith("BM_Goal_RollbackVsHandFloor/memb")]
    if pairs:
        ratios = [b["ratio_rollback_over_hand_floor"] for b in pairs]
        calm = [b for b in pairs if not b.get("disturbed")]
        fast = [b["ratio_rollback_over_hand_floor"] for b in calm if b.get("fast")]
        slow = [b["ratio_rollback_over_hand_floor"] for b in calm if b.get("slow")]
        L.append("### Goal case: rollback_many / hand-written floor (urcu-memb, 1 reader, N = 10,000)")
        L.append("")
        L.append(f"`{pairs[0]['run_name'].split('/iterations')[0]}`: {len(pairs)} pairs (one per repetition: one batch of "
                 "each, adjacent, random order, same registry and readers). `ratio_rollback_over_hand_floor` is the median "
                 "of the per-pair ratios.")
        L.append("")
        L.append("| pairs | count | rollback_many ns/object | hand floor ns/object | ratio_rollback_over_hand_floor (median) | goal |")
        L.append("|---|---|---|---|---|---|")
        for label, rows, goal in [("all", pairs, "≤ 1.25 fast"), ("undisturbed", calm, ""),
                                  ("undisturbed, fast state", [b for b in calm if b.get("fast")], "≤ 1.25"),
                                  ("undisturbed, slow state", [b for b in calm if b.get("slow")], "≤ 1.35")]:
            if not rows:
                L.append(f"| {label} | 0 | | | | {goal} |")
                continue
            L.append(f"| {label} | {len(rows)} | {fmt(median(b['rollback_many_ns_per_obj'] for b in rows))} | "
                     f"{fmt(median(b['hand_floor_ns_per_obj'] for b in rows))} | "
                     f"**{fmt(median(b['ratio_rollback_over_hand_floor'] for b in rows))}** | {goal} |")
        L.append("")
        L.append(f"Disturbed (writer preempted, or a GP wait over 1 ms): {len(pairs) - len(calm)}; fast/slow state: "
                 f"ping-pong below/at least 200 ns before and after the pair ({len(fast)} fast, {len(slow)} slow, "
                 f"{len(calm) - len(fast) - len(slow)} mixed among the undisturbed). Over all pairs: median {fmt(median(ratios))}.")
        L.append("")

    # --- the goals, separate cases ---
    n, r, f = 10_000, 1, "memb"
    rb = lookup(table, "RollbackMany", f, r, n)
    L.append(f"### The goal set as separate cases (urcu-{f}, {r} reader, N = {n:,}): ratios of medians over repetitions")
    L.append("")
    L.append("| method | ns/object median | ns/object mean | repetitions | GPs/batch | ratio (medians) | ratio (means) | goal | met (medians) |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    goals = {
        "Floor": ("rollback_many / floor", None, "–"),
        "HandFloor": ("rollback_many / hand floor", lambda x: x <= 1.25, "≤ 1.25"),
        "Legacy1GP": ("legacy-1GP / rollback_many", None, "–"),
        "Legacy3GP": ("legacy-3GP / rollback_many", lambda x: x >= 1000, "≥ 1000"),
        "CallRcuBarrier": ("call_rcu+barrier / rollback_many", lambda x: x >= 20, "≥ 20"),
        "LibcdsRetire": ("libcds / rollback_many", lambda x: x >= 2, "≥ 2"),
        "DpdkDeferQueue": ("DPDK / rollback_many", lambda x: x >= 2, "≥ 2"),
    }
    for method in METHODS:
        row = lookup(table, method, f, r, n)
        if row is None:
            L.append(f"| {LABELS[method]} | not run | | | | | | | |")
            continue
        if method == "RollbackMany":
            L.append(f"| {LABELS[method]} | {fmt(row['median'])} | {fmt(row['mean'])} | {row['repetitions']} | {fmt(row['gps'])} | 1 | 1 | | |")
            continue
        what, ok, goal = goals[method]
        if method in ("Floor", "HandFloor"):
            rm, rmean = rb["median"] / row["median"], rb["mean"] / row["mean"]
        else:
            rm, rmean = row["median"] / rb["median"], row["mean"] / rb["mean"]
        met = "–" if ok is None else ("yes" if ok(rm) else "**no**")
        gps = "stubbed" if method == "Floor" else fmt(row["gps"]) if row["gps"] >= 0 else "n/a"
        L.append(f"| {LABELS[method]} | {fmt(row['median'])} | {fmt(row['mean'])} | {row['repetitions']} | {gps} | {what} = {fmt(rm)} | {fmt(rmean)} | {goal} | {met} |")
    if rb and rb.get("gp_wait_us") is not None:
        L.append("")
        L.append(f"rollback_many's time per batch at this point (medians over repetitions of the means): grace-period waits {fmt(rb['gp_wait_us'])} µs, "
                 f"ref drain + destroy {fmt(rb['drain_destroy_us'])} µs, hooks {fmt(rb['hooks_us'])} µs, "
                 f"whole batch {fmt(rb['mean'] * n / 1e3)} µs.")
    L.append("")

    # --- scaling ---
    L.append("### Per-object cost at N = 1e6 over N = 1e3 (goal ≤ 1.5, one reader)")
    L.append("")
    L.append("| method | flavor | 1e3 median | 1e6 median | ratio (median) | ratio (mean) |")
    L.append("|---|---|---|---|---|---|")
    for method in ["RollbackMany", "Floor", "HandFloor", "CallRcuBarrier", "LibcdsRetire", "DpdkDeferQueue"]:
        for fl in (FLAVORS if method not in PEERS else ["-"]):
            a, b = lookup(table, method, fl, 1, 1000), lookup(table, method, fl, 1, 1_000_000)
            if a and b:
                L.append(f"| {LABELS[method]} | {fl} | {fmt(a['median'])} | {fmt(b['median'])} | "
                         f"{fmt(b['median'] / a['median'])} | {fmt(b['mean'] / a['mean'])} |")
    L.append("")

    # --- rollback_many over the hand-written floor at every N (separate cases: indicative only) ---
    rows = []
    for nn in sorted({k[3] for k in table if k[0] == "HandFloor" and k[1] == "memb" and k[2] == 1}):
        a, b = lookup(table, "RollbackMany", "memb", 1, nn), lookup(table, "HandFloor", "memb", 1, nn)
        if a and b:
            rows.append(f"| {nn:,} | {fmt(a['median'])} | {fmt(b['median'])} | {fmt(a['median'] / b['median'])} |")
    if rows:
        L.append("### rollback_many over the hand-written floor by N (urcu-memb, 1 reader; goal at 1e6: ≤ 1.3)")
        L.append("")
        L.append("Separate cases (ratio of medians): the goal case's per-pair ratio is the trustworthy figure at 1e4.")
        L.append("")
        L.append("| N | rollback_many ns/object | hand floor ns/object | ratio (medians) |")
        L.append("|---|---|---|---|")
        L.extend(rows)
        L.append("")

    # --- per flavor tables ---
    for fl in FLAVORS:
        ns = sorted({k[3] for k in table if k[1] == fl and k[2] == 1})
        if not ns:
            continue
        L.append(f"### urcu-{fl}, 1 reader: ns per object (median over repetitions; mean in parentheses)")
        L.append("")
        L.append("| N | " + " | ".join(LABELS[m] for m in METHODS) + " |")
        L.append("|---|" + "---|" * len(METHODS))
        for nn in ns:
            cells = []
            for m in METHODS:
                row = lookup(table, m, fl, 1, nn)
                cells.append(f"{fmt(row['median'])} ({fmt(row['mean'])})" if row else "–")
            L.append(f"| {nn:,} | " + " | ".join(cells) + " |")
        L.append("")

    # --- reader counts ---
    L.append("### Reader threads, N = 10,000: ns per object (median)")
    L.append("")
    L.append("| method | flavor | 0 readers | 1 reader | 2 readers |")
    L.append("|---|---|---|---|---|")
    for m in METHODS:
        for fl in (FLAVORS if m not in PEERS else ["-"]):
            cells = [lookup(table, m, fl, rr, 10_000) for rr in (0, 1, 2)]
            if sum(c is not None for c in cells) >= 2:
                L.append(f"| {LABELS[m]} | {fl} | " + " | ".join(fmt(c["median"]) if c else "–" for c in cells) + " |")
    L.append("")

    # --- extras ---
    L.append("### Readers, writer lock, ref drain")
    L.append("")
    L.append("| case | figures |")
    L.append("|---|---|")
    for b in runs:
        nm = b["name"]
        if nm.startswith("BM_Readers_Throughput"):
            L.append(f"| `{nm.split('/iterations')[0]}` | {fmt(b.get('lookups_per_s_per_reader', 0) / 1e6)} M lookups/s per reader; "
                     f"{fmt(b.get('batches_per_s'))} batches/s |")
        elif nm.startswith("BM_WriterLock_Hold"):
            L.append(f"| `{nm.split('/iterations')[0]}` | lock held {fmt(b.get('lock_hold_us'))} µs of a "
                     f"{fmt(b.get('batch_elapsed_us'))} µs batch ({fmt(100 * b.get('lock_hold_fraction', 0))} %) |")
        elif nm.startswith("BM_RefDrain_WakeLatency"):
            L.append(f"| `{nm.split('/iterations')[0]}` | last put → destroyed {fmt(b.get('wake_latency_us'))} µs (mean); "
                     f"longest drain wait {fmt(b.get('longest_drain_wait_us'))} µs |")
    L.append("")
    with open(path, "w") as fh:
        fh.write("\n".join(L))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json")
    ap.add_argument("--out-dir", default="bench")
    ap.add_argument("--summary")
    ap.add_argument("--mean", action="store_true", help="plot means instead of medians")
    ap.add_argument("--suffix", default="", help="appended to the PNG names (run.sh: _full for --full)")
    args = ap.parse_args()
    ctx, runs = load(args.json)
    table = teardown_table(runs, args.mean)
    if not table:
        sys.exit(f"{args.json}: no BM_Teardown_* results")
    stat = "mean" if args.mean else "median"
    plot_ns_per_object(table, f"{args.out_dir}/teardown_ns_per_object{args.suffix}.png", 1, stat)
    plot_ratios(table, f"{args.out_dir}/teardown_ratios{args.suffix}.png", "memb", 1, stat)
    if args.summary:
        summary(ctx, runs, table, args.summary, args.json)
        print(open(args.summary).read())


if __name__ == "__main__":
    main()
