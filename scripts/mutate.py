#!/usr/bin/env python3
"""Mutation testing for rcubatch's core (outside CI; ~10-20 minutes on the 2-vCPU VM).

    python3 scripts/mutate.py [--jobs 2] [--only NAME[,NAME...]] [--keep]

Copies the tree (git ls-files, plus uncommitted edits) to a scratch directory under /tmp,
configures one RelWithDebInfo build there (tests on, examples off), checks that the unmutated
tests pass, then for each mutant below: replaces one exact string in one library header, rebuilds
only the mutant's test targets, runs its ctest regex with a short per-test timeout, restores the
header. Prints a table: mutant, killed/survived, the tests that failed, seconds.

A mutant is killed when at least one selected test fails (an assertion, a sanitizer-free crash,
the hang detector of tests/windows_test.cpp, or the ctest timeout). Each mutant names the tests
meant to kill it: every one of them observes readers (a poisoned object under a read_guard) or
destroys (an object or sub-object poisoned too early, a destroy never happening), not only a GP
count. A mutant whose patched text no longer matches the header is reported as "stale" (the code
changed: update the list), and one that does not compile as "no-build" — neither counts as killed.

Equivalent mutants (considered, left out, and why):
  - snapshot() returning (s + 4) & ~1 (a cookie one GP later than needed): safe, only slower;
    the GP-count tests catch it, no reader can.
  - begin_drain()'s fast path removed (always the fetch_or): the same outcome, slower.
  - uninit_all() iterating oldest first: every destroy still follows GP #2; the order of
    uninit calls is observable only by the hook-order log tests (rollback_many_test), not by a
    reader or a destroy.
  - note_unlinked() setting the flag before GP #1 as well (no past_gp1_ check): only adds a GP.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RM = "include/rcubatch/rollback_many.hpp"
BA = "include/rcubatch/batch.hpp"
GD = "include/rcubatch/grace_domain.hpp"
RC = "include/rcubatch/ref_count.hpp"
RD = "include/rcubatch/ref_drain.hpp"
W = ("windows_test", r"^windows\.")

GP2_IF = "    if (unlinked || batch_access::unlinked(batch_) || stats.dependents_added > 0) {"

# (name, file, exact search string, replacement, (target, ctest regex))
MUTANTS = [
    ("gp2_skipped_for_cascade", RM, GP2_IF,
     "    if (unlinked || batch_access::unlinked(batch_)) {", W),
    ("retire_does_not_need_gp2", BA,
     "    note_unlinked();\n    return true;", "    return true;", W),
    ("untied_disposed_before_gp2", RM, GP2_IF,
     "    batch_access::dispose_untied(batch_);\n" + GP2_IF, W),
    ("cookie_covered_by_running_gp", GD,
     "return gp_cookie{(s + 3) & ~std::uint64_t{1}, id_};",
     "return gp_cookie{(s + 2) & ~std::uint64_t{1}, id_};", W),
    ("wait_for_takes_running_gp_as_ended", GD,
     "    if (reached(c)) return note_elided();\n    wait_until_elapsed(c);",
     "    if (sequence_.load() + 1 >= c.sequence) return note_elided();\n    wait_until_elapsed(c);", W),
    ("last_put_never_notifies", RC,
     "    if (old == (kDraining | 1)) detail::last_put_of_draining(*this);", "    (void)old;", W),
    ("released_does_not_wake_drain", RD,
     "    cv_.notify_one();  // under the lock", "    // (no notify)", W),
    ("put_notifies_one_early", RC,
     "if (old == (kDraining | 1)) detail::", "if (old == (kDraining | 2)) detail::", W),
    ("stall_report_suppressed", RD,
     "      if (clock::now() >= next_report) {", "      if (clock::now() < start_) {", W),
    ("dismantle_elision_no_gp2", BA,
     "    ++stats_.dismantle_elided;\n    note_unlinked();", "    ++stats_.dismantle_elided;", W),
    ("retire_with_disposed_untied", BA,
     "    tie(r, node);", "    retired_.push_back(node);", W),
    ("tied_disposed_before_destroy", RM,
     "    hooks_.destroy(&access::downcast<T>(r));\n    dispose_all(tied);",
     "    dispose_all(tied);\n    hooks_.destroy(&access::downcast<T>(r));", W),
    ("record_parent_noop", BA,
     "    if (current_parent_ == nullptr || current_parent_ == &dep) return;",
     "    if (current_parent_ != &dep || current_parent_ == &dep) return;", W),
    ("release_does_not_put_parent", RM,
     "    if (parent != nullptr) parent->refs().put();", "    (void)parent;", W),
    ("drain_ignores_holders", RM,
     "      if (access::begin_drain(r)) {",
     "      if (access::begin_drain(r) || true) {", W),
    ("gp1_skipped", RM,
     "    grace_period(phase::grace_period_1);\n", "", W),
    ("unregistering_state_skipped", RM,
     "        access::set_state(*it, reg_state::unregistering);\n", "", W),
    ("retire_twice_not_checked", BA,
     "    if (node.is_linked()) {", "    if (false && node.is_linked()) {",
     ("batch_test", r"^batch\.")),
    ("lanes_scanned_first_to_last", RM,
     "      each_reversed([&](auto& l) { l.drain_scan(drain); });",
     "      each([&](auto& l) { l.drain_scan(drain); });",
     ("lanes_test", r"^lanes\.rollback_many_lanes\.")),
]


def run(cmd, cwd, timeout=None):
    return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)


def copy_tree(dst):
    if os.path.exists(dst):
        shutil.rmtree(dst)
    files = run(["git", "ls-files", "-z"], ROOT).stdout.split("\0")
    for f in files:
        if not f or not os.path.isfile(os.path.join(ROOT, f)):
            continue
        os.makedirs(os.path.join(dst, os.path.dirname(f)), exist_ok=True)
        shutil.copy(os.path.join(ROOT, f), os.path.join(dst, f))  # new mtimes: a reused build rebuilds


def failed_tests(build):
    """The tests the last ctest run did not pass (its Testing/Temporary/LastTestsFailed.log: typed
    tests' names contain spaces, so ctest's console lines do not parse reliably), shortened."""
    path = os.path.join(build, "Testing", "Temporary", "LastTestsFailed.log")
    if not os.path.exists(path):
        return []
    names = [line.split(":", 1)[1].strip() for line in open(path) if ":" in line]
    return [re.sub(r"<.*flavor::(\w+)>+$", r"[\1]", n) for n in names]


def test_targets(src, build, target, regex, jobs, timeout):
    b = run(["cmake", "--build", build, "--target", target, "-j", str(jobs)], src)
    if b.returncode != 0:
        return "no-build", b.stdout[-2000:]
    stale = os.path.join(build, "Testing", "Temporary", "LastTestsFailed.log")
    if os.path.exists(stale):
        os.remove(stale)
    t = run(["ctest", "--test-dir", build, "-R", regex, "--timeout", str(timeout), "-j", "1"], src)
    return ("pass" if t.returncode == 0 else "fail"), t.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--timeout", type=int, default=30, help="per-test ctest timeout, seconds")
    ap.add_argument("--scratch", default="/tmp/rcubatch-mutants")
    ap.add_argument("--keep", action="store_true", help="keep the scratch tree")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    mutants = [m for m in MUTANTS if not only or m[0] in only]
    src, build = os.path.join(a.scratch, "src"), os.path.join(a.scratch, "build")
    t0 = time.time()
    copy_tree(src)
    cfg = run(["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
               "-DRCUBATCH_BUILD_TESTS=ON", "-DRCUBATCH_BUILD_EXAMPLES=OFF", "-DRCUBATCH_BUILD_BENCH=OFF"], src)
    if cfg.returncode != 0:
        sys.exit("configure failed:\n" + cfg.stdout[-3000:])
    for target, regex in sorted({m[4] for m in mutants}):
        status, out = test_targets(src, build, target, regex, a.jobs, a.timeout)
        if status != "pass":
            sys.exit(f"baseline {target} ({regex}) does not pass unmutated:\n{out[-3000:]}")
    print(f"baseline passes ({time.time() - t0:.0f} s)", flush=True)

    rows = []
    for name, rel, old, new, (target, regex) in mutants:
        path = os.path.join(src, rel)
        original = open(path).read()
        start = time.time()
        if original.count(old) != 1:
            rows.append((name, "stale", f"search string found {original.count(old)} times in {rel}", 0.0))
            continue
        open(path, "w").write(original.replace(old, new))
        try:
            status, out = test_targets(src, build, target, regex, a.jobs, a.timeout)
        finally:
            open(path, "w").write(original)
        if status == "fail":
            failed = failed_tests(build)
            by = ", ".join(failed[:2]) + (f" +{len(failed) - 2} more" if len(failed) > 2 else "")
            rows.append((name, "killed", by or out.strip().splitlines()[-1], time.time() - start))
        elif status == "pass":
            rows.append((name, "SURVIVED", "", time.time() - start))
        else:
            rows.append((name, "no-build", out.strip().splitlines()[-1] if out.strip() else "", time.time() - start))
        r = rows[-1]
        print(f"{r[0]:36} {r[1]:9} {r[3]:6.0f} s  {r[2]}", flush=True)
    # Rebuild the restored tree's targets so a --keep'd build dir is not left mutated.
    print()
    print(f"| mutant | file | result | killed by | s |")
    print(f"|---|---|---|---|---|")
    files = {m[0]: os.path.basename(m[1]) for m in MUTANTS}
    for name, result, by, secs in rows:
        print(f"| {name} | {files[name]} | {result} | {by} | {secs:.0f} |")
    killed = sum(1 for r in rows if r[1] == "killed")
    print(f"\n{killed}/{len(rows)} killed in {time.time() - t0:.0f} s")
    if not a.keep:
        shutil.rmtree(a.scratch, ignore_errors=True)
    sys.exit(0 if killed == len(rows) else 1)


if __name__ == "__main__":
    main()
