/* formal-model/reclaimer.pml — a Promela model of the reclaimer's wake-ups (issue 35).
 *
 * What it checks (formal-model/README.md says how to run it and what each run printed):
 *   - no deadlock: every process that stops stops at an end state (pan's invalid end states);
 *   - no lost wake-up: every caller returns (the LTL property all_return, under weak fairness;
 *     a caller asleep forever is also an invalid end state of the safety run);
 *   - ticket done => object destroyed: an assertion where a caller's wait returns (its object,
 *     and with ORDERED every object of an earlier ticket); at the end every object destroyed and
 *     the budget's charge back to 0 (with SUBMIT_ONLY, the end and all_return also wait for the
 *     object nobody waits for); with PUBLISH=1, the charge never above the budget + one object.
 *
 * Four designs of the ref drain and of completion (-DDRAIN=n):
 *   0  (default) the design issue 35 asks for: per-caller wait entries completed per object; an
 *      object still held when its batch drains is parked and the batch ends without it; the
 *      holder's last put() hands it back (READY), to be destroyed by the next batch's leader or
 *      the background thread, and its entry is completed then.
 *   1  main (4ec65a2): the batch's drain sleeps until the last put tells it
 *      (ref_drain::wait / released); the batch keeps the run meanwhile.
 *   2  the code (branch r35-reclaimer): DRAIN=0's hand-back — a held object parks in the lot
 *      (the batch's engine stays in its slot: run_after_grace_periods_or_park), the batch ends,
 *      the last put tells the lot (lot_told), and one thread polls it (poll_lot: the background
 *      thread, or in manual mode whoever waits next); tickets complete per object (ticket_done);
 *      wake-ups are still done_cv_.notify_all() (BROADCAST=1).
 *   3  r35-core (a3738be), superseded: the batch parks (park_batch: releases the run and its
 *      bytes, notifies done_cv_ and work_cv_, a spare runner in background mode), its drain
 *      sleeps until the last put on the leader's thread, then the batch ends; tickets complete in
 *      order (never past a parked batch) and wake-ups are done_cv_.notify_all().
 * Wake-ups: -DBROADCAST=1 (the default with DRAIN=1, 2, 3: the code's done_cv_.notify_all()) wakes
 * every sleeper at a batch's end and each re-checks; BROADCAST=0 (the default with DRAIN=0) hands
 * the lead to one sleeping entry whose request waits for the next batch (liburcu's urcu_wait
 * queue served by one leader). -DORDERED=1 (the default with DRAIN=3): a ticket completes only
 * once every object of it and of every earlier ticket is destroyed.
 * -DHOLD_UNTIL_OTHERS=1: the holder puts its reference only once callers 1 and 2 returned — "a
 * held object delays only the objects that depend on it" (issue 35): it deadlocks where it does not.
 *
 * The submit (-DPUBLISH=n):
 *   0  (default) one step under m_: charge (reserve's loop) and enqueue — main before 2026-12-05.
 *   1  the code since 2026-12-05 (r35-submit, ce8c5a4): no m_ on a submit's common path. With
 *      it, m_ is an explicit lock (mx, and the writer lock wl); -DBUDGET, -DBATCH_COUNT (3 by
 *      default: the lock-free path is then reached, through the budget's one-object overshoot),
 *      -DSUBMIT_ONLY=1 (caller 2 never waits, so only the background thread, or in manual mode
 *      a budget-blocked submitter, can run its request before shutdown), -DHELD=0 (no held
 *      object) and -DSECOND_SUBMIT=1 (caller 2 submits a fourth object after its first: only
 *      then does a submit publish without m_ while another is blocked; -DREACH=1 asserts that it
 *      does not) select the configuration. Checked with DRAIN=2 (the code) only.
 * Which code each step of PUBLISH=1 stands for (async_unregister.hpp, main 50a2e67):
 *   submit_p   submit_request -> lock_writer (wl), submit_locked: budget_.over() looked at under
 *              the writer lock without m_ (full: unlock, reserve, retry with `reserved`);
 *              record_request: budget_.charge (a lock-free fetch_add: a reserve can charge
 *              between the look and it — reclaim_budget.hpp's "budget + one object", asserted),
 *              the ticket issued_ + 1, the transition test (seq == transition_seq_; the
 *              batch_bytes and own-hook transitions are not modelled); then publish:
 *              transition  under m_: transition_seq_ moved on, issued_ stored, blocked_now_
 *                          loaded (wake_blocked); after m_: work_cv_.notify_all() unless the
 *                          caller waits (unregister) and nobody is blocked, done_cv_.notify_all()
 *                          if someone is; the writer lock released when submit returns.
 *              otherwise   issued_.store(seq) then blocked_now_.load() (two steps, both seq_cst:
 *                          Spin's interleaving is sequentially consistent); if > 0, an empty
 *                          critical section of m_, then work_cv_ and done_cv_ notified.
 *   reserve_p  reserve(): under m_, ++blocked_now_ and work_cv_.notify_all(); then, m_ still
 *              held, each look of `while (!budget_.fits)` (manual: !running_ && pending() > 0 ->
 *              run_claimed) is a step of its own before the wait (done_cv_: releases m_ as it
 *              sleeps); --blocked_now_ and the charge when it fits.
 *   runner     reclaimer_loop() under m_: one step for the lot/due() look (pending() >=
 *              batch_count, blocked_now_ > 0, the age deadline passed), a second for the
 *              deadline's look at pending() (an age timer is armed only if requests are pending
 *              and no batch runs), a third for wait_until (releases m_); woken by a notify or by
 *              its armed timer, after which the age counts as passed.
 *   run_batch  run_batch_unlocked's take, under the writer lock and m_: taken_ = issued_,
 *              transition_seq_ = issued_ + 1.
 * Every other critical section of m_ stays one atomic step, which waits for mx to be free.
 *
 * Which code each process stands for (include/rcubatch/async_unregister.hpp on main 4ec65a2 and
 * r35-core a3738be, unless said otherwise):
 *   syncer     async_unregister::unregister(obj) / a registry call through the combiner:
 *              reserve() (the budget), submit_locked() (the request), wait_until_completed()
 *              (the wait: lead or sleep).
 *   submitter  async_unregister::submit(obj) (submit-only: no entry) and later
 *              async_unregister::wait(ticket) (wait_until_completed, an entry on the caller's stack).
 *   runner     async_unregister::reclaimer_loop() (reclaim_mode::background_thread; its age timer);
 *              with DRAIN=3 also the spare runner park_batch() starts when no runner is idle;
 *              with DRAIN=2 the lot's one runner in background mode (poll_lot).
 *   holder     ref_count::put() of the last reference -> ref_drain::released() (wakes the drain),
 *              or (DRAIN=0, 2) the hand-back of a parked object to the reclaimer (DRAIN=2:
 *              ref_drain::released -> async_unregister::lot_told).
 *   run_batch  async_unregister::run_claimed() / run_batch_unlocked() (take every pending request;
 *              the grace periods; detail::run_specs' drain: ref_drain::wait(), whose before_sleep
 *              hook is park_batch() with DRAIN=3); end_batch its last critical section of m_
 *              (end_batch() on r35-core: completion, running_, charged_bytes_, notify_all).
 * Every atomic block is one critical section of the reclaimer's mutex m_ (or of the drain's lock);
 * a sleep is a condition-variable wait: the sleeper sets its own flag under the lock, a waker
 * clears it under the lock, and nothing else wakes it (spurious wake-ups only add re-checks).
 *
 * Mutants (-DMUTANT=n), each must make a check fail (formal-model/CMakeLists.txt: model.mutant_*):
 *   1  the batch's end wakes no waiter (no hand-off of the lead; BROADCAST: no done_cv_ notify)
 *   2  the last put() does not wake the drain / hand the parked object back
 *   3  the batch's end completes the entries of parked objects too (ticket done before the object
 *      is destroyed: issue 35's item 1)
 *   4  a destroy (a release of the budget's charge) does not wake the submitters blocked by it
 *   5  (DRAIN=3) a parking batch keeps the run: the batches behind it wait for the holder
 * Mutants of PUBLISH=1 (what catches each: formal-model/README.md):
 *   6  the first pending request is taken for no transition: published without m_, no notify
 *   7  a transition published without m_ (its store, load and notifies as before, unlocked)
 *   8  the no-m_ path loads blocked_now_ before it stores issued_ (reordered, as relaxed
 *      atomics may be): NOT caught, alone — see the README
 *   9  6 and 8 together
 *   10 a transition does not notify done_cv_ when a submitter is blocked on the budget
 */

