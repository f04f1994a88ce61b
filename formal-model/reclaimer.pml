/* formal-model/reclaimer.pml — a Promela model of the reclaimer's wake-ups (issue 35).
 *
 * What it checks (formal-model/README.md says how to run it and what each run printed):
 *   - no deadlock: every process that stops stops at an end state (pan's invalid end states);
 *   - no lost wake-up: every caller returns (the LTL property all_return, under weak fairness;
 *     a caller asleep forever is also an invalid end state of the safety run);
 *   - ticket done => object destroyed: an assertion where a caller's wait returns (its object,
 *     and with ORDERED every object of an earlier ticket); at the end every object destroyed and
 *     the budget's charge back to 0.
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
 */

#define NC 3     /* callers: syncer 0 (its object held), syncer 1, submitter 2 */
#define NOBJ 3   /* object i is caller i's */

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

mtype = { REG, PENDING, TAKEN, PARKED, READY, DESTROYED };

mtype st[NOBJ];   /* each object's place in the protocol */
byte ref[NOBJ];   /* references held by holders */
bool chg[NOBJ];   /* its bytes are charged to the budget */
byte seq[NOBJ];   /* its ticket (issued_ at its submit) */
byte issued;
byte charged;     /* the budget's charge */
byte pending;     /* requests submitted, not taken by a batch (pending_) */
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
  :: pending > 0 || ready > 0 -> wake_runner()
  :: else -> skip
  fi
#else
  if
  :: pending > 0 || ready > 0 ->
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
  atomic {
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
    pending = 0
  }
  /* grace periods: readers are not modelled; other processes interleave here */
  j = 0;
  do
  :: j < NOBJ ->
drain_one:
     atomic {
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
  atomic {
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
          :: !running && (pending > 0 || ready > 0) -> running = true; mine = true
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

/* The wait on an entry on the caller's stack: completed at a batch's end (or by the destroy of
 * its handed-back object); leads a batch when none runs and its request (or its handed-back
 * object, READY) waits for one, or when handed the lead; else sleeps. */
inline wait_entry(c, w) {
  atomic {
    eobj[c] = w;
    linked[c] = true;
    completes(c);
    if
    :: ok -> done[c] = true; linked[c] = false
    :: else -> skip
    fi
  };
  do
  :: atomic {
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
  do
  :: atomic {
       if
       :: !running && (pending > 0 || ready > 0) -> running = true; mine = true
       :: else -> bg_asleep = true; idle_runners++; mine = false
       fi
     };
     if
     :: mine -> run_batch(); mine = false
     :: else ->
        /* work_cv_.wait_until(age deadline): woken, or the timer of a pending request */
end_idle: atomic { !bg_asleep || (pending > 0 && !running) -> bg_asleep = false; idle_runners-- }
     fi
  od
}
#endif

proctype syncer(byte me) {
  byte j, k, q; bool found, mine, slept, parked, ok;
  charge(me);
  enqueue(me);
  wait_entry(me, me)
}

proctype submitter(byte me) {
  byte j, k, q; bool found, mine, slept, parked, ok;
  charge(me);
  enqueue(me);
  /* the caller does other work; a runner (its timer) may run its request */
  wait_entry(me, me)
}

/* The holder of object o's reference: its last put. */
proctype holder(byte o) {
  byte k; bool found;
#if HOLD_UNTIL_OTHERS
  (returned == NC - 1 && done[1] && done[2]);
#endif
  atomic {
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
    ref[0] = 1; /* object 0 is held: a packet queued to userspace */
    run syncer(0);
    run syncer(1);
    run submitter(2);
    run holder(0);
#if BACKGROUND
    run runner();
#endif
  }
  (returned == NC);
  i = 0;
  do
  :: i < NOBJ -> assert(st[i] == DESTROYED); i++
  :: else -> break
  od;
  assert(charged == 0 && pending == 0 && ready == 0)
}

ltl all_return { <> (returned == NC) }
