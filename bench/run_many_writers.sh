#!/usr/bin/env bash
# Builds and runs issue 11's many-writers bench (rcubatch_bench_many_writers), writes its Google
# Benchmark JSON to bench/results/ and draws bench/many_writers.png and many_writers_producer.png.
#
#   bench/run_many_writers.sh                  # the sweep and the 5 s producer (~4 minutes here)
#   bench/run_many_writers.sh --smoke          # 500 objects per thread, 0.2 s producer (< 1 min)
#   bench/run_many_writers.sh -- --benchmark_filter=gp:1ms --mw_objects_gp1ms=10000
#
# Options: --smoke; --no-build; --no-plot; --build-dir DIR (default build/bench, the `bench`
# preset's); -- ARGS passed on to the binary (--mw_objects=N, --mw_objects_gp1ms=N,
# --mw_producer_seconds=S, --mw_budget_bytes=B, --mw_no_pin, --benchmark_*).
# Outputs, STAMP = UTC date and time: bench/results/many_writers-STAMP.{json,txt,md}.
set -euo pipefail

build_dir=build/bench
do_build=1
do_plot=1
smoke=()
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --smoke) smoke=(--mw_objects=500 --mw_objects_gp1ms=50 --mw_producer_seconds=0.2) ;;
    --build-dir) build_dir="$2"; shift ;;
    --no-build) do_build=0 ;;
    --no-plot) do_plot=0 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "$0: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
if [[ $do_build -eq 1 ]]; then
  if [[ "$build_dir" == build/bench ]]; then
    cmake --preset bench -DRCUBATCH_BUILD_EXAMPLES=OFF >/dev/null
  fi
  cmake --build "$build_dir" -j2 --target rcubatch_bench_many_writers
fi
bin="$build_dir/bench/rcubatch_bench_many_writers"
[[ -x "$bin" ]] || { echo "$0: $bin not built (is libbenchmark-dev installed?)" >&2; exit 1; }

mkdir -p bench/results
base="bench/results/many_writers-$(date -u +%Y%m%dT%H%M%SZ)"
echo "run started: $(date -u) — load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$base.txt"
start=$SECONDS
"$bin" ${smoke[@]+"${smoke[@]}"} --benchmark_out="$base.json" --benchmark_out_format=json \
  ${extra[@]+"${extra[@]}"} 2>&1 | tee -a "$base.txt"
echo "run finished: $(date -u) — $((SECONDS - start)) s — load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$base.txt"
if [[ $do_plot -eq 1 ]]; then
  /usr/bin/python3 bench/plot_many_writers.py "$base.json" --out-dir bench --summary "$base.md" >/dev/null
  echo "plots: bench/many_writers.png bench/many_writers_producer.png; summary: $base.md"
fi