#define NC 3     /* callers: syncer 0 (its object held), syncer 1, submitter 2 */
#ifndef SECOND_SUBMIT
#define SECOND_SUBMIT 0
#endif
#if SECOND_SUBMIT
#define NOBJ 4   /* object i is caller i's; caller 2 submits object 3 too */
#else
#define NOBJ 3   /* object i is caller i's */
#endif
#define LAST (NOBJ - 1) /* caller 2's last object */
/* REACH=1: an assertion that fails where a submit publishes without m_ while another submitter
 * is blocked (blocked_now_ > 0) — a check that the configuration reaches the handshake at all
 * (with one object per caller it never does: README.md, Findings). */
#ifndef REACH
#define REACH 0
#endif

#ifndef BUDGET
#define BUDGET 1 /* objects charged (submitted, not destroyed) at most; one always fits alone */
#endif
#ifndef BACKGROUND
#define BACKGROUND 1 /* 0: reclaim_mode::manual (no background thread, no timer) */
#endif
#ifndef DRAIN
#define DRAIN 0
#endif
#ifndef BROADCAST
#if DRAIN == 0
#define BROADCAST 0
#else
#define BROADCAST 1
#endif
#endif
#ifndef ORDERED
#if DRAIN == 3
#define ORDERED 1
#else
#define ORDERED 0
#endif
#endif
/* Who destroys a handed-back (READY) object: DRAIN=0, a waiter whose object it is may lead for
 * it; DRAIN=2 (the code: async_unregister::poll_lot), only the background thread in background
 * mode, and the waiters (whoever runs next) in manual mode. */
