#!/usr/bin/env bash
# bench/callgrind_per_submit.sh — instructions per request of a submit (async_unregister::submit)
# against call_rcu's removal (unlist under the writer lock, then call_rcu), at W writer threads,
# counted by callgrind (deterministic; this machine has no hardware counters). Issue 35's target:
# a submit costs no more instructions than call_rcu's removal.
#
#   bench/callgrind_per_submit.sh [--threads 8] [--objects 1000] [--readers 1|2] [--no-build]
#                                 [--build-dir DIR]
#
# Runs rcubatch_bench_many_writers under valgrind --tool=callgrind once per mode
# (BM_ManyWriters/memb[/readers:2]/<async|call_rcu>/threads:W, --objects removals per thread,
# not pinned), collecting only inside the bench's remove_one (kept out of line for this: the call
# of one request, whatever it runs — lock, unlist, queueing, a wake-up; not the batch or liburcu's
# worker that destroys it later), and prints its instructions divided by the requests.
# Outputs: bench/results/callgrind_per_submit-STAMP-<mode>.{out,json} and STAMP.txt (the table).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

threads=8
objects=1000
readers=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads="$2"; shift ;;
    --objects) objects="$2"; shift ;;
    --readers) readers="$2"; shift ;;
    -h|--help) sed -n '2,16p' "$script"; exit 0 ;;
    *) bench_common_option "$@" || { echo "$0: unknown argument '$1'" >&2; exit 2; }; shift $((BENCH_SHIFT - 1)) ;;
  esac
  shift
done
[[ "$readers" == 1 || "$readers" == 2 ]] || { echo "$0: --readers is 1 or 2" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "$0: valgrind not found (apt-get install valgrind)" >&2; exit 1; }

bench_build rcubatch_bench_many_writers
bin="$(bench_binary rcubatch_bench_many_writers)"
base="bench/results/callgrind_per_submit-$(bench_stamp)"
mkdir -p bench/results
group="BM_ManyWriters/memb/"
[[ "$readers" == 2 ]] && group+="readers:2/"

{
  echo "callgrind_per_submit: $(date -u), commit $(git rev-parse --short HEAD 2>/dev/null || echo ?), W = $threads," \
       "$objects removals per thread, readers: $readers, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "| case | instructions in remove_one | requests | instructions per request |"
  echo "|---|---|---|---|"
} | tee "$base.txt"
for mode in async call_rcu; do
  out="$base-$mode.out"
  valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*many_writers*remove_one*' \
    --callgrind-out-file="$out" "$bin" --mw_no_pin --mw_no_ping_pong --mw_objects="$objects" \
    "--benchmark_filter=^${group}${mode}/threads:${threads}\$" \
    --benchmark_out="$base-$mode.json" --benchmark_out_format=json >/dev/null 2>"$base-$mode.log" \
    || { cat "$base-$mode.log" >&2; echo "$0: valgrind run of $mode failed" >&2; exit 1; }
  /usr/bin/python3 - "$out" "$base-$mode.json" "${group}${mode}/threads:${threads}" <<'PY' | tee -a "$base.txt"
import json, sys
out, js, name = sys.argv[1:]
ir = None
with open(out) as f:
    for line in f:
        if line.startswith("summary:") or line.startswith("totals:"):
            ir = int(line.split()[1])
runs = [b for b in json.load(open(js))["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
if ir is None or not runs:
    sys.exit(f"{out}: no instruction total, or no benchmark row in {js}")
requests = runs[0]["objects"]
print(f"| `{name}` | {ir:,} | {requests:,.0f} | {ir / requests:,.0f} |")
PY
done
echo "table: $base.txt"
