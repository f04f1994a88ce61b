#!/usr/bin/env bash
# formal-model/check.sh — checks formal-model/reclaimer.pml (or --model gate.pml) with Spin: a safety run (assertions,
# invalid end states: deadlocks and sleepers nobody wakes) and a liveness run (the LTL property
# all_return under weak fairness: every caller returns). Prints pan's states and errors per run.
#
#   formal-model/check.sh [--model FILE] [--spin SPIN] [--cc CC] [--workdir DIR] [--expect-errors] [--safety-only]
#                         [-DNAME=VALUE...]
#
# Exit 0 when both runs completed and reported "errors: 0" — or, with --expect-errors (a mutant,
# -DMUTANT=n), when a run completed with errors > 0 (the safety run's, else the liveness run's;
# the liveness run is skipped once the safety run caught the mutant): a mutated model
# that the checks do not catch fails, and so does one that does not build or run.
# The -D options select the configuration (BACKGROUND, DRAIN, BROADCAST, ORDERED, BUDGET, PUBLISH,
# BATCH_COUNT, SUBMIT_ONLY, SECOND_SUBMIT, HELD, REACH,
# HOLD_UNTIL_OTHERS, MUTANT: see the model). --safety-only skips the liveness run (for the largest
# background configurations, whose liveness runs take 15-40 s of CPU here: a sleeper nobody wakes is still an invalid
# end state of the safety run once everything else has stopped).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
spin=spin
cc=cc
workdir=""
model=reclaimer.pml
expect_errors=0
safety_only=0
defines=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model) model="$2"; shift ;;
    --spin) spin="$2"; shift ;;
    --cc) cc="$2"; shift ;;
    --workdir) workdir="$2"; shift ;;
    --expect-errors) expect_errors=1 ;;
    --safety-only) safety_only=1 ;;
    -D*) defines+=("$1") ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "$0: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done

if [[ -z "$workdir" ]]; then
  workdir="$(mktemp -d)"
  trap 'rm -rf "$workdir"' EXIT
fi
mkdir -p "$workdir"
cd "$workdir"
rm -f pan pan_live ./*.trail ./*.log
cp "$here/$model" .

echo "model: $model ${defines[*]:-(defaults)}"
"$spin" -a ${defines[@]+"${defines[@]}"} "$model" >spin.log 2>&1 || { cat spin.log; echo "FAIL: spin -a"; exit 1; }
# Safety: no never claim. Liveness: the claim, weak fairness over the model's processes (init,
# 3 callers, the holder, the background thread, the claim: NFAIR=3). -O0: pan.c compiles in
# 0.6-0.8 s instead of -O1's 3-4 s, and the checks are small: the largest safety run (3.3 M
# states) took 3.3 s at -O0 against 3.0 s at -O1 (2026-12-06) — compiling was most of a check.
compile() { "$cc" -O0 -w "$@" pan.c || { echo "FAIL: cc pan.c $*"; exit 1; }; }

# run NAME ARGS...: runs pan, prints its summary lines; echoes the error count to fd 3.
total_errors=0
completed=0
run() {
  local name=$1 out
  shift
  out="$("$@" 2>&1 || true)"
  printf '%s\n' "$out" >"$name.log"
  local errors states
  errors="$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' <<<"$out" | head -n1)"
  states="$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' <<<"$out" | head -n1)"
  if [[ -z "$errors" ]] || grep -q "max search depth too small" <<<"$out"; then
    printf '%s\n' "$out"
    echo "$name: did not complete"
    return
  fi
  completed=$((completed + 1))
  total_errors=$((total_errors + errors))
  echo "$name: states stored ${states:-?}, errors: $errors"
  grep -E "^pan:[0-9]+:" <<<"$out" || true
}
compile -DNOCLAIM -DSAFETY -o pan
run safety ./pan -m100000
# A mutant caught by the safety run needs no liveness run (the second pan build and run are most
# of a check's time on a loaded machine).
if [[ $safety_only -eq 1 ]]; then
  echo "liveness: skipped (--safety-only)"
  completed=$((completed + 1))
elif [[ $expect_errors -eq 0 || $total_errors -eq 0 ]]; then
  compile -DNFAIR=3 -o pan_live
  run liveness ./pan_live -a -f -m100000
else
  completed=$((completed + 1))
fi

if [[ $completed -ne 2 ]]; then
  echo "FAIL: a run did not complete"
  exit 1
fi
if [[ $expect_errors -eq 1 ]]; then
  if [[ $total_errors -gt 0 ]]; then
    echo "ok: the mutated model fails the checks ($total_errors errors)"
    exit 0
  fi
  echo "FAIL: the mutated model passes the checks (errors: 0): the checks cannot see this mutation"
  exit 1
fi
if [[ $total_errors -ne 0 ]]; then
  echo "FAIL: errors: $total_errors (trail: $workdir/$model.trail; replay: spin -t -p ${defines[*]} $model)"
  exit 1
fi
echo "ok: errors: 0"
