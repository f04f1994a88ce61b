#!/usr/bin/env bash
# The pairwise stress soak (issue 34, RELIABILITY.md): builds rcubatch_pairwise in the asan-ubsan
# and tsan presets, then runs it for N seconds per flavor (memb, qsbr) under each, one run at a
# time, and prints each run's figures (ops per combination, created/destroyed, violations) and a
# one-line summary per run. Exits non-zero if any run failed (a violation, a sanitizer report, a
# watchdog abort).
#
#   scripts/soak-pairwise.sh            # 600 s per run: 4 runs, 40 minutes
#   scripts/soak-pairwise.sh 120        # 2 minutes per run
#   PRESETS="tsan" FLAVORS="qsbr" scripts/soak-pairwise.sh 60
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-600}
presets=${PRESETS:-"asan-ubsan tsan"}
flavors=${FLAVORS:-"memb qsbr"}
export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}

for preset in $presets; do
  cmake --preset "$preset" >/dev/null || exit 1
  cmake --build --preset "$preset" --target rcubatch_pairwise -j2 || exit 1
done

# The sanitizer options the test presets give ctest (CMakePresets.json), for running the program
# directly: any report fails the run.
tsan_options="halt_on_error=1:second_deadlock_stack=1:history_size=7:suppressions=$PWD/tests/tsan.supp"
asan_options="detect_leaks=1:abort_on_error=1"
ubsan_options="print_stacktrace=1:halt_on_error=1"

failed=0
summary=()
for preset in $presets; do
  for flavor in $flavors; do
    log=$(mktemp "${TMPDIR:-/tmp}/soak-pairwise.$preset.$flavor.XXXXXX")
    echo "=== $preset $flavor: ${seconds} s (log: $log)"
    start=$(date +%s)
    TSAN_OPTIONS=$tsan_options ASAN_OPTIONS=$asan_options UBSAN_OPTIONS=$ubsan_options \
      "build/$preset/tests/stress/rcubatch_pairwise" --flavor "$flavor" --seconds "$seconds" --stall 120 >"$log" 2>&1
    rc=$?
    end=$(date +%s)
    cat "$log"
    reports=$(grep -c -E "^(WARNING: ThreadSanitizer|==[0-9]+==ERROR: AddressSanitizer|.*runtime error:)" "$log")
    totals=$(grep -E "^  created=" "$log" | sed 's/^  //')
    [ -n "$totals" ] || totals="(no totals: the run did not finish)"
    line="$preset $flavor: ${seconds} s requested, $((end - start)) s wall, exit $rc, sanitizer reports $reports, $totals"
    summary+=("$line")
    if [ "$rc" -ne 0 ] || [ "$reports" -ne 0 ]; then failed=1; fi
  done
done
echo "=== summary ($(date -u '+%Y-%m-%d %H:%M UTC'))"
printf '%s\n' "${summary[@]}"
exit $failed