#if DRAIN == 2 && BACKGROUND
#define LOT_BY_WAITERS 0
#else
#define LOT_BY_WAITERS 1
#endif
#ifndef HOLD_UNTIL_OTHERS
#define HOLD_UNTIL_OTHERS 0
#endif
#ifndef MUTANT
#define MUTANT 0
#endif
/* PUBLISH=1: the submit as the code makes it since 2026-12-05 (async_unregister::submit_locked,
 * record_request, publish, reserve): under the registry's writer lock, the budget looked at and
 * charged without m_; the request published by a store of issued_ without m_ unless it is a
 * transition (the first pending request, the BATCH_COUNT-th), which publishes under m_ and
 * notifies after; a submitter blocked on the budget counted in blocked_now_ (under m_), which a
 * publish loads after its store of issued_ (seq_cst). m_ is then an explicit lock (mx): the
 * sections that read what a submit changes without m_ (reserve's, the background thread's) are
 * split at each such read, holding mx, and every other critical section waits for mx. PUBLISH=0:
 * the submit as one step under m_ (the model before; its checks below are unchanged). */
#ifndef PUBLISH
#define PUBLISH 0
#endif
#ifndef BATCH_COUNT
#define BATCH_COUNT 3 /* async_options::batch_count (PUBLISH=1); see the README on which paths each value reaches */
#endif
/* SUBMIT_ONLY=1 (PUBLISH=1): caller 2 submits and never waits for its ticket (submit-only
 * traffic: the background thread's, or in manual mode a budget-blocked submitter's) — in manual
 * mode it waits for it only once callers 0 and 1 returned (a drain at shutdown); the checks then
 * also require its object destroyed. */
/* HELD=0: nobody holds object 0 (no holder, nothing parks): the publish checks of the
 * background thread, small enough for every CI run. */
#ifndef HELD
#define HELD 1
#endif
#ifndef SUBMIT_ONLY
#define SUBMIT_ONLY 0
#endif
#define NEVER 255 /* transition_seq_'s kNever */
#if PUBLISH
#define NPENDING (issued - taken)
#define M_ (mx == 0) ->
#define MW_ (mx == 0 && wl == 0) ->
#else
#define NPENDING pending
#define M_
#define MW_
#endif
/* The mutants of the lock-free publish (PUBLISH=1): 6, the first pending request taken for no
 * transition (the no-m_ path); 8, the no-m_ path loads blocked_now_ before it stores issued_ (as
 * relaxed atomics may be reordered); 9, both. */
