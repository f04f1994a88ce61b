# Probes compiled in vs out (issue 39; docs/observability.md has the figures): the teardown demo (ratio_to_floor_all, within each process) and the
# many-writers bench (objects_per_s), interleaved in random order, three runs; per run the median
# of each binary's figures and their quotient (on / off). Run from the worktree root after
#   cmake --preset bench -B build/bench-probes-on && cmake --preset bench -B build/bench-probes-off -DRCUBATCH_PROBES=OFF
#   cmake --build build/bench-probes-on --target teardown_demo rcubatch_bench_many_writers (and -off)
import json, random, statistics, subprocess, sys, datetime
ON, OFF = "build/bench-probes-on", "build/bench-probes-off"
PAIRS_DEMO, PAIRS_MW = 5, 5
MW_FILTER = "BM_ManyWriters/memb/(serialized|async)/threads:2$"
def demo(tree):
    out = subprocess.run([f"{tree}/examples/demo/teardown_demo", "--rounds", "15", "--json"], capture_output=True, text=True, timeout=300).stdout
    line = [l for l in out.splitlines() if l.startswith("{")][-1]
    return json.loads(line)["ratio_to_floor_all"]
def mw(tree):
    subprocess.run([f"{tree}/bench/rcubatch_bench_many_writers", f"--benchmark_filter={MW_FILTER}", "--benchmark_min_time=0.3",
                    "--benchmark_out=/tmp/p39/mw_run.json", "--benchmark_out_format=json"], capture_output=True, timeout=600)
    d = json.load(open("/tmp/p39/mw_run.json"))
    return {b["name"].split("/")[2]: b["objects_per_s"] for b in d["benchmarks"]}
print("start", datetime.datetime.utcnow().isoformat(timespec="seconds") + "Z", flush=True)
for run in range(1, 4):
    figs = {"demo": {ON: [], OFF: []}, "serialized": {ON: [], OFF: []}, "async": {ON: [], OFF: []}}
    jobs = [("demo", t) for t in (ON, OFF) for _ in range(PAIRS_DEMO)] + [("mw", t) for t in (ON, OFF) for _ in range(PAIRS_MW)]
    random.shuffle(jobs)
    for kind, tree in jobs:
        if kind == "demo":
            figs["demo"][tree].append(demo(tree))
        else:
            for case, v in mw(tree).items(): figs[case][tree].append(v)
    for case, f in figs.items():
        on, off = statistics.median(f[ON]), statistics.median(f[OFF])
        what = "ratio_to_floor (lower is faster)" if case == "demo" else "objects/s (higher is faster)"
        print(f"run {run} {case:10s} {what}: probes in {on:.4g}, out {off:.4g}, in/out {on/off:.3f}  (n={len(f[ON])}+{len(f[OFF])}; in {sorted(round(x,4) for x in f[ON])}; out {sorted(round(x,4) for x in f[OFF])})", flush=True)
print("end", datetime.datetime.utcnow().isoformat(timespec="seconds") + "Z", flush=True)
