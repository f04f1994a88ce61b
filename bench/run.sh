#!/usr/bin/env bash
# Builds and runs the rcubatch benchmarks, writes Google Benchmark JSON to bench/results/ and draws
# the PNG plots into bench/.
#
#   bench/run.sh --quick            # < 5 minutes: every method and flavor at one reader, readers 0-2
#                                   # at N = 1e4 only, legacy cases capped (see bench/RESULTS.md)
#   bench/run.sh --full             # 0/1/2 readers everywhere, longer runs and larger legacy caps
#   bench/run.sh --quick --build-dir build/bench-dev -- --benchmark_filter=memb
#   bench/run.sh --quick --no-plot -- --benchmark_filter=BM_Goal_Interleaved --benchmark_repetitions=5 \
#       --benchmark_enable_random_interleaving=true   # the goal case's ratios, aggregated over 5 runs
#
# Options:
#   --build-dir DIR   build tree (default: build/bench, the `bench` preset's)
#   --no-build        use the binary already in the build tree
#   --no-plot         skip the plots and the summary
#   -- ARGS           passed on to the benchmark binary (--benchmark_filter=..., ...)
#
# Outputs, with STAMP = UTC date and time of the run:
#   bench/results/<mode>-STAMP.json   Google Benchmark JSON (git-ignored)
#   bench/results/<mode>-STAMP.txt    console output
#   bench/results/<mode>-STAMP.md     goal table and per-flavor tables (bench/plot.py)
#   bench/teardown_ns_per_object.png, bench/teardown_ratios.png (--full: *_full.png)
#
# Needs: cmake, ninja, g++, libbenchmark-dev, liburcu-dev, libboost-dev; optional peers libcds-dev
# and libdpdk-dev; python3-matplotlib for the plots (scripts/install-deps.sh --bench-peers).
set -euo pipefail

mode=quick
build_dir=build/bench
do_build=1
do_plot=1
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) mode=quick ;;
    --full) mode=full ;;
    --build-dir) build_dir="$2"; shift ;;
    --no-build) do_build=0 ;;
    --no-plot) do_plot=0 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "$0: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

if [[ $do_build -eq 1 ]]; then
  # Examples and tests are not needed here; -j2: the machine has two cores and is shared.
  if [[ "$build_dir" == build/bench ]]; then
    cmake --preset bench -DRCUBATCH_BUILD_EXAMPLES=OFF >/dev/null
  else
    cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRCUBATCH_BUILD_TESTS=OFF \
      -DRCUBATCH_BUILD_EXAMPLES=OFF -DRCUBATCH_BUILD_BENCH=ON >/dev/null
  fi
  cmake --build "$build_dir" -j2 --target rcubatch_bench
fi

bin="$build_dir/bench/rcubatch_bench"
[[ -x "$bin" ]] || { echo "$0: $bin not built (is libbenchmark-dev installed?)" >&2; exit 1; }

mkdir -p bench/results
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
base="bench/results/$mode-$stamp"
echo "run started: $(date) — mode $mode — load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$base.txt"
start=$SECONDS
"$bin" --rcubatch_mode="$mode" --benchmark_out="$base.json" --benchmark_out_format=json \
  ${extra[@]+"${extra[@]}"} 2>&1 | tee -a "$base.txt"
echo "run finished: $(date) — $((SECONDS - start)) s" | tee -a "$base.txt"

if [[ $do_plot -eq 1 ]]; then
  # Debian's matplotlib: another python3 may come first on PATH.
  suffix=""
  [[ $mode == full ]] && suffix=_full  # the quick plots are the ones RESULTS.md describes
  /usr/bin/python3 bench/plot.py "$base.json" --out-dir bench --summary "$base.md" --suffix "$suffix" >/dev/null
  echo "plots: bench/teardown_ns_per_object$suffix.png bench/teardown_ratios$suffix.png; summary: $base.md"
fi