#define MUT_FIRST_LOCKFREE (MUTANT == 6 || MUTANT == 9)
#define MUT_HANDSHAKE_REORDERED (MUTANT == 8 || MUTANT == 9)

mtype = { REG, PENDING, TAKEN, PARKED, READY, DESTROYED };

mtype st[NOBJ];   /* each object's place in the protocol */
byte ref[NOBJ];   /* references held by holders */
bool chg[NOBJ];   /* its bytes are charged to the budget */
byte seq[NOBJ];   /* its ticket (issued_ at its submit) */
byte issued;
byte charged;     /* the budget's charge */
#if PUBLISH
byte taken;       /* the last ticket taken by a batch (taken_): pending_ = issued - taken */
byte tseq;        /* transition_seq_: the ticket whose publish is a transition (under wl) */
byte wl;          /* the registry's writer lock: 0, or its holder's pid + 1 */
byte mx;          /* m_: 0, or its holder's pid + 1 */
byte blocked;     /* blocked_now_: submitters blocked on the budget (changed under m_) */
#else
byte pending;     /* requests submitted, not taken by a batch (pending_) */
#endif
byte ready;       /* DRAIN=0, 2: parked objects whose last put came, to destroy */
bool running;     /* a batch holds the run (running_) */
byte owner[NOBJ]; /* the pid of the batch that took it (255: none) */

/* The wait entries (on each caller's stack in the code). */
bool linked[NC];  /* waiting for its ticket */
byte eobj[NC];
bool done[NC];    /* completed */
bool lead[NC];    /* BROADCAST=0: handed the lead of the next batch */
bool asleep[NC];  /* asleep on its entry (done_cv_) */
bool bsleep[NC];  /* asleep on the budget (done_cv_) */

bool bg_asleep;   /* the runners wait on work_cv_ */
byte idle_runners;/* runners asleep on work_cv_ (idle_runners_) */
bool spare;       /* DRAIN=3: the spare runner was started */
bool drain_asleep;/* DRAIN=1, 3: a batch's drain waits for a put (ref_drain::wait) */
byte drain_obj;
byte returned;    /* callers back from their wait */

/* Wakes every submitter blocked by the budget. */
inline wake_budget() {
  k = 0;
  do
  :: k < NC -> bsleep[k] = false; k++
  :: else -> break
  od
}

inline uncharge(o) {
  if
  :: chg[o] ->
     chg[o] = false;
     charged--;
#if MUTANT != 4
     wake_budget()
#else
     skip
#endif
  :: else -> skip
  fi
}

/* Requires m_. Destroys object o: its charge (if it still has one) is released. */
inline destroy(o) {
  assert(ref[o] == 0);
  st[o] = DESTROYED;
  uncharge(o)
}

/* Requires m_. The entry of caller k may complete: its object destroyed and, ORDERED, every
 * object of an earlier ticket too (ticket_completion). Sets `ok`. */
inline completes(kk) {
  ok = (st[eobj[kk]] == DESTROYED);
#if ORDERED
  q = 0;
  do
  :: q < NOBJ ->
     if
     :: st[q] != REG && seq[q] < seq[eobj[kk]] && st[q] != DESTROYED -> ok = false
     :: else -> skip
     fi;
     q++
  :: else -> break
  od;
#endif
#if MUTANT == 3
  ok = ok || st[eobj[kk]] == PARKED || (st[eobj[kk]] == TAKEN && drain_asleep);
#endif
  skip
}

/* Requires m_. Completes the entries whose tickets are done, and wakes them. */
inline complete_entries() {
  k = 0;
  do
  :: k < NC ->
     if
     :: linked[k] ->
        completes(k);
        if
        :: ok -> done[k] = true; linked[k] = false;
#if MUTANT != 1
           asleep[k] = false
#else
           skip
#endif
        :: else -> skip
        fi
     :: else -> skip
     fi;
     k++
  :: else -> break
  od
}

inline wake_runner() {
#if BACKGROUND
  bg_asleep = false
#else
  skip
#endif
}

