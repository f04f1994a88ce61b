#!/usr/bin/env python3
"""Plots and tables for rcubatch_bench_many_writers (issue 11) from its Google Benchmark JSON.

  /usr/bin/python3 bench/plot_many_writers.py bench/results/many_writers-STAMP.json \
      --out-dir bench --summary bench/results/many_writers-STAMP.md

Draws, beside the teardown plots:
  bench/many_writers.png           objects/s and GPs/object against W, per mode, real memb GP and
                                   the simulated 1 ms GP
  bench/many_writers_producer.png  peak pending bytes against the producer's achieved rate:
                                   call_rcu against the asynchronous mode with a budget
and writes a Markdown summary: the sweep table, the producer table and the issue's ratios, every
figure from the one JSON file (recompute them from the counters the same way).
"""
import argparse
import os
import sys

from bench_json import load

MODES = ["serialized", "unlock_during_waits", "call_rcu", "async", "sync_combined"]
COLORS = dict(zip(MODES, ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple"]))


def parse(run):
    """BM_ManyWriters/<flavor>/<mode>[/gp:1ms]/threads:<W> -> (flavor, mode, gp, W)."""
    parts = run["name"].split("/")
    if parts[0] != "BM_ManyWriters":
        return None
    gp = "gp:1ms" if "gp:1ms" in parts else "real"
    w = int(parts[-1].split(":")[1])
    return parts[1], parts[2], gp, w


def sweep(runs):
    """(flavor, mode, gp, W) -> the repetition with the median objects/s (the lower middle of an
    even count): every figure of a row then comes from one real repetition, and a single fast or
    slow repetition cannot decide a ratio."""
    reps = {}
    for r in runs:
        p = parse(r)
        if p:
            reps.setdefault(p, []).append(r)
    out = {}
    for p, rs in reps.items():
        rs = sorted(rs, key=lambda r: r["objects_per_s"])
        out[p] = rs[(len(rs) - 1) // 2]
    return out


def producer(runs):
    out = []
    for r in runs:
        parts = r["name"].split("/")
        if parts[0] == "BM_Producer":
            out.append((parts[2], parts[3].split(":")[1], r))
    return out


def fmt(x, digits=3):
    if x is None:
        return "–"
    if x < 0:
        return "n/a"
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def plot(table, prod, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    for col, gp in enumerate(["real", "gp:1ms"]):
        title = "memb, real GP" if gp == "real" else "memb, simulated 1 ms GP"
        for mode in MODES:
            pts = sorted((w, r) for (fl, m, g, w), r in table.items() if m == mode and g == gp)
            if not pts:
                continue
            ws = [w for w, _ in pts]
            axes[0][col].plot(ws, [r["objects_per_s"] for _, r in pts], marker="o", label=mode, color=COLORS[mode])
            gps = [(w, r["gps_per_object"]) for w, r in pts if r["gps_per_object"] >= 0]
            if gps:
                axes[1][col].plot([w for w, _ in gps], [max(g, 1e-5) for _, g in gps], marker="o", label=mode,
                                    color=COLORS[mode])
        axes[0][col].set_title(f"objects/s, {title}")
        axes[1][col].set_title(f"GPs per object, {title}")
        for ax in (axes[0][col], axes[1][col]):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("writer threads W")
            ax.set_xticks([1, 2, 4, 8])
            ax.set_xticklabels(["1", "2", "4", "8"])
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    axes[1][0].text(0.02, 0.02, "call_rcu: GPs run by liburcu's worker, not countable", transform=axes[1][0].transAxes,
                    fontsize=8)
    fig.suptitle("BM_ManyWriters: W threads each removing their own objects one call at a time, one busy memb reader")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "many_writers.png"), dpi=90)
    plt.close(fig)

    if prod:
        # Grouped bars per target rate: the async producer blocks on its budget, so its achieved
        # rate differs from call_rcu's; each bar is labelled with the rate it achieved.
        rates = []
        for _, rate, _ in prod:
            if rate not in rates:
                rates.append(rate)
        modes = sorted({m for m, _, _ in prod}, key=lambda m: (m != "call_rcu", m))
        fig, ax = plt.subplots(figsize=(8, 5.5))
        width = 0.8 / max(1, len(modes))
        budget = None
        for i, mode in enumerate(modes):
            xs, ys, labels = [], [], []
            for j, rate in enumerate(rates):
                r = next((r for m, rr, r in prod if m == mode and rr == rate), None)
                if r is None:
                    continue
                xs.append(j + (i - (len(modes) - 1) / 2) * width)
                ys.append(r["peak_pending_bytes"] / 1024)
                labels.append(f"{r['objects_per_s'] / 1000:.0f}k/s")
                if r.get("budget_bytes", 0) > 0:
                    budget = r["budget_bytes"]
            label = "call_rcu (no bound)" if mode == "call_rcu" else f"{mode} with budget"
            bars = ax.bar(xs, ys, width, label=label, color=COLORS.get(mode))
            for b, text in zip(bars, labels):
                ax.annotate(text, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=8)
        if budget:
            ax.axhline(budget / 1024, color="gray", linestyle="--", label=f"budget {budget / 1024:.0f} KiB")
        ax.set_xticks(range(len(rates)))
        ax.set_xticklabels([f"target {r}/s" if r != "max" else "as fast as it can" for r in rates])
        ax.set_yscale("log")
        if budget:
            ax.set_ylim(bottom=budget / 1024 / 16)  # log bars need a floor well below the budget
        ax.set_ylabel("peak pending (submitted, not yet freed), KiB")
        ax.set_title("BM_Producer: one producer for S s, one busy memb reader (labels: achieved rate)")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "many_writers_producer.png"), dpi=90)
        plt.close(fig)


