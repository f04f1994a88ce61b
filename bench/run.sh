#!/usr/bin/env bash
# Builds and runs the rcubatch benchmarks, writes Google Benchmark JSON to bench/results/ and draws
# the PNG plots into bench/.
#
#   bench/run.sh --quick            # every method and flavor at one reader, readers 0-2 at N = 1e4
#                                   # only, legacy cases capped, 3 repetitions (see bench/RESULTS.md)
#   bench/run.sh --full             # 0/1/2 readers everywhere, longer runs, larger caps, 5 repetitions
#   bench/run.sh --quick --build-dir build/bench-dev -- --benchmark_filter=memb
#   bench/run.sh --quick --repetitions 3 -- \
#       --benchmark_filter='BM_Goal|BM_Teardown_[A-Za-z0-9]+/(memb|general_buffered|rte_rcu_qsbr)/readers:1/N:10000/'
#                                   # the goal set only: the goal case and the separate cases
#
# Options:
#   --repetitions K   repetitions of every case (default 3 quick, 5 full), shuffled together
#                     (--benchmark_enable_random_interleaving); the goal case always runs its own
#                     48 (full: 96), one pair each
#   --build-dir DIR   build tree (default: build/bench, the `bench` preset's)
#   --no-build        use the binary already in the build tree
#   --no-plot         skip the plots and the summary
#   -- ARGS           passed on to the benchmark binary (--benchmark_filter=..., ...)
#
# Outputs, with STAMP = UTC date and time of the run:
#   bench/results/<mode>-STAMP.json   Google Benchmark JSON (git-ignored)
#   bench/results/<mode>-STAMP.txt    console output
#   bench/results/<mode>-STAMP.md     goal tables and per-flavor tables (bench/plot.py computes
#                                     every median and ratio from the JSON)
#   bench/teardown_ns_per_object.png, bench/teardown_ratios.png (--full: *_full.png)
#
# Needs: cmake, ninja, g++, libbenchmark-dev, liburcu-dev, libboost-dev; optional peers libcds-dev
# and libdpdk-dev; python3-matplotlib for the plots (scripts/install-deps.sh --bench-peers).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

mode=quick
repetitions=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) mode=quick ;;
    --full) mode=full ;;
    --repetitions) repetitions="$2"; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,30p' "$script"; exit 0 ;;
    *) bench_common_option "$@" || { echo "$0: unknown argument '$1'" >&2; exit 2; }; shift $((BENCH_SHIFT - 1)) ;;
  esac
  shift
done
[[ -n "$repetitions" ]] || { [[ $mode == full ]] && repetitions=5 || repetitions=3; }

bench_build rcubatch_bench
bin="$(bench_binary rcubatch_bench)"
base="bench/results/$mode-$(bench_stamp)"
bench_run "$base" "$bin" --rcubatch_mode="$mode" --benchmark_repetitions="$repetitions" \
  --benchmark_enable_random_interleaving=true ${extra[@]+"${extra[@]}"}

if [[ $do_plot -eq 1 ]]; then
  # Debian's matplotlib: another python3 may come first on PATH.
  suffix=""
  [[ $mode == full ]] && suffix=_full  # the quick plots are the ones RESULTS.md describes
  /usr/bin/python3 -B bench/plot.py "$base.json" --out-dir bench --summary "$base.md" --suffix "$suffix" >/dev/null
  echo "plots: bench/teardown_ns_per_object$suffix.png bench/teardown_ratios$suffix.png; summary: $base.md"
fi