/* Requires m_. The wake-up at a batch's end (or park, or hand-back): BROADCAST, every sleeper of
 * done_cv_ and (work pending) work_cv_; else, work waiting, the lead to one sleeping entry whose
 * object waits for that batch — with none, the runner (manual mode: the budget sleepers). */
inline hand_off() {
#if BROADCAST
  k = 0;
  do
  :: k < NC ->
#if MUTANT != 1
     asleep[k] = false;
#endif
     bsleep[k] = false; k++
  :: else -> break
  od;
  if
  :: NPENDING > 0 || ready > 0 -> wake_runner()
  :: else -> skip
  fi
#else
  if
  :: NPENDING > 0 || ready > 0 ->
     found = false;
     k = 0;
     do
     :: k < NC ->
        if
        :: !found && linked[k] && (st[eobj[k]] == PENDING || st[eobj[k]] == READY) ->
           found = true;
           lead[k] = true;
#if MUTANT != 1
           asleep[k] = false
#else
           skip
#endif
        :: else -> skip
        fi;
        k++
     :: else -> break
     od;
     if
     :: !found ->
#if BACKGROUND
        bg_asleep = false
#else
        wake_budget()
#endif
     :: else -> skip
     fi
  :: else -> skip
  fi
#endif
}

/* DRAIN=3: park_batch — the run and the batch's bytes released, sleepers woken, a spare runner
 * started in background mode when no runner is idle. Once per batch. */
inline park() {
  if
  :: !parked ->
     parked = true;
#if MUTANT != 5
     running = false;
#endif
     q = 0;
     do
     :: q < NOBJ ->
        if
        :: owner[q] == _pid && st[q] == TAKEN -> uncharge(q)
        :: else -> skip
        fi;
        q++
     :: else -> break
     od;
     hand_off();
     wake_runner();
#if BACKGROUND
     if
     :: idle_runners == 0 && !spare -> spare = true; run runner()
     :: else -> skip
     fi
#endif
  :: else -> skip
  fi
}

/* One batch (the caller has set running under m_). */
inline run_batch() {
  parked = false;
  atomic { MW_ /* PUBLISH=1: the take is under the writer lock and m_ (run_batch_unlocked) */
    /* DRAIN=0, 2: objects handed back by their last put, destroyed first */
    j = 0;
    do
    :: j < NOBJ ->
       if
       :: st[j] == READY -> ready--; destroy(j)
       :: else -> skip
       fi;
       j++
    :: else -> break
    od;
    /* take every pending request */
    j = 0;
    do
    :: j < NOBJ ->
       if
       :: st[j] == PENDING -> st[j] = TAKEN; owner[j] = _pid
       :: else -> skip
       fi;
       j++
    :: else -> break
    od;
#if PUBLISH
    taken = issued;
    tseq = issued + 1 /* the next request is a transition again */
#else
    pending = 0
#endif
  }
  /* grace periods: readers are not modelled; other processes interleave here */
  j = 0;
  do
  :: j < NOBJ ->
drain_one:
     atomic { M_
       if
       :: owner[j] == _pid && st[j] == TAKEN && ref[j] == 0 -> destroy(j)
#if DRAIN == 0 || DRAIN == 2
       :: owner[j] == _pid && st[j] == TAKEN && ref[j] > 0 ->
          st[j] = PARKED; uncharge(j) /* its bytes are its holders' now: off the budget */
#else
       :: owner[j] == _pid && st[j] == TAKEN && ref[j] > 0 ->
#if DRAIN == 3
          park();
#endif
          drain_obj = j; drain_asleep = true; slept = true
#endif
       :: else -> skip
       fi
     };
     if
     :: slept -> (!drain_asleep); slept = false; goto drain_one /* told: rescan */
     :: else -> skip
     fi;
     j++
  :: else -> break
  od;
  /* the end: owner[] of this batch's objects is cleared (a later batch of this process) */
  atomic { M_
    j = 0;
    do
    :: j < NOBJ -> if :: owner[j] == _pid -> owner[j] = 255 :: else -> skip fi; j++
    :: else -> break
    od;
    if
    :: !parked -> running = false
    :: else -> skip /* it released the run at the park: another batch may hold it now */
    fi;
    complete_entries();
    hand_off()
  }
}

