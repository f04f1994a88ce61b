#!/usr/bin/python3
"""Cost per object and grace periods against batch size, from one rcubatch_bench JSON run.

    build/bench/bench/rcubatch_bench --rcubatch_mode=quick \
        --benchmark_filter='BM_Teardown_(RollbackMany|Registry|HandFloor|CallRcuBarrier|Legacy1GP)/memb/readers:1/' \
        --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true \
        --benchmark_out=bench/results/scaling-STAMP.json --benchmark_out_format=json
    /usr/bin/python3 bench/plot_scaling.py bench/results/scaling-STAMP.json --out bench/scaling.png

Draws two panels for one flavor and reader count (default memb, one reader): ns per object
against N (log-log), and grace periods per batch against N, for rollback_many, the registry
(registry::unregister_many), the teardown written by hand with no library (the floor), call_rcu
+ rcu_barrier (until every object is freed) and one synchronize_rcu per object (Legacy1GP, which
the bench runs only up to its cap: 10^4 for memb in quick mode). Every point is the median over
the case's repetitions of its per-repetition mean (counter ns_per_obj), all from the one JSON file
given, so every curve comes from the same run. call_rcu's grace periods are liburcu's worker's and
are not counted (the bench reports -1): that curve is absent from the right panel.
Prints the points as a Markdown table (--table) for bench/RESULTS.md and the README.
Uses Debian's python3-matplotlib; run it with /usr/bin/python3.
"""
import argparse
import statistics
import sys
from collections import defaultdict

from bench_json import load

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import plot as teardown_plot  # noqa: E402

METHODS = ["RollbackMany", "Registry", "HandFloor", "CallRcuBarrier", "Legacy1GP"]
LABELS = {
    "RollbackMany": "rollback_many",
    "Registry": "registry::unregister_many",
    "HandFloor": "by hand, no library (the floor)",
    "CallRcuBarrier": "call_rcu per object (until freed)",
    "Legacy1GP": "synchronize_rcu per object",
}
# The teardown plot's case names and styles (bench/plot.py), and one for the registry.
STYLE = {m: teardown_plot.STYLE[m] for m in METHODS if m in teardown_plot.STYLE}
STYLE["Registry"] = dict(color="C1", marker="D", lw=2.0)
TEARDOWN = teardown_plot.TEARDOWN


def points(runs, flavor, readers):
    """{method: [(N, median ns/object, median GPs per batch)]}, N ascending."""
    reps = defaultdict(list)
    for b in runs:
        if b.get("error_occurred"):
            continue
        m = TEARDOWN.match(b.get("run_name", b["name"]))
        if not m or m.group(1) not in METHODS or m.group(2) != flavor or int(m.group(3)) != readers:
            continue
        reps[(m.group(1), int(m.group(4)))].append(b)
    out = defaultdict(list)
    for (method, n), rows in reps.items():
        ns = statistics.median(r["ns_per_obj"] for r in rows)
        gps = statistics.median(r.get("gps_per_batch", -1) for r in rows)
        out[method].append((n, ns, gps, len(rows)))
    for v in out.values():
        v.sort()
    return out


def table(pts):
    sizes = sorted({n for v in pts.values() for n, *_ in v})
    lines = ["| method | " + " | ".join(f"N = {n:,}" for n in sizes) + " |",
             "|---|" + "---|" * len(sizes)]
    for method in METHODS:
        row = {n: (ns, gps) for n, ns, gps, _ in pts.get(method, [])}
        cells = []
        for n in sizes:
            if n not in row:
                cells.append("—")
                continue
            ns, gps = row[n]
            g = "n/c" if gps < 0 else f"{gps:g}"
            cells.append(f"{ns:,.1f} ns ({g} GP)")
        lines.append(f"| {LABELS[method]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json")
    ap.add_argument("--out", default="bench/scaling.png")
    ap.add_argument("--flavor", default="memb")
    ap.add_argument("--readers", type=int, default=1)
    ap.add_argument("--title", default=None, help="a line under the title (the run's date and load)")
    ap.add_argument("--table", action="store_true", help="print the points as a Markdown table")
    args = ap.parse_args()

    context, runs = load(args.json)
    pts = points(runs, args.flavor, args.readers)
    missing = [m for m in METHODS if m not in pts]
    if len(missing) == len(METHODS):
        sys.exit(f"{args.json}: no BM_Teardown_* case for {args.flavor} with {args.readers} reader(s)")

    fig, (ax_ns, ax_gp) = plt.subplots(1, 2, figsize=(12, 4.8))
    for method in METHODS:
        if method not in pts:
            continue
        xs = [n for n, *_ in pts[method]]
        ax_ns.plot(xs, [ns for _, ns, _, _ in pts[method]], label=LABELS[method], **STYLE[method])
        gp = [(n, g) for n, _, g, _ in pts[method] if g >= 0]
        if gp:
            ax_gp.plot([n for n, _ in gp], [g for _, g in gp], label=LABELS[method], **STYLE[method])
    for ax in (ax_ns, ax_gp):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("objects torn down (N)")
        ax.grid(True, which="both", alpha=0.3)
    ax_ns.set_ylabel("ns per object (median of repetitions)")
    ax_ns.set_title("cost per object")
    ax_gp.set_ylabel("grace periods per teardown")
    ax_gp.set_title("grace periods waited for (call_rcu's: not counted)")
    ax_ns.legend(fontsize=8)
    sub = args.title or context.get("date", "")
    fig.suptitle(f"Tearing down N objects, urcu-{args.flavor}, {args.readers} busy reader(s) — {sub}", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}" + (f" (no {', '.join(missing)} in the run)" if missing else ""))
    if args.table:
        print(table(pts))


if __name__ == "__main__":
    main()
