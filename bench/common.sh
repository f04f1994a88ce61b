# bench/common.sh — the preamble bench/run.sh and bench/run_many_writers.sh share: their common
# options, the build, the binary check and the logged run. Sourced, not run.
#
# After sourcing: build_dir, do_build, do_plot, extra (set by bench_common_option), script (the
# sourcing script's absolute path, for --help), the repo as the working directory, and these
# functions.

build_dir=build/bench
do_build=1
do_plot=1
extra=()

script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

# bench_common_option ARGS... — handles --build-dir DIR, --no-build, --no-plot at $1; sets
# BENCH_SHIFT to the words it used. Returns 1 if $1 is none of them.
bench_common_option() {
  case "$1" in
    --build-dir) [[ $# -ge 2 ]] || { echo "$0: --build-dir needs a directory" >&2; exit 2; }
                 build_dir="$2"; BENCH_SHIFT=2 ;;
    --no-build) do_build=0; BENCH_SHIFT=1 ;;
    --no-plot) do_plot=0; BENCH_SHIFT=1 ;;
    *) return 1 ;;
  esac
}

# bench_build TARGET — configures (the `bench` preset for build/bench, else a Release tree with
# tests and examples off) and builds TARGET, unless --no-build. -j2: two shared cores.
bench_build() {
  [[ $do_build -eq 1 ]] || return 0
  if [[ "$build_dir" == build/bench ]]; then
    cmake --preset bench -DRCUBATCH_BUILD_EXAMPLES=OFF >/dev/null
  else
    cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRCUBATCH_BUILD_TESTS=OFF \
      -DRCUBATCH_BUILD_EXAMPLES=OFF -DRCUBATCH_BUILD_BENCH=ON >/dev/null
  fi
  cmake --build "$build_dir" -j2 --target "$1"
}

# bench_binary NAME — the path of NAME in the build tree; exits if it was not built.
bench_binary() {
  local bin="$build_dir/bench/$1"
  [[ -x "$bin" ]] || { echo "$0: $bin not built (is libbenchmark-dev installed?)" >&2; exit 1; }
  echo "$bin"
}

# bench_run BASE BIN ARGS... — runs BIN with JSON to BASE.json and the console, with start and end
# lines (UTC date, load average), to BASE.txt.
bench_run() {
  local base="$1" bin="$2" start=$SECONDS
  shift 2
  mkdir -p "$(dirname "$base")"
  echo "run started: $(date -u) — load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$base.txt"
  "$bin" --benchmark_out="$base.json" --benchmark_out_format=json "$@" 2>&1 | tee -a "$base.txt"
  echo "run finished: $(date -u) — $((SECONDS - start)) s — load average: $(cut -d' ' -f1-3 /proc/loadavg)" \
    | tee -a "$base.txt"
}

# bench_stamp — the UTC date and time the result files are named by.
bench_stamp() { date -u +%Y%m%dT%H%M%SZ; }