/* reserve(): charges one object; over the budget, sleeps until a release (manual mode: runs the
 * batch itself when none runs and one is due). */
inline charge(c) {
  do
  :: atomic {
       if
       :: charged == 0 || charged + 1 <= BUDGET -> charged++; chg[c] = true; break
       :: else ->
#if !BACKGROUND
          if
          :: !running && (NPENDING > 0 || ready > 0) -> running = true; mine = true
          :: else -> bsleep[c] = true; mine = false
          fi
#else
          bsleep[c] = true; mine = false;
          bg_asleep = false /* a batch is due: work_cv_.notify_all() */
#endif
       fi
     };
     if
     :: mine -> run_batch(); mine = false
     :: else -> atomic { !bsleep[c] }
     fi
  od
}

inline enqueue(o) {
  atomic { st[o] = PENDING; seq[o] = issued; issued++; pending++ }
}

#if PUBLISH
/* done_cv_.notify_all(): every waiter and budget-blocked submitter asleep re-checks. */
inline notify_done() {
  k = 0;
  do
  :: k < NC -> asleep[k] = false; bsleep[k] = false; k++
  :: else -> break
  od
}

/* async_unregister::reserve (over_budget::block), for caller c whose submit found the budget
 * full: under m_, charges one object if it fits; else counts itself in blocked_now_, notifies
 * work_cv_ and, while the object does not fit, in manual mode runs the batch itself when none
 * runs and requests are pending (run_claimed), else sleeps on done_cv_. From the count to the
 * sleep it holds m_ (mx) across separate steps: a submit's lock-free store of issued_ may land
 * between them (the store/load handshake with publish). */
inline reserve_p(c, o) {
  atomic { M_
    if
    :: charged == 0 || charged + 1 <= BUDGET -> charged++; chg[o] = true; fitted = true
    :: else -> fitted = false; mx = _pid + 1; blocked++; wake_runner() /* ++blocked_now_; work_cv_.notify_all() */
    fi
  };
  if
  :: !fitted ->
     do
     :: atomic { /* m_ held: while (!budget_.fits) { manual: if (!running_ && pending() > 0) ... } */
          assert(mx == _pid + 1);
          if
          :: charged == 0 || charged + 1 <= BUDGET ->
             blocked--; charged++; chg[o] = true; mx = 0; assert(charged <= BUDGET + 1); break
          :: else ->
#if !BACKGROUND
             if
             :: !running && NPENDING > 0 -> running = true; mine = true; mx = 0 /* run_claimed */
             :: else -> mine = false
             fi
#else
             mine = false
#endif
          fi
        };
        if
        :: mine -> run_batch(); mine = false; atomic { M_ mx = _pid + 1 } /* run_claimed relocks m_ */
        :: else ->
           atomic { bsleep[c] = true; mx = 0 };                 /* done_cv_.wait releases m_ as it sleeps */
           atomic { !bsleep[c] && mx == 0 -> mx = _pid + 1 }    /* woken: m_ again */
        fi
     od
  :: else -> skip
  fi
}

/* async_unregister::submit_request / submit_locked / record_request / publish for caller c's
 * object o; `waits`: caller_waits (unregister: its caller leads its batch). Holds the writer
 * lock (wl) from the look at the budget to publish's end. */
