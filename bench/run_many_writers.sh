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
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

smoke=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --smoke) smoke=(--mw_objects=500 --mw_objects_gp1ms=50 --mw_producer_seconds=0.2) ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,12p' "$script"; exit 0 ;;
    *) bench_common_option "$@" || { echo "$0: unknown argument '$1'" >&2; exit 2; }; shift $((BENCH_SHIFT - 1)) ;;
  esac
  shift
done

bench_build rcubatch_bench_many_writers
bin="$(bench_binary rcubatch_bench_many_writers)"
base="bench/results/many_writers-$(bench_stamp)"
bench_run "$base" "$bin" ${smoke[@]+"${smoke[@]}"} ${extra[@]+"${extra[@]}"}
if [[ $do_plot -eq 1 ]]; then
  /usr/bin/python3 -B bench/plot_many_writers.py "$base.json" --out-dir bench --summary "$base.md" >/dev/null
  echo "plots: bench/many_writers.png bench/many_writers_producer.png; summary: $base.md"
fi