def summary(ctx, table, prod, src):
    lines = [f"Source: `{src}`; run date {ctx.get('date', '?')}; load average {ctx.get('load_avg', '?')}; "
             f"CPUs: {ctx.get('mw_cpus', '?')}; objects per thread {ctx.get('mw_objects_per_thread', '?')} "
             f"(gp:1ms: {ctx.get('mw_objects_per_thread_gp1ms', '?')}); object {ctx.get('mw_object_bytes', '?')} bytes.",
             "",
             "| case | objects/s | submit objects/s | GPs/object | GPs/batch | submit p50 / p99 µs | destroy p50 / p99 µs | peak pending bytes | batches (max req/batch) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for gp in ["real", "gp:1ms"]:
        for mode in MODES:
            for w in [1, 2, 4, 8]:
                r = next((r for (fl, m, g, ww), r in table.items() if m == mode and g == gp and ww == w), None)
                if r is None:
                    continue
                batches = ""
                if "async_batches" in r:
                    batches = f"{fmt(r['async_batches'])} ({fmt(r['async_max_requests_per_batch'])})"
                lines.append(f"| `{r['name']}` | {fmt(r['objects_per_s'])} | {fmt(r['submit_objects_per_s'])} | "
                             f"{fmt(r['gps_per_object'])} | {fmt(r.get('gps_per_batch'))} | {fmt(r['submit_p50_us'])} / {fmt(r['submit_p99_us'])} | "
                             f"{fmt(r['destroy_p50_us'])} / {fmt(r['destroy_p99_us'])} | "
                             f"{fmt(r['peak_pending_bytes'])} | {batches} |")
    if prod:
        lines += ["", "| producer case | achieved objects/s | peak pending bytes (bench) | library's pending high water | budget | submit p99 µs | destroy p99 µs | blocked submits |",
                  "|---|---|---|---|---|---|---|---|"]
        for m, rate, r in prod:
            lines.append(f"| `{r['name']}` | {fmt(r['objects_per_s'])} | {fmt(r['peak_pending_bytes'])} | "
                         f"{fmt(r.get('async_pending_bytes_high_water'))} | "
                         f"{fmt(r['budget_bytes']) if r['budget_bytes'] else 'none'} | {fmt(r['submit_p99_us'])} | "
                         f"{fmt(r['destroy_p99_us'])} | {fmt(r.get('async_blocked_submits'))} |")

    def get(mode, gp, w):
        return next((r for (fl, m, g, ww), r in table.items() if m == mode and g == gp and ww == w), None)

    lines += ["", "Issue 11's targets (W = 8):", ""]
    a, s = get("async", "real", 8), get("serialized", "real", 8)
    if a and s:
        lines.append(f"- async / serialized objects/s, real memb: {a['objects_per_s'] / s['objects_per_s']:.1f}x "
                     f"(to everything destroyed, drain included; submit rate ratio "
                     f"{a['submit_objects_per_s'] / s['objects_per_s']:.1f}x); target >= 10x")
        lines.append(f"- async GPs/object, real memb: {a['gps_per_object']:.4g}; target <= 0.01")
    c = get("sync_combined", "gp:1ms", 8)
    if c:
        lines.append(f"- sync_combined GPs/object, gp:1ms: {c['gps_per_object']:.4g}; target <= 0.25")

    lines += ["", "Issue 24's targets (ratios within this run):", ""]
    for w in [1, 2, 4, 8]:
        c, s = get("sync_combined", "real", w), get("serialized", "real", w)
        if c and s:
            goal = ">= 0.9" if w == 1 else ">= 1.0"
            lines.append(f"- W = {w}: sync_combined / serialized objects/s {c['objects_per_s'] / s['objects_per_s']:.2f}x; target {goal}")
    c = get("sync_combined", "gp:1ms", 8)
    if c:
        lines.append(f"- sync_combined GPs/object, gp:1ms, W = 8: {c['gps_per_object']:.4g}; target <= 0.2")
    a, cr = get("async", "real", 8), get("call_rcu", "real", 8)
    if a:
        lines.append(f"- async GPs/batch, W = 8: {fmt(a.get('gps_per_batch'))} ({fmt(a.get('async_gps_pipelined'))} GPs #1 "
                     f"skipped of {fmt(a.get('async_batches'))} batches); target <= 1.2; GPs/object {a['gps_per_object']:.4g}, target <= 0.01")
    if a and cr:
        lines.append(f"- async / call_rcu objects/s, W = 8: {a['objects_per_s'] / cr['objects_per_s']:.2f}x; target >= 1.0")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json")
    ap.add_argument("--out-dir", default="bench")
    ap.add_argument("--summary")
    ap.add_argument("--no-plot", action="store_true")
    args = ap.parse_args()
    ctx, runs = load(args.json)
    table, prod = sweep(runs), producer(runs)
    if not table and not prod:
        sys.exit(f"{args.json}: no BM_ManyWriters or BM_Producer results")
    if not args.no_plot:
        plot(table, prod, args.out_dir)
    text = summary(ctx, table, prod, args.json)
    if args.summary:
        with open(args.summary, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