inline submit_p(c, o, waits) {
  reserved = false;
  do
  :: atomic { wl == 0 -> /* lock_writer; submit_locked's first look at the budget: no m_ */
       wl = _pid + 1;
       if
       :: !reserved && charged + 1 > BUDGET -> wl = 0; fitted = false /* no_room: unlocks, blocks in reserve */
       :: else -> fitted = true
       fi
     };
     if
     :: fitted -> break
     :: else -> reserve_p(c, o); reserved = true /* submit_over_budget: charged ahead, tries again */
     fi
  od;
  atomic { /* record_request: the charge, a lock-free read-modify-write (not if reserved); queued, unlisted */
    if
    :: !reserved -> charged++; chg[o] = true; assert(charged <= BUDGET + 1) /* reclaim_budget.hpp's bound */
    :: else -> skip
    fi;
    st[o] = PENDING;
    seq[o] = issued + 1; /* issued_.load(relaxed) + 1: only submits store it, under the writer lock */
    /* publish's transition test, under the writer lock: the first pending request (the ticket
     * after taken_), the BATCH_COUNT-th (transition_seq_) */
    nt = (seq[o] == tseq
#if MUT_FIRST_LOCKFREE
          && seq[o] != taken + 1 /* MUTANT 6, 9: the first pending request is no transition */
#endif
         )
  };
  if
  :: nt ->
#if MUTANT != 7
     atomic { M_ /* { scoped_lock(m_); issued_.store(seq); ...; wake_blocked = blocked_now_ > 0; } */
       tseq = (seq[o] - taken < BATCH_COUNT -> taken + BATCH_COUNT : NEVER);
       issued = seq[o];
       wb = blocked > 0
     };
#else
     /* MUTANT 7: the transition published without m_ (store, then load: still seq_cst) */
     tseq = (seq[o] - taken < BATCH_COUNT -> taken + BATCH_COUNT : NEVER); issued = seq[o];
     wb = blocked > 0;
#endif
     if
     :: !waits || wb -> wake_runner() /* work_cv_.notify_all() (after m_) */
     :: else -> skip
     fi;
     atomic {
       if
#if MUTANT != 10
       :: wb -> notify_done() /* done_cv_.notify_all() */
#endif
       :: else -> skip
       fi;
       wl = 0 /* submit returns: the writer lock released */
     }
  :: else ->
     /* no transition: pending_ was > 0 already and stays under every threshold */
#if !MUT_HANDSHAKE_REORDERED
     issued = seq[o]; /* issued_.store(seq): seq_cst */
     atomic {
       wb = blocked > 0; /* blocked_now_.load() after it */
#if REACH
       assert(!wb); /* REACH: fails once a submit publishes without m_ while another is blocked */
#endif
       if :: !wb -> wl = 0 :: else -> skip fi
     }
#else
     atomic { wb = blocked > 0; skip } /* MUTANT 8, 9: blocked_now_ loaded before the store */
     atomic { issued = seq[o]; if :: !wb -> wl = 0 :: else -> skip fi }
#endif
     if
     :: wb ->
        atomic { mx == 0 -> skip }; /* { scoped_lock(m_); }: the blocked one is asleep, or will read issued_ */
        wake_runner();              /* work_cv_.notify_all() */
        atomic { notify_done(); wl = 0 }
     :: else -> skip
     fi
  fi
}
#endif

/* The wait on an entry on the caller's stack: completed at a batch's end (or by the destroy of
 * its handed-back object); leads a batch when none runs and its request (or its handed-back
 * object, READY) waits for one, or when handed the lead; else sleeps. */
inline wait_entry(c, w) {
  atomic { M_
    eobj[c] = w;
    linked[c] = true;
    completes(c);
    if
    :: ok -> done[c] = true; linked[c] = false
    :: else -> skip
    fi
  };
  do
  :: atomic { M_
       if
       :: done[c] -> break
       :: else ->
          if
          :: !running && (lead[c] || st[w] == PENDING || (st[w] == READY && LOT_BY_WAITERS)) ->
             running = true; mine = true; lead[c] = false
          :: else -> lead[c] = false; asleep[c] = true; mine = false
          fi
       fi
     };
     if
     :: mine -> run_batch(); mine = false
     :: else -> atomic { !asleep[c] }
     fi
  od;
  assert(st[w] == DESTROYED); /* ticket done => destroyed */
  atomic { returned++ }
}

