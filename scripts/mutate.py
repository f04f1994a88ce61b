#!/usr/bin/env python3
"""Mutation testing for rcubatch's core (outside CI; ~10-20 minutes on the 2-vCPU VM).

    python3 scripts/mutate.py [--jobs 2] [--only NAME[,NAME...]] [--timeout 30] [--scratch DIR] [--keep]

--only runs the named mutants in the order given. gp_mutex_taken_online fails only by its test's
30 s watchdog: run the list with --timeout 45, so that a per-test timeout never ends it first.

Copies the tree (git ls-files, plus uncommitted edits) to a scratch directory under /tmp,
configures one RelWithDebInfo build there (tests on, examples off), checks that the unmutated
tests pass, then for each mutant below: replaces one exact string in one library header, rebuilds
only the mutant's test targets, runs its ctest regex with a short per-test timeout, restores the
header. Prints a table: mutant, killed/survived, the tests that failed, seconds.

A mutant is killed when at least one selected test fails (an assertion, a sanitizer-free crash,
the hang detector of tests/windows_test.cpp, or the ctest timeout). Each mutant names the tests
meant to kill it: every one of them observes readers (a poisoned object under a read_guard) or
destroys (an object or sub-object poisoned too early, a destroy never happening), not only a GP
count; issue 22's observe the contract each breaks: a qsbr deadlock or lost wake-up (the tests'
watchdogs, the qsbr_writers stress), a refusal or fatal diagnostic, an object unlisted twice, a
ticket completed before its destroy, an object left queued after a throw. A mutant whose patched
text no longer matches the header is reported as "stale" (the code changed: update the list), and
one that does not compile as "no-build" — neither counts as killed.

Equivalent mutants (considered, left out, and why):
  - snapshot() returning (s + 4) & ~1 (a cookie one GP later than needed): safe, only slower;
    the GP-count tests catch it, no reader can.
  - begin_drain()'s fast path removed (always the fetch_or): the same outcome, slower.
  - uninit_all() iterating oldest first: every destroy still follows GP #2; the order of
    uninit calls is observable only by the hook-order log tests (rollback_many_test), not by a
    reader or a destroy.
  - note_unlinked() setting the flag before GP #1 as well (no past_gp1_ check): only adds a GP.
  - released() marking the count told before taking the drain's lock (issue 22's survivor): since
    2026-12-03 the drain waits, before it returns, for every put inside released() (in_released_,
    counted before the mark), so the order inside released() no longer decides whether the drain
    outlives the put. That wait itself is mutated (drain_returns_with_putter_in_released) and
    killed through ref_drain.hpp's test seam, which parks a putter inside released().
  - reserve() not exempting a submit from the reclaimer's own hook (from_own_hook = false; it was
    the mutant destroy_submit_not_exempt_from_budget, which survived): reserve runs only after
    submit_locked's first look at the budget said no_room, and that look exempts the own hook
    itself (`detail::t_running_batch_of != this`), so a hook's submit never reaches reserve; and
    with that first exemption mutated instead, reserve's charges at once and the retry succeeds
    (one more writer-lock round trip, nothing observable). Only both mutated together block
    the hook (test: async_counting.submit_from_destroy_is_never_held_up_by_the_budget); one
    search string cannot. (2026-12-05, branch r35-seams.)
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
AU = "include/rcubatch/async_unregister.hpp"
CB = "include/rcubatch/combining.hpp"
RG = "include/rcubatch/registry.hpp"
RGT = "include/rcubatch/registry_types.hpp"  # split out of registry.hpp (issue 35)
RGP = "include/rcubatch/registry_publish.hpp"  # split out of registry.hpp (issue 35)
RGK = "include/rcubatch/registry_by_key.hpp"  # split out of registry.hpp (issue 35)
RGD = "include/rcubatch/registry_deferred.hpp"  # split out of registry.hpp (issue 35)
IX = "include/rcubatch/indexed.hpp"  # split out of registry.hpp (issue 35)
RB = "include/rcubatch/registrable.hpp"
WL = "include/rcubatch/detail/writer_lock.hpp"
RT = "include/rcubatch/ref_tracker.hpp"
SR = "include/rcubatch/sharded_refs.hpp"
OW = "include/rcubatch/owned.hpp"
HL = "include/rcubatch/index/hlist_index.hpp"
LF = "include/rcubatch/index/lfht_index.hpp"
DRAIN = ("ref_drain_test", r"^ref_drain\.")
TRACK = ("ref_tracker_test", r"^ref_tracker\.")
SHARD = ("sharded_refs_test", r"^sharded_refs\.")
W = ("windows_test", r"^windows\.")

GP2_COND = "    return uninit_unlinked || batch_access::unlinked(batch_) || stats_.dependents_added > 0;"
GP2_CALL = "    if (needs_grace_period_2(unlinked)) grace_period_2();"


def au(regex):
    """A test of tests/async_unregister_test.cpp (the async_counting fixture) by its whole name."""
    return ("async_unregister_test", r"^async_unregister\.async_counting\.(" + regex + ")$")


def tk(regex):
    """A test of tests/async_unregister_takeover_test.cpp (issue 35) by its fixture and name."""
    return ("async_unregister_takeover_test", r"^async_unregister_takeover\.(" + regex + ")$")


def ow(regex):
    """A test of tests/owned_test.cpp (the owned fixture) by its whole name."""
    return ("owned_test", r"^owned\.owned\.(" + regex + ")$")


def cb(regex):
    """A test of tests/combining_test.cpp (the registry's combining gate, issue 35) by its name."""
    return ("combining_test", r"^combining\.combining\.(" + regex + ")$")


def cm(regex):
    """A test of tests/combining_meter_test.cpp (the gate's gather_meter, issue 35) by its name."""
    return ("combining_meter_test", r"^combining_meter\.gather_meter\.(" + regex + ")$")


TRACKED_PUT_CHECK = (  # issue 34 item 4: the plain put's decision, on a count read under the lock
    "  void put() noexcept {\n"
    "#ifdef RCUBATCH_REF_TRACKER_TEST_PROBE\n"
    "    // Test seam (tests/ref_tracker_test.cpp): another hold(tag) may land here, before the check\n"
    "    // takes the tracker's lock. Not defined otherwise: no cost.\n"
    "    RCUBATCH_REF_TRACKER_TEST_PROBE();\n"
    "#endif\n"
    "    if (!tracker_->has_untracked(*count_)) {")
TRACKED_PUT_CHECK_EARLY_READ = (  # the code before issue 34: the count read before the lock
    "  void put() noexcept {\n"
    "    const std::uint64_t seen = count_->count();\n"
    "#ifdef RCUBATCH_REF_TRACKER_TEST_PROBE\n"
    "    RCUBATCH_REF_TRACKER_TEST_PROBE();\n"
    "#endif\n"
    "    if (!(seen > tracker_->size())) {")


DD = "include/rcubatch/deferred_destroy.hpp"


def dd(regex):
    """A test of tests/deferred_destroy_test.cpp (memb and qsbr) by its name."""
    return ("deferred_destroy_test", r"^deferred_destroy\.deferred_flush\.(" + regex + r")<")


def rg(regex):
    """A test of tests/registry_test.cpp (the registry_counting fixture) by its whole name."""
    return ("registry_test", r"^registry\.registry_counting\.(" + regex + ")$")


MISSING_LANE_FATAL = (
    "      detail::diagnose_fatal(misuse_kind::not_in_batch,\n"
    "                             \"batch::queue: the dependent's type has no lane in this batch (pass \"\n"
    "                             \"rcubatch::lane(queue, policy) for it to rollback_many, or a policy for it to the \"\n"
    "                             \"registry): its parent would be destroyed while it can still be found\");\n")
MISSING_LANE_LEFT_OUT = (  # the behaviour before issue 22: reported, the dependent left out
    "      detail::diagnose_noexcept(misuse_kind::not_in_batch,\n"
    "                                \"batch::queue: the dependent's type has no lane in this batch (pass \"\n"
    "                                \"rcubatch::lane(queue, policy) for it to rollback_many); it is left out\");\n"
    "      return false;\n")

# (name, file, exact search string, replacement, (target, ctest regex))
MUTANTS = [
    ("gp2_skipped_for_cascade", RM, GP2_COND,
     "    return uninit_unlinked || batch_access::unlinked(batch_);", W),
    ("retire_does_not_need_gp2", BA,
     "    note_unlinked();\n    return true;", "    return true;", W),
    ("untied_disposed_before_gp2", RM, GP2_CALL,
     "    batch_access::dispose_untied(batch_);\n" + GP2_CALL, W),
    ("cookie_covered_by_running_gp", GD,
     "return gp_cookie{(s + 3) & ~std::uint64_t{1}, id_};",
     "return gp_cookie{(s + 2) & ~std::uint64_t{1}, id_};", W),
    ("wait_for_takes_running_gp_as_ended", GD,
     "    if (reached(c)) return note_elided();\n    wait_until_elapsed(c);",
     "    if (sequence_.load() + 1 >= c.sequence) return note_elided();\n    wait_until_elapsed(c);", W),
    ("last_put_never_notifies", RC,
     "    if (old == (kDraining | 1)) detail::last_put_of_draining(*this);", "    (void)old;", W),
    ("released_does_not_wake_drain", RD,
     "      cv_.notify_one();\n", "      // (no notify)\n", W),
    ("put_notifies_one_early", RC,
     "if (old == (kDraining | 1)) detail::", "if (old == (kDraining | 2)) detail::", W),
    ("stall_report_suppressed", RD,
     "    if (clock::now() >= next_report_) {", "    if (clock::now() < start_) {", W),
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
    ("release_does_not_put_parent", RM,  # release(), the untied path (release_with_tied puts it too)
     "    hooks_.destroy(&access::downcast<T>(r));\n    if (parent != nullptr) parent->refs().put();",
     "    hooks_.destroy(&access::downcast<T>(r));\n    (void)parent;", W),
    ("drain_ignores_holders", RM,
     "      if (access::begin_drain(r)) {",
     "      if (access::begin_drain(r) || true) {", W),
    ("gp1_skipped", RM,
     "    grace_period(phase::grace_period_1);\n", "", W),
    ("pipelined_skip_ignores_elapsed", RM,  # issue 24: GP #1 skipped although none has elapsed
     "    if (!any_close_many && !any_edges && unlisted_before_ && domain_.elapsed(*unlisted_before_)) {",
     "    if (!any_close_many && !any_edges && unlisted_before_) {",
     ("async_unregister_test", r"^async_unregister\.async_memb\.a_reader_inside_its_section_across_a_batch")),
    ("unregistering_state_skipped", RM,
     "      access::set_state(r, reg_state::unregistering);\n", "", W),
    ("retire_twice_not_checked", BA,
     "    if (node.is_linked()) {", "    if (false && node.is_linked()) {",
     ("batch_test", r"^batch\.")),
    ("lanes_scanned_first_to_last", RM,
     "      each_reversed([&](auto& l) { l.drain_scan(drain, lock_.released_during_waits(), pause_); });",
     "      each([&](auto& l) { l.drain_scan(drain, lock_.released_during_waits(), pause_); });",
     ("lanes_test", r"^lanes\.rollback_many_lanes\.")),
    # Issue 22.
    ("ticket_completed_before_destroy", AU,
     "      taken_ = issued;\n", "      taken_ = issued;\n      completion_.batch_ended(issued, false);\n",
     au("a_ticket_completes_only_after_its_object_was_destroyed")),
    ("validate_throw_leaves_object_queued", AU,
     "      q.remove(t);\n      throw;", "      throw;",
     au("a_submit_whose_validate_throws_leaves_the_object_registered_and_unqueued")),
    ("submit_does_not_mark_unlisted_early", AU,
     "    detail::registrable_access::set_unlisted_early(t, true);  // whichever batch takes it skips unlist\n",
     "", au("a_combined_batch_of_many_threads_costs_two_grace_periods|"
            "every_object_is_destroyed_exactly_once_across_threads|"
            "a_new_object_at_a_reused_address_is_still_unlisted_by_its_batch")),
    ("batch_ignores_unlisted_early_mark", RM,
     "if (fresh || !access::unlisted_early(r)) [[likely]]", "if (true) [[likely]]",
     au("a_combined_batch_of_many_threads_costs_two_grace_periods|"
        "every_object_is_destroyed_exactly_once_across_threads|"
        "a_new_object_at_a_reused_address_is_still_unlisted_by_its_batch")),
    ("no_gp_after_publish_threw", RGP,
     "    domain_->synchronize();  // the hook undid its links, but readers may have found obj\n", "",
     rg("a_publish_that_throws_after_exposing_the_object_waits_a_grace_period")),
    ("blocked_manual_submitter_never_woken", AU,
     "    if (wake_blocked) done_cv_.notify_all();", "    (void)wake_blocked;",
     au("a_manual_submitter_blocked_by_the_budget_is_woken_by_the_next_submit")),
    ("has_tied_bit_dropped_on_state_change", RB,
     "const unsigned char keep = o.state_.load(std::memory_order_relaxed) & registrable_base::kHasTied;",
     "const unsigned char keep = 0;",  # only a held owner passes through set_state after its notify
     ("windows_test",
      r"^windows\.drain_windows\.a_sub_object_retired_with_its_owner_outlives_the_owners_holders_and_destroy$")),
    ("gp_mutex_taken_online", GD,  # fails by the test's 30 s watchdog: run with --timeout 45
     "    detail::offline_while_blocked<Flavor> offline;\n    std::lock_guard lock(gp_mutex_);",
     "    std::lock_guard lock(gp_mutex_);",
     ("grace_domain_test", r"^grace_domain\.grace_domain_qsbr\.two_online_writers_calling_synchronize_both_return$")),
    ("writer_lock_taken_online", WL,
     "lock_offline<Flavors>(lock_);", "lock_.lock();",
     ("rcubatch_qsbr_writers", r"^stress\.qsbr_writers$")),
    ("wrong_registry_not_checked_at_push", RG,
     "    if (!owns<k>(obj)) [[unlikely]] {", "    if (false) [[unlikely]] {",
     rg("an_object_of_another_registry_is_refused_with_nothing_changed")),
    ("drain_holds_writer_lock_by_default", RGT,
     "return hold_lock_through_drain ? lock_release::barrier_only : lock_release::drain_only;",
     "return lock_release::never;",
     rg("a_holder_that_writes_while_its_object_drains_is_not_blocked")),
    ("reentrant_call_not_refused", RG,
     "if (!mutex_.held_by_caller()) [[likely]]", "if (true) [[likely]]",
     rg("a_hook_calling_the_registry_under_its_lock_is_refused_not_a_deadlock")),
    ("on_batch_wait_not_refused", AU,
     "detail::t_reclaimer_thread_of != this", "true",
     au("on_batch_waiting_on_the_reclaimer_thread_is_diagnosed_not_a_hang")),
    # Issue 26: the drain's flush before it sleeps, tracked holders, the sharded run-down.
    ("drain_sleeps_without_flushing", RD,
     "      if (flush_and_recheck(domain) == 0) break;", "", DRAIN),
    ("drain_flush_without_barrier", RD,
     "    domain.barrier();  // offline", "    // domain.barrier();  // offline", DRAIN),
    ("stall_report_names_no_holder", RM,
     "      report_holders(obj, holders,", "      if (false) report_holders(obj, holders,", TRACK),
    ("token_put_twice_not_refused", RT, "      if (t.spent_) {", "      if (false) {", TRACK),
    ("plain_put_steals_tracked_hold", RT,
     "    if (!tracker_->has_untracked(*count_)) {", "    if (false) {", TRACK),
    ("sharded_never_run_down", RM,
     "if constexpr (is_sharded_v<T>) sharded_access::run_down", "if constexpr (false) sharded_access::run_down", SHARD),
    ("sharded_run_down_without_bias", SR,
     "kBias = std::int64_t{1} << 28", "kBias = 0", SHARD),
    # Issue 34: where two features meet.
    ("tracked_put_reads_count_before_lock", RT, TRACKED_PUT_CHECK, TRACKED_PUT_CHECK_EARLY_READ,
     ("ref_tracker_test",
      r"^ref_tracker\.tracked_misuse\.a_plain_put_is_taken_when_a_tracked_hold_lands_just_before_its_check$")),
    ("drain_barrier_on_call_rcu_worker", RD,  # fails by the test's 30 s watchdog: run with --timeout 45
     "    if (!on_call_rcu_worker<Flavor>()) {", "    if (true) {",
     ("registry_test", r"^registry\.registry_call_rcu\.an_unregister_from_a_call_rcu_callback_completes_once_the_holder_lets_go_during_its_drain$")),
    ("barrier_keeps_writer_lock", WL,  # fails by the test's 30 s watchdog: run with --timeout 45
     "    if (when_ == lock_release::barrier_only) release();\n  }\n  void relock_after_barrier()",
     "  }\n  void relock_after_barrier()",
     ("registry_test", r"^registry\.registry_call_rcu\.a_queued_callback_that_takes_the_writer_lock_does_not_deadlock_a_drain_holding_it$")),
    ("hlist_table_bytes_unchecked", HL,
     "    if (n > kMaxTableBuckets) throw std::bad_alloc();\n    void* mem", "    void* mem",
     ("index_hlist_test", r"^index_hlist\.hlist_index_sizes\.")),
    ("hlist_oscillation_wait_in_read_section", HL,
     "        if (in_section()) return;               // a later update outside one does it\n", "",
     ("index_hlist_test", r"^index_hlist\.hlist_index_oscillation\.")),
    # Killed only when the two writers really run in parallel: a lost update needs the other
    # writer's RMW between this one's load and store. On the loaded 2-vCPU VM (load 7-11) the test's
    # 2,000,000 add/unlink cycles per writer killed it in the 2026-12-04 run; at 1,000,000 it
    # survived 1 of 2 runs, at 200,000 3 of 3. Probabilistic: rerun it alone before calling it survived.
    ("lfht_size_not_an_rmw", LF,
     "    size_.fetch_add(1, std::memory_order_relaxed);",
     "    size_.store(size_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);",
     ("index_lfht_test", r"^index_lfht\.lfht_index_writers\.")),
    ("drain_returns_with_putter_in_released", RD,
     "    while (in_released_.load(std::memory_order_acquire) != 0) {",
     "    while (false && in_released_.load(std::memory_order_acquire) != 0) {",
     ("ref_drain_test", r"^ref_drain\.ref_drain\.the_drain_does_not_return_while_the_last_putter_is_still_inside_released$")),
    # Not lanes' ...a_dependent_of_a_type_with_no_lane_is_fatal_under_every_policy: it passes on this
    # mutant (its death-test child, under report, still dies after printing the same message).
    ("missing_lane_left_out", BA, MISSING_LANE_FATAL, MISSING_LANE_LEFT_OUT,
     rg("a_cascade_to_a_type_without_a_lane_is_fatal_before_its_parent_is_destroyed")),
    # Issue 34: the seams between features.
    ("owned_parent_replaced_with_children_left_out_of_its_list", RGP,  # 34.1, the call replace_family adds
     "  link_owned(new_p);\n  new_p.mark_registered();", "  new_p.mark_registered();",
     ow("a_stream_replaced_with_its_chunks_is_destroyed_with_its_session|"
        "a_chunk_replaced_with_its_pieces_four_levels_down_is_destroyed_with_its_session")),
    ("successor_does_not_inherit_its_owner", OW,  # 34.1, the one path replace and replace_with_children share
     "  if (hook.parent() == nullptr && old_hook.is_linked()) hook.set_parent(*old_hook.parent());",
     "  (void)old_hook;",
     ow("a_child_replaced_alone_takes_its_place_in_the_parents_list|"
        "a_stream_replaced_with_its_chunks_is_destroyed_with_its_session|"
        "a_replace_with_children_whose_owner_is_going_away_is_refused_with_nothing_changed")),
    ("owner_hook_parent_without_owning_not_refused", OW,  # 34.3
     "    return registrable_access::named_as_owner(base_of(obj));", "    return false && base_of(obj).state() == reg_state::registered;",
     ow("a_parent_named_by_an_owner_hook_whose_policy_owns_nothing_is_refused_before_anything_changes")),
    ("refused_unregister_not_reported", RG,  # 34.7
     "    if (q.refused_ > 0 && q.size() == 0) {", "    if (false) {",
     rg("a_second_unregister_of_the_same_object_under_report_is_refused_and_says_so")),
    ("hlist_replace_leaves_successor_back_pointer", HL,  # 34.9: the successor's prev still leads into old
     "    if (old->next != nullptr) old->next->prev = &h.node_;\n", "",
     ("index_hlist_test", r"^index_hlist\.hlist_index_test\.a_walk_after_a_replace_in_a_shared_chain")),
    # Issue 36: the order hint is advisory; a drain that trusted it would release the array's
    # objects instead of the queue's. (Its off-by-one past the array is ASan's to catch: the
    # asan-ubsan preset runs registry_order_hint_test; this build would let it survive.)
    ("drain_trusts_the_order_hint", RM,
     "        registrable_base& r = *obj;\n        if (access::try_drain_unheld(r)) {",
     "        registrable_base& r = ahead <= hinted && ahead > 0 ? static_cast<registrable_base&>(*hint[ahead - 1]) : *obj;\n"
     "        if (access::try_drain_unheld(r)) {",
     ("registry_order_hint_test",
      r"^registry_order_hint\.registry_order_hint\.an_array_that_disagrees_with_the_queue_order_still_destroys_each_object_once$")),
    # issue 36: the deferred flush (deferred_destroy.hpp) and the chunked unlist.
    ("chunked_unlist_never_lets_a_writer_in", RM, "          lock.yield_to_writers();\n", "",
     dd("a_writer_gets_in_between_two_chunks_and_meets_the_batch_as_going_away")),
    ("try_unregister_by_key_pushes_an_object_of_a_running_batch", RGK,
     "      } else if (going_away(*obj)) {  // still listed, in a running batch (a chunked unlist's)\n"
     "        ++r.missed;\n        ++going;\n", "",
     dd("a_writer_gets_in_between_two_chunks_and_meets_the_batch_as_going_away")),
    ("deferred_ticket_done_before_its_destroys", DD,
     "      jobs_.pop_front();\n      lock.unlock();\n      const batch_stats st = job->run(",
     "      jobs_.pop_front();\n      lock.unlock();\n      job->state->complete({});\n      const batch_stats st = job->run(",
     dd("the_flush_returns_before_any_destroy_and_its_ticket_waits_for_the_last|"
        "a_held_object_is_destroyed_after_its_holder_lets_go_not_before_the_call_returns")),
    ("deferred_flush_ignores_max_pending_objects", DD,
     "  bool fits(std::size_t n) const noexcept { return pending_ == 0 || pending_ + n <= options_.max_pending_objects; }",
     "  bool fits(std::size_t n) const noexcept { return true || n == 0; }",  # killed by the test's 30 s watchdog
     dd("a_flush_beyond_the_pending_limit_is_handed_over_only_after_the_earlier_batch_is_destroyed")),
    ("deferred_flush_destroys_on_the_callers_thread", RGD,  # killed by the test's 30 s watchdog
     "  reclaimer.submit<thread_flavors>(std::move(job));", "  state->complete(job->run(0, false));",
     dd("the_flush_returns_before_any_destroy_and_its_ticket_waits_for_the_last")),
    # issue 36, r36-flush2: the deferred flush's order hint (killed by SIGSEGV on the revoked array)
    ("deferred_drain_keeps_the_callers_array_as_its_hint", RGD,
     "    engine->set_order_hint();  // the drain runs after the call returns, when the caller's array may be gone\n",
     "", dd("a_flush_never_reads_the_callers_pointer_array_after_the_call_returns")),
    ("deferred_copied_hint_is_the_callers_array", RGD,
     "    engine->set_order_hint({h.key, copy, h.size});", "    engine->set_order_hint(h);",
     dd("a_flush_never_reads_the_callers_pointer_array_after_the_call_returns")),
]


def rs(regex):
    """A test of tests/registry_semantics_test.cpp (issue 37) by its test name, either suite."""
    return ("registry_semantics_test",
            r"^registry_semantics\.(semantics_counting|registry_semantics)\.(" + regex + ")$")


MUTANTS += [  # issue 37: registry semantics, round 2 (each killed by hand on 2026-12-04, see the branch r37-api)
    ("try_replace_looks_up_before_the_lock", RGP,  # the hand-written reload: a racing delete frees what it found
     "  std::scoped_lock lock(mutex_);\n"
     "  if (!is_fresh(n, caller, \"the new object\")) {\n"
     "    r.stats.refused = true;\n"
     "    return r;\n"
     "  }\n"
     "  T* const o = std::forward<FindOld>(find_old)();\n",
     "  T* const o = std::forward<FindOld>(find_old)();\n"
     "  std::this_thread::yield();  // preempted between the lookup and the lock (without it: survived 3 runs)\n"
     "  std::scoped_lock lock(mutex_);\n"
     "  if (!is_fresh(n, caller, \"the new object\")) {\n"
     "    r.stats.refused = true;\n"
     "    return r;\n"
     "  }\n",
     rs("a_replace_by_key_racing_a_delete_by_key_is_one_result_each_never_misuse")),
    ("replace_lost_race_is_misuse", RGP,
     "bool lost = going_away(*o);  // in a batch", "bool lost = false;  // in a batch",
     rs("a_replace_of_an_object_already_being_unregistered_is_a_result_not_misuse")),
    ("keep_children_drops_them", RGP,
     "if constexpr (kKeep) children_step<K>([&]<class Rel>() { Rel::adopt(*o, n); });", "",
     rs("a_replace_keeping_children_re_parents_them_and_costs_one_grace_period")),
    ("adopted_children_name_the_old_parent", OW,
     "for (; it != dst.end(); ++it) hook_of(*it).parent_.store(&to, std::memory_order_release);", "(void)it;",
     rs("a_group_replaced_a_thousand_times_keeps_its_routes_under_two_readers")),
    ("family_parent_published_before_children", RGP,  # the 0.1 order: a parent found before its children are there
     "    for (; done < fresh.size(); ++done) {\n"
     "      const publish_result r = detail::to_publish_result(cp.publish(*fresh[done]));\n"
     "      if (r != publish_result::published) {\n"
     "        exposed = exposed || r == publish_result::refused_after_exposure;\n"
     "        break;  // undone by the policy itself\n"
     "      }\n"
     "      exposed = true;\n"
     "    }\n"
     "    if (done == fresh.size()) {\n"
     "      const publish_result r = detail::to_publish_result(pp.publish(parent));\n"
     "      parent_published = r == publish_result::published;\n"
     "      exposed = exposed || r == publish_result::refused_after_exposure;\n"
     "    }\n",
     "    parent_published = detail::to_publish_result(pp.publish(parent)) == publish_result::published;\n"
     "    exposed = true;\n"
     "    for (; parent_published && done < fresh.size(); ++done) {\n"
     "      const publish_result r = detail::to_publish_result(cp.publish(*fresh[done]));\n"
     "      if (r != publish_result::published) break;\n"
     "    }\n",
     rs("add_with_children_under_two_readers_never_shows_a_parent_without_all_its_children")),
    ("family_refusal_keeps_children_linked", RGP,
     "while (done > 0) cp.unlist(*fresh[--done]);", "done = 0;",
     rs("add_with_children_with_a_duplicate_key_anywhere_publishes_nothing")),
    ("add_under_takes_a_missing_parent", RGP,
     "if (p == nullptr || going_away(*p)) return add_status::parent_gone;",
     "if (p == nullptr) return add_status::added;\n                           if (going_away(*p)) return add_status::parent_gone;",
     rs("add_under_resolves_the_parent_by_key_and_refuses_a_gone_parent")),
    ("conditional_delete_ignores_pred", RGK,
     "} else if (!static_cast<bool>(pred(std::as_const(*obj)))) {", "} else if (false) {",
     rs("try_unregister_with_a_predicate_deletes_only_when_it_holds_under_the_lock")),
    ("unregister_if_ignores_pred", RGK,
     "|| !static_cast<bool>(pred(std::as_const(obj)))) continue;", ") continue;",
     rs("unregister_if_flushes_every_match_in_one_batch_and_keeps_the_rest")),
    ("capacity_not_checked", RGP,
     "  if (!has_room<K>(1)) {\n", "  if (false) {\n",
     rs("an_add_beyond_the_capacity_is_refused_as_full_and_the_count_is_kept")),
    ("add_and_hold_takes_no_hold", RGP,
     "if (hold) t.refs().hold();", "(void)hold;",
     rs("add_and_hold_returns_the_object_held_until_the_caller_puts_it")),
    ("indexed_ignores_index_arguments", IX,
     "explicit indexed(IndexArgs&&... per_index) : indexes_(std::forward<IndexArgs>(per_index)...) {}",
     "explicit indexed(IndexArgs&&...) : indexes_() {}",
     rs("the_registry_constructs_its_policies_and_indexes_from_the_arguments_given")),
    ("try_replace_not_found_reported_as_refused", RGP,
     "  if (o == nullptr) {\n    r.status = replace_status::not_found;",
     "  if (o == nullptr) {\n    r.status = replace_status::refused;",
     rs("try_replace_by_key_replaces_the_object_with_that_key_or_says_not_found")),
    ("try_replace_family_not_found_reported_as_refused", RGP,
     "  if (found == nullptr) {\n    result.status = replace_status::not_found;",
     "  if (found == nullptr) {\n    result.status = replace_status::refused;",
     rs("try_replace_with_children_by_key_says_not_found_and_leaves_the_new_family_unpublished")),
    # Issue 37 items 5 and 6: children readers walk, members shared by several parents.
    ("owned_rcu_unlink_leaves_predecessor", OW,  # the readers' chain keeps an unlinked child
     "    slot.store(next_of(c).load(std::memory_order_relaxed), std::memory_order_release);\n",
     "    static_cast<void>(slot);\n",
     ("owned_readers_test", r"^owned_readers\.")),
    ("owned_rcu_unlink_clears_next", OW,  # unlinked as a safe_link hook is: a reader on it stops short
     "    list_.erase(it);\n  }\n\n  /// Requires: the writer lock; from's parent is going away",
     "    next_of(c).store(nullptr, std::memory_order_release);\n    list_.erase(it);\n  }\n\n  /// Requires: the writer lock; from's parent is going away",
     ("owned_readers_test", r"^owned_readers\.owned_readers\.a_reader_standing_on_a_child_being_deleted")),
    ("membership_member_keeps_its_edges_in_groups", "include/rcubatch/membership.hpp",
     "    for (edge_type& e : (m.*Groups).list_) (e.group_->*List).unlink(e);", "    static_cast<void>(m);",
     ("membership_test", r"^membership\.")),
    ("membership_group_hook_skipped", "include/rcubatch/membership.hpp",
     "&& !b.contains(g)) Hook(g, b);", "&& !b.contains(g) && false) Hook(g, b);",
     ("membership_test", r"^membership\.")),
    ("membership_group_leaves_edges_in_members", "include/rcubatch/membership.hpp",
     "      of_member.erase(of_member.iterator_to(*e));\n", "",
     ("membership_test", r"^membership\.")),
    # Issue 35: the reclaimer's take-over, parked batches, and three survivors of the suite.
    ("queued_object_try_unregister_is_misuse", RG,
     "           (st != reg_state::registered || detail::registrable_access::owner(base) != nullptr);",
     "           (st != reg_state::registered);",
     tk("takeover\\.try_unregister_of_an_object_waiting_in_an_unattached_reclaimer_is_a_lost_race_not_misuse")),
    ("pipelined_cookie_taken_before_unlist", AU,
     "    detail::hooks_of<policy_at<k>, T>{registry_.template policy<policy_at<k>>()}.unlist(t);\n"
     "    detail::registrable_access::set_unlisted_early(t, true);  // whichever batch takes it skips unlist\n"
     "    g.unlisted_before.emplace(registry_.domain().snapshot());  // emplace: no test of the optional\n",
     "    g.unlisted_before.emplace(registry_.domain().snapshot());  // emplace: no test of the optional\n"
     "    detail::hooks_of<policy_at<k>, T>{registry_.template policy<policy_at<k>>()}.unlist(t);\n"
     "    detail::registrable_access::set_unlisted_early(t, true);  // whichever batch takes it skips unlist\n",
     tk("takeover\\.a_grace_period_during_submits_unlist_does_not_let_its_batch_skip_grace_period_1")),
    ("takeover_not_told", BA,
     "    if (from != nullptr) tell_takeover(*from, r);\n", "",
     tk("takeover\\.a_submitted_stream_taken_by_its_sessions_cascade_completes_its_ticket_only_once_destroyed")),
    ("parked_batch_keeps_the_run", RM,  # fails by the test's 60 s watchdog: run with --timeout 90
     "      if (!parked) parked_->wait(domain_);", "      parked_->wait(domain_);\n      parked = false;",
     tk("takeover\\.a_held_object_does_not_stall_ten_thousand_objects_submitted_after_it")),
    ("parked_ticket_done_with_its_batch", "include/rcubatch/detail/reclaim_lot.hpp",  # done while held
     "      if (std::binary_search(s.held.begin(), s.held.end(), t)) return true;", "      static_cast<void>(s);",
     tk("takeover\\.a_held_object_does_not_stall_ten_thousand_objects_submitted_after_it_to_a_manual_reclaimer")),
    ("lot_not_told_by_last_put", AU,  # the lot's runner never hears the put: fails by the watchdog
     "      me->lot_.tell();\n", "",
     tk("takeover\\.a_caller_leading_a_batch_that_parks_on_another_callers_held_object_returns")),
    ("owned_child_unlinked_at_submit", AU,  # the behaviour before issue 35: a parent then waits for it
     "    detail::registrable_access::set_unlisted_early(t, true);  // whichever batch takes it skips unlist\n",
     "    detail::registrable_access::set_unlisted_early(t, true);  // whichever batch takes it skips unlist\n"
     "    if constexpr (!std::is_void_v<detail::owner_relation_t<T, Policies...>>)\n"
     "      detail::unlink_from_owner<detail::owner_relation_t<T, Policies...>>(t);\n",
     ow("a_parent_deleted_after_its_child_was_submitted_to_a_manual_reclaimer_takes_the_child_over")),
    # Issue 35: the registry's combining gate (combining.hpp; the reclaimer only listens since).
    ("combining_leader_ignores_max_batch", CB,
     "    while (!queue_.empty() && n < options_.max_batch) {", "    while (!queue_.empty()) {",
     cb("a_leader_takes_at_most_max_batch_calls_and_the_rest_get_the_next_leader")),
    ("combining_lone_caller_queues", RG,  # no try-lock fast path: a lone caller leads a batch of one
     "      if (gate_.idle() && mutex_.try_lock()) {", "      if (false && mutex_.try_lock()) {",
     cb("a_lone_caller_that_finds_the_lock_free_goes_alone_at_once")),
    ("combining_follower_gets_the_batchs_objects", RG,
     "          result.stats.objects = result.unregistered;\n", "",
     cb("callers_queued_while_the_lock_is_held_share_one_batch_each_with_its_own_objects_results")),
    ("combining_detach_keeps_the_listener", CB,
     "    listener_ = nullptr;\n", "",
     cb("a_listener_detached_while_a_call_is_in_its_batch_is_told_nothing_more_and_the_call_completes")),
    ("combining_follower_sleeps_online", CB,  # fails by the test's 30 s watchdog: run with --timeout 45
     "      detail::offline_while_blocked<Flavors> offline;\n", "",
     cb("under_qsbr_a_follower_asleep_in_the_gate_does_not_hold_up_its_leaders_grace_period")),
    ("combining_goes_alone_while_released_callers_are_away", CB,
     "    return !leader_waiting_.load(std::memory_order_relaxed) && away_.load(std::memory_order_relaxed) == 0;",
     "    return !leader_waiting_.load(std::memory_order_relaxed);",
     cb("with_gather_released_after_a_shared_batch_a_lone_caller_leads_once_then_the_callers_it_released_are_forgotten")),
    ("combining_gather_keeps_callers_that_never_came_back", CB,
     "    away_.store(0, std::memory_order_relaxed);  // came back, or never will", "    // (mutant: not forgotten)",
     cb("with_gather_released_after_a_shared_batch_a_lone_caller_leads_once_then_the_callers_it_released_are_forgotten")),
    ("gather_meter_prefers_the_dearer_way", CB,
     "gathered_.per_call() <= alone_.per_call();", "gathered_.per_call() >= alone_.per_call();",
     cm(".*")),
    ("gather_meter_never_probes", CB,
     "    return !prefer;\n", "    return prefer;\n",
     cm("the_way_not_preferred_is_probed_once_every_sixteen_choices_times_how_much_dearer_it_is")),
    ("gather_meter_probes_a_dearer_way_as_often", CB,
     "    return kProbeEvery * static_cast<unsigned>(ratio);", "    return kProbeEvery;",
     cm("the_way_not_preferred_is_probed_once_every_sixteen_choices_times_how_much_dearer_it_is")),
    ("combining_thrown_batch_not_handed_back", RG,
     "? combining_turn::alone", "? combining_turn::done",
     cb("a_shared_batch_whose_validate_throws_hands_each_call_back_to_run_alone")),
]


def rp(regex):
    """A test of tests/rollback_many_passes_test.cpp (issue 36) by its fixture and name."""
    return ("rollback_many_passes_test", r"^rollback_many_passes\.(" + regex + ")")


MUTANTS += [  # issue 36 (r36-floor): passes skipped when they have nothing to do (each killed by hand, 2026-12-05)
    ("notify_skipped_with_children_to_queue", RM, "        if (!children) {", "        if (true) {",
     rp("notify_skip\\.")),
    ("notify_pass_never_skipped", RM, "        if (!children) {", "        if (false) {",
     rp("notify_skip\\.a_batch_of_parents_without_children_makes_no_notify_pass$")),
    ("held_object_never_put_back", RM, "          objs.push_back(r);\n", "",  # killed by the tests' 30 s watchdogs
     rp("drain_walk\\.")),
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
    only = list(filter(None, a.only.split(",")))
    unknown = set(only) - {m[0] for m in MUTANTS}
    if unknown:
        sys.exit("no such mutant: " + ", ".join(sorted(unknown)))
    by_name = {m[0]: m for m in MUTANTS}
    mutants = [by_name[n] for n in dict.fromkeys(only)] if only else MUTANTS  # --only: in its order
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




def ir(regex):
    """A test of tests/interaction_rows_test.cpp (docs/guide.md's interaction table) by its name."""
    return ("interaction_rows_test", r"^interaction_rows\.interaction_rows\.(" + regex + ")$")


def orr(regex):
    """A test of tests/owned_readers_test.cpp by its name."""
    return ("owned_readers_test", r"^owned_readers\.owned_readers\.(" + regex + ")$")


UQ = "include/rcubatch/unreg_queue.hpp"
MUTANTS += [  # the review gaps of issues 36-37 (branch r-gaps): splice_back under readers, interaction rows
    ("splice_back_does_not_link_the_moved_chain", OW,  # the new parent's readers see no child
     "    slot.store(from.rcu_first_.load(std::memory_order_relaxed), std::memory_order_release);\n",
     "    static_cast<void>(slot);\n",
     orr("a_reader_standing_mid_walk_on_the_old_parent_across_a_replace_keeping_children_walks_on_to_every_child|"
         "two_readers_walking_a_parent_replaced_a_thousand_times_keeping_its_children_see_every_lasting_child_and_none_destroyed")),
    ("splice_back_nulls_the_old_head", OW,  # the merge's first version: a late reader of the old parent sees none
     "    list_.splice(list_.end(), from.list_);  // constant_time_size: O(1)\n",
     "    from.rcu_first_.store(nullptr, std::memory_order_release);\n"
     "    list_.splice(list_.end(), from.list_);  // constant_time_size: O(1)\n",
     orr("a_reader_that_found_the_old_parent_before_a_replace_keeping_children_and_walks_after_it_sees_every_child")),
    ("keep_children_shared_only_after_the_publish", RGP,  # readers finding the new parent saw no child
     "  if constexpr (kKeep) children_step<K>([&]<class Rel>() { Rel::share(*o, n); });\n", "",
     orr("a_reader_finding_the_new_parent_the_moment_a_replace_keeping_children_publishes_it_sees_every_child")),
    ("object_in_another_queue_moved_without_a_diagnosis", UQ,  # a deferred flush takes a submitted object
     "      detail::diagnose(misuse_kind::queued_in_other_queue,\n",
     "      if (false) detail::diagnose(misuse_kind::queued_in_other_queue,\n",
     ir("a_deferred_flush_beside_an_attached_reclaimer_is_its_own_batch_and_refuses_an_object_submitted_there")),
    ("sharded_count_not_run_down", SR,
     "    o.shards_.run_down(static_cast<registrable_base&>(o).refs());\n", "    static_cast<void>(o);\n",
     ir("a_deferred_flush_of_held_tracked_and_sharded_objects_runs_the_sharded_counts_down_at_once_and_destroys_both_once_let_go")),
    ("replaced_member_leaves_no_group_empty", "include/rcubatch/membership.hpp",
     "&& !b.contains(g)) Hook(g, b);", "&& !b.contains(g) && false) Hook(g, b);",
     ir("a_replace_drops_the_memberships_of_the_old_version_and_a_group_it_leaves_empty_goes_in_its_batch")),
    ("family_children_not_linked_before_the_parent_is_published", RGP,  # readers finding the parent saw no child
     "    for (; linked < fresh.size(); ++linked) Rel::link(parent, *fresh[linked]);\n",
     "",
     orr("a_reader_finding_the_parent_the_moment_add_with_children_publishes_it_sees_every_child")),
    ("family_new_children_linked_only_after_the_new_parent_is_published", RGP,
     "    for (; linked < fresh.size(); ++linked) Rel::link(new_p, *fresh[linked]);\n    pp.replace(old_p, new_p);",
     "    pp.replace(old_p, new_p);\n    for (; linked < fresh.size(); ++linked) Rel::link(new_p, *fresh[linked]);",
     orr("a_reader_finding_the_new_parent_the_moment_replace_with_children_publishes_it_sees_every_new_child")),
    ("objects_of_later_chunks_not_going_away", RG,
     "           (st != reg_state::registered || detail::registrable_access::owner(base) != nullptr);",
     "           (st != reg_state::registered);",
     ir("replaces_and_add_under_between_two_chunks_of_an_unlist_meet_its_objects_as_going_away")),
]


MUTANTS += [  # issue 35 (branch r35-seams): the gate's seams; tests no mutant killed before (each killed by hand, 2026-12-05)
    ("combining_take_not_waking_the_next_leader", CB,  # killed by the test's 30 s watchdog: run with --timeout 45
     "      wake_next_leader(next);\n", "",
     cb("many_threads_through_the_gate_destroy_each_object_exactly_once")),
    ("combining_call_rcu_worker_follows_a_leader", CB,  # killed by the test's 30 s watchdog: run with --timeout 45
     "    if (detail::on_call_rcu_worker_of<Flavors>::now()) return me.turn_ = turn::alone;\n", "",
     cb("a_caller_on_a_call_rcu_worker_never_waits_in_the_gate_for_a_leader_whose_drain_needs_that_worker")),
    ("drain_walks_earliest_lane_first", RM,  # parents before the children of a later lane
     "      each_reversed([&](auto& l) { l.drain_scan(drain, lock_.released_during_waits(), pause_); });",
     "      each([&](auto& l) { l.drain_scan(drain, lock_.released_during_waits(), pause_); });",
     rp("notify_skip\\.a_child_unlisted_before_its_parent_in_the_same_batch_still_goes_first$")),
    ("gate_lost_race_diagnosed_as_misuse", RG,  # try_unregister(obj) of an object in a deferred flush
     "          if (lost_race_is_result) {", "          if (false) {",
     ir("a_gate_caller_beside_a_deferred_flush_draining_a_held_object_goes_alone_and_finds_that_object_going_away")),
    ("hold_lock_through_drain_ignored", RGT,
     "  return hold_lock_through_drain ? lock_release::barrier_only : lock_release::drain_only;",
     "  return lock_release::drain_only;",
     ir("with_hold_lock_through_drain_a_shared_batch_keeps_the_writer_lock_while_its_followers_wait_for_a_held_object")),
]


def uq(regex):
    """A test of tests/unreg_queue_test.cpp by its name."""
    return ("unreg_queue_test", r"^unreg_queue\.unreg_queue\.(" + regex + ")$")


MUTANTS += [  # issue 36 (r36-push): unreg_queue::push_range (each killed by hand, 2026-12-05)
    ("push_range_links_at_the_head", UQ,
     "    const typename list_type::iterator before = list().empty() ? list().before_begin() : list().last();\n",
     "    const typename list_type::iterator before = list().before_begin();\n",
     uq("push_range_queues_a_range_in_order_after_what_is_already_queued")),
    ("push_range_keeps_the_prefix_it_linked_before_a_refusal", UQ,
     "      list().erase_after_and_dispose(before, list().end(),\n"
     "                                     [](detail::registrable_base* obj) { access::set_owner(*obj, nullptr); });\n",
     "",
     uq("push_range_refuses_a_range_with_an_unregistered_object_in_the_middle_and_links_none")),
    ("push_range_does_not_mark_what_it_links", UQ,
     "      if constexpr (!Marked) access::set_owner(*current, queue);\n", "      static_cast<void>(queue);\n",
     uq("push_range_refuses_an_object_named_twice_or_already_queued_and_links_none")),
    ("push_range_of_nothing_reports_a_refusal", UQ,
     "    if (first == last) return true;\n", "    if (first == last) return false;\n",
     uq("push_range_of_an_empty_range_changes_nothing")),
    ("drain_always_takes_the_walk_without_chunks", "include/rcubatch/rollback_many.hpp",
     "    const bool plain = hinted == 0 && chunks.every == 0;\n", "    const bool plain = true;\n",
     ("rollback_many_passes_test",
      r"^rollback_many_passes\.drain_walk\.a_drain_in_chunks_pauses_between_every_two_objects_and_never_after_the_last$")),
    ("unlist_always_takes_the_walk_without_chunks", "include/rcubatch/rollback_many.hpp",
     "      if (chunk != 0) {\n        walk(std::true_type{});\n", "      if (false) {\n        walk(std::true_type{});\n",
     ("deferred_destroy_test", r"^deferred_destroy\.deferred_flush\.a_writer_gets_in_between_two_chunks_and_meets_the_batch_as_going_away<")),
]


MUTANTS += [  # issue 35, submit's cost (branch r35-submit; each killed by hand, 2026-12-05)
    ("next_generation_not_reserved_by_the_batch", AU,  # submits grow the vectors again: they allocate
     "    open_generation(next->requests, taking.requests.submit_stamps.size());  // best effort room (never throws)",
     "    next->requests.id = detail::g_next_generation_id.fetch_add(1, std::memory_order_relaxed);",
     ("async_unregister_alloc_test",
      r"^async_unregister_alloc\.async_unregister_alloc\.a_generation_as_large_as_the_last_is_submitted_without_allocating$")),
    ("parked_tickets_read_as_none", AU,  # the empty-lot shortcut taken with objects parked
     "return lot_.empty() ? 0 : lot_.count_through", "return true ? 0 : lot_.count_through",
     tk(r"takeover\.a_held_object_does_not_stall_ten_thousand_objects_submitted_after_it")),
]


MUTANTS += [  # issue 35 item 6 (branch r35-combine, 2026-12-05): combining costs nothing where it cannot pay; counted, not timed
    ("combining_lone_leader_finishes_under_the_gate_mutex", CB,
     "    if (b.size() == 1 && !listening()) {", "    if (false) {",
     cb("a_lone_caller_takes_no_gate_mutex_and_no_sleep_and_a_lone_leader_takes_it_twice")),
    ("combining_wakes_a_caller_not_asleep", CB,  # a call that slept once (the next leader) is notified again
     "    if (!c.asleep_) return;\n", "    if (!c.cv_) return;\n",
     cb("the_gate_wakes_only_callers_asleep_in_it")),
]


MUTANTS += [  # issue 35, a submit without the reclaimer's mutex (branch r35-submit, 2026-12-05)
    ("bytes_threshold_not_reset_at_the_take", AU,  # only the first generation is ever due by bytes
     "      transition_bytes_ = options_.batch_bytes;\n", "",
     au(r"the_bytes_threshold_is_due_again_in_every_generation")),
    ("count_high_water_not_noted_at_batch_end", AU,  # submits no longer raise it: it would read 0
     "      note_high_water_count();\n      if (parked != nullptr) lot_.join(*parked);\n",
     "      if (parked != nullptr) lot_.join(*parked);\n",
     au(r"the_bytes_threshold_is_due_again_in_every_generation")),
    ("bytes_high_water_not_noted_at_release", "include/rcubatch/detail/reclaim_budget.hpp",
     "    high_water_ = std::max(high_water_, charged_.fetch_sub(bytes, std::memory_order_relaxed));\n",
     "    charged_.fetch_sub(bytes, std::memory_order_relaxed);\n",
     au(r"the_bytes_threshold_is_due_again_in_every_generation")),
    ("latency_stamps_read_as_nanoseconds", "include/rcubatch/detail/latency_histogram.hpp",  # x86: cycles
     "      if (end.ticks <= origin_.ticks || end.ns <= origin_.ns) return 1.0;\n", "      return 1.0;\n",
     au(r"request_latencies_are_in_nanoseconds_of_the_steady_clock")),
]


def rr(regex):
    """A rollback_range test of tests/rollback_many_test.cpp (issue 36, r36-teardown) by its name."""
    return ("rollback_many_test", r"^rollback_many\.rollback_many_counting\.rollback_range_(" + regex + ")$")


MUTANTS += [  # issue 36 (r36-teardown): rollback_range's fused walk (each killed by hand, 2026-12-05)
    ("fused_walk_queues_without_unlisting", RM,
     "        unlist_one<true>(r, hooks, children);\n", "        static_cast<void>(r);\n",
     rr("unlists_each_object_as_it_queues_it_and_keeps_the_phase_order")),
    ("fused_walk_leaves_the_state_registered", RM,
     "      access::set_flagless_state(r, reg_state::unregistering);\n", "",
     rr("unlists_each_object_as_it_queues_it_and_keeps_the_phase_order")),
    ("range_refusal_not_diagnosed", RM,
     "    queue_access::refuse_in_range(q, refused->obj, refused->owner, refused->index);\n", "",
     rr("with_a_refused_object_in_the_middle_changes_nothing")),
    ("range_refusal_not_counted_as_skipped", RM,
     "    stats.skipped = stats.objects == 0 ? static_cast<std::size_t>(std::ranges::distance(first, last)) : refused->left;\n", "",
     rr("whose_first_object_is_refused_changes_nothing")),
    ("range_refusal_in_the_queue_then_batch_way_not_noted", RM,
     "    if (!q.push_range(first, last, proj)) {", "    if (!q.push_range(first, last, proj) && false) {",
     rr("with_close_many_and_a_refused_object_changes_nothing")),
    ("range_refusal_leaves_its_marks", RM,  # the accepted prefix stays marked as queued: a retry refuses it
     "      lane.unmark_range(first, *bad, proj);\n", "",
     rr("with_a_refused_object_in_the_middle_changes_nothing")),
    ("range_not_checked_before_its_walk", RM,  # the walk unlists the objects before the refused one
     "    if (const std::optional<It> bad = lane.mark_range(first, last, proj)) [[unlikely]] {",
     "    if (const std::optional<It> bad = lane.mark_range(first, first, proj)) [[unlikely]] {",
     rr("with_a_refused_object_in_the_middle_changes_nothing")),
    ("range_in_a_read_section_queued_anyway", RM,
     "    if (in_read_section<Flavor>()) return refuse_in_read_section();\n    stats_.batch_id",
     "    stats_.batch_id",
     rr("is_refused_inside_a_read_section_with_nothing_queued")),
    ("range_check_ignores_another_queue", UQ,  # an object in another queue is taken into the batch
     "      if (r == nullptr || access::owner(*r) != nullptr || r->state() != reg_state::registered) [[unlikely]]",
     "      if (r == nullptr || r->state() != reg_state::registered) [[unlikely]]",
     rr("refuses_an_object_queued_elsewhere_and_leaves_it_in_its_queue")),
]


MUTANTS += [  # issue 35, submit's instructions (branch r35-insn, 2026-12-06)
    ("raw_read_section_waits_for_the_writer_lock", AU,  # a contended submit in liburcu's own section waits
     "    if (!outside_read_section(what)) return false;\n    lock.lock();\n", "    lock.lock();\n",
     au(r"a_submit_in_a_raw_read_section_is_refused_rather_than_wait_for_the_writer_lock")),
    ("raw_read_section_waits_for_the_budget", AU,  # ... or blocks on the budget (runs the batch: fatal)
     "    if (!outside_read_section(\"submit\") || !reserve(bytes)) {", "    if (!reserve(bytes)) {",
     au(r"a_submit_in_a_raw_read_section_is_refused_rather_than_wait_for_the_budget")),
    ("submitted_twice_moved_to_the_tail", UQ,  # push_new_idle's double submit taken as a re-push
     "    if (access::owner(r) == this && access::is_linked(r)) {\n      detail::diagnose(misuse_kind::already_unregistering, again);",
     "    if (false) {\n      detail::diagnose(misuse_kind::already_unregistering, again);",
     au(r"misuse_fails_loudly_and_changes_nothing")),
]

MUTANTS += [  # CI of stop 45: a stall line for an object freed during the report pass (killed by hand, 2026-12-06)
    ("stall_line_for_a_freed_object", RM,
     "    if (holders == 0) return;\n", "",
     ("ref_drain_test", r"^ref_drain\.ref_drain\.an_object_whose_last_put_lands_during_the_report_pass_gets_no_line$")),
    # Issue 35's contract (r35-insn): a submit in liburcu's own read section is refused only when it would wait.
    ("raw_read_section_refused_even_when_nothing_waits", AU,
     '    if (!outside_read_guard("submit") || !writer_lock_not_held("submit")) return r;',
     '    if (!outside_read_section("submit") || !writer_lock_not_held("submit")) return r;',
     au(r"a_submit_in_a_raw_read_section_that_waits_for_nothing_goes_through")),
]

# Last: every MUTANTS += above is in the list main() runs (a block appended after this line is not).
if __name__ == "__main__":
    main()
