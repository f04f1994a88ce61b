#!/usr/bin/env bash
# Builds and runs issue 11's many-writers bench (rcubatch_bench_many_writers), writes its Google
# Benchmark JSON to bench/results/ and draws bench/many_writers.png and many_writers_producer.png.
#
#   bench/run_many_writers.sh                  # the sweep and the 5 s producer (~4 minutes here)
#   bench/run_many_writers.sh --smoke          # 500 objects per thread, 0.2 s producer (< 1 min)
#   bench/run_many_writers.sh -- --benchmark_filter=gp:1ms --mw_objects_gp1ms=10000
#   bench/run_many_writers.sh --issue35        # issue 35's sweep: real GPs, 1 and 2 busy readers,
#                                              # serialized, sync_combined, async, call_rcu, 7
#                                              # repetitions randomly interleaved
#   bench/run_many_writers.sh --issue35 --repetitions 3 -- --mw_objects=2000   # a shorter one
#   bench/run_many_writers.sh --issue35 --control  # the same sweep plus the A/A control
#                                              # serialized_twin (serialized's code, another
#                                              # name) and a ping-pong probe before every case
#   bench/run_many_writers.sh --ratios bench/results/many_writers-STAMP.json   # ratios only
#
# Every run ends with issue 35's ratios per W (bench/many_writers_ratios.py): sync_combined /
# serialized and async / call_rcu, for each number of readers the JSON holds.
# Options: --smoke; --issue35; --control (with --issue35: --mw_control --mw_case_ping_pong, and
# serialized_twin in the filter); --repetitions N (with --issue35, default 7); --ratios JSON;
# --no-build; --no-plot; --build-dir DIR (default build/bench, the `bench`
# preset's); -- ARGS passed on to the binary (--mw_objects=N, --mw_objects_gp1ms=N,
# --mw_producer_seconds=S, --mw_budget_bytes=B, --mw_no_pin, --mw_gather_released, --benchmark_*).
# Outputs, STAMP = UTC date and time: bench/results/many_writers-STAMP.{json,txt,md}.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

smoke=()
issue35=0
control=0
repetitions=7
ratios() { /usr/bin/python3 -B bench/many_writers_ratios.py "$@"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --smoke) smoke=(--mw_objects=500 --mw_objects_gp1ms=50 --mw_producer_seconds=0.2) ;;
    --issue35) issue35=1 ;;
    --control) control=1 ;;
    --repetitions) [[ $# -ge 2 ]] || { echo "$0: --repetitions needs a number" >&2; exit 2; }
                   repetitions="$2"; shift ;;
    --ratios) [[ $# -ge 2 ]] || { echo "$0: --ratios needs a JSON file" >&2; exit 2; }
              ratios "$2"; exit ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,25p' "$script"; exit 0 ;;
    *) bench_common_option "$@" || { echo "$0: unknown argument '$1'" >&2; exit 2; }; shift $((BENCH_SHIFT - 1)) ;;
  esac
  shift
done

bench_build rcubatch_bench_many_writers
bin="$(bench_binary rcubatch_bench_many_writers)"
base="bench/results/many_writers-$(bench_stamp)"
issue35_args=()
if [[ $issue35 -eq 1 ]]; then
  modes="serialized|sync_combined|async|call_rcu"
  [[ $control -eq 1 ]] && modes="$modes|serialized_twin"
  issue35_args=("--benchmark_filter=^BM_ManyWriters/memb/(readers:2/)?($modes)/threads:"
                "--benchmark_repetitions=$repetitions" --benchmark_enable_random_interleaving=true)
  [[ $control -eq 1 ]] && issue35_args+=(--mw_control --mw_case_ping_pong)
  do_plot=0  # the plots want every mode and the gp:1ms sweep
elif [[ $control -eq 1 ]]; then
  echo "$0: --control goes with --issue35" >&2; exit 2
fi
bench_run "$base" "$bin" ${issue35_args[@]+"${issue35_args[@]}"} ${smoke[@]+"${smoke[@]}"} ${extra[@]+"${extra[@]}"}
if [[ $do_plot -eq 1 ]]; then
  /usr/bin/python3 -B bench/plot_many_writers.py "$base.json" --out-dir bench --summary "$base.md" >/dev/null
  echo "plots: bench/many_writers.png bench/many_writers_producer.png; summary: $base.md"
fi
counts=()
[[ $control -eq 1 ]] && counts=(--counts)  # the control's cases' counts beside its ratios
ratios "$base.json" ${counts[@]+"${counts[@]}"} | tee "$base.ratios.md"