#if BACKGROUND
proctype runner() {
  byte j, k, q; bool found, mine, slept, parked, ok;
#if PUBLISH
  bool timer, aged;
  /* reclaimer_loop under m_: the lot due (ready), or no batch running and due() (pending() > 0
   * and: batch_count reached, a blocked submitter, or the age deadline passed) -> runs the
   * batch; else computes the deadline (pending() read again: an armed age timer if requests are
   * pending and no batch runs) and sleeps on work_cv_ until notified or the timer fires. */
  do
  :: atomic { M_
       if
       :: !running && (ready > 0 || (NPENDING > 0 && (NPENDING >= BATCH_COUNT || blocked > 0 || aged))) ->
          running = true; mine = true
       :: else -> mine = false; mx = _pid + 1 /* m_ held to the wait */
       fi
     };
     if
     :: mine -> aged = false; run_batch(); mine = false
     :: else ->
        timer = (NPENDING > 0 && !running);                /* the deadline: pending() read again */
        atomic { bg_asleep = true; idle_runners++; mx = 0 }; /* wait_until releases m_ as it sleeps */
end_idle: atomic { (!bg_asleep || timer) && mx == 0 -> aged = timer; timer = false; bg_asleep = false; idle_runners-- }
     fi
  od
#else
  do
  :: atomic {
       if
       :: !running && (NPENDING > 0 || ready > 0) -> running = true; mine = true
       :: else -> bg_asleep = true; idle_runners++; mine = false
       fi
     };
     if
     :: mine -> run_batch(); mine = false
     :: else ->
        /* work_cv_.wait_until(age deadline): woken, or the timer of a pending request */
end_idle: atomic { !bg_asleep || (NPENDING > 0 && !running) -> bg_asleep = false; idle_runners-- }
     fi
  od
#endif
}
#endif

#if PUBLISH
#define SUBMIT_LOCALS bool reserved, fitted, wb, nt;
#else
#define SUBMIT_LOCALS
#endif

proctype syncer(byte me) {
  byte j, k, q; bool found, mine, slept, parked, ok; SUBMIT_LOCALS
#if PUBLISH
  submit_p(me, me, true);
#else
  charge(me);
  enqueue(me);
#endif
  wait_entry(me, me)
}

proctype submitter(byte me) {
  byte j, k, q; bool found, mine, slept, parked, ok; SUBMIT_LOCALS
#if PUBLISH
  submit_p(me, me, false);
#if SECOND_SUBMIT
  submit_p(me, LAST, false);
#endif
#else
  charge(me);
  enqueue(me);
#endif
  /* the caller does other work; a runner (its timer) may run its request */
#if SUBMIT_ONLY && BACKGROUND
  atomic { returned++ } /* never waits: the background thread destroys its object */
#else
#if SUBMIT_ONLY
  (returned == NC - 1); /* manual mode: waits for its ticket only once the others returned (shutdown) */
#endif
  wait_entry(me, LAST) /* (SECOND_SUBMIT: its later ticket; no batch parks an object of caller 2) */
#endif
}

/* The holder of object o's reference: its last put. */
proctype holder(byte o) {
  byte k; bool found;
#if HOLD_UNTIL_OTHERS
  (returned == NC - 1 && done[1] && done[2]);
#endif
  atomic { M_
    ref[o]--;
    if
    :: ref[o] == 0 && st[o] == PARKED ->
#if MUTANT != 2
       st[o] = READY; ready++;
       if
       :: !running -> hand_off()
       :: else -> skip /* the running batch's end hands it off */
       fi
#else
       skip
#endif
    :: ref[o] == 0 && drain_asleep && drain_obj == o ->
#if MUTANT != 2
       drain_asleep = false
#else
       skip
#endif
    :: else -> skip
    fi
  }
}

init {
  byte i;
  atomic {
    i = 0;
    do
    :: i < NOBJ -> st[i] = REG; owner[i] = 255; i++
    :: else -> break
    od;
#if HELD
    ref[0] = 1; /* object 0 is held: a packet queued to userspace */
#endif
#if PUBLISH
    tseq = 1; /* transition_seq_: the first request */
#endif
    run syncer(0);
    run syncer(1);
    run submitter(2);
#if HELD
    run holder(0);
#endif
#if BACKGROUND
    run runner();
#endif
  }
#if SUBMIT_ONLY
  (returned == NC && st[NC - 1] == DESTROYED && st[LAST] == DESTROYED);
#else
  (returned == NC);
#endif
  i = 0;
  do
  :: i < NOBJ -> assert(st[i] == DESTROYED); i++
  :: else -> break
  od;
  assert(charged == 0 && NPENDING == 0 && ready == 0)
}

#if SUBMIT_ONLY
ltl all_return { <> (returned == NC && st[2] == DESTROYED && st[LAST] == DESTROYED) }
#else
ltl all_return { <> (returned == NC) }
#endif
