/* formal-model/reclaimer.pml — a Promela model of the reclaimer's wake-ups (issue 35).
 *
 * What it checks (formal-model/README.md says how to run it and what each run printed):
 *   - no deadlock: every process that stops stops at an end state (pan's invalid end states);
 *   - no lost wake-up: every caller returns (the LTL property all_return, under weak fairness;
 *     a caller asleep forever is also an invalid end state of the safety run);
 *   - ticket done => object destroyed: an assertion where a wait entry is completed and where the
 *     caller returns; at the end, every object destroyed and the budget's charge back to 0.
 *
 * The model follows the per-caller-wait-entry design of issue 35 ("What to build"): every
 * synchronous caller links an entry on its own stack; one leader runs a batch of every pending
 * request and completes the entries whose objects that batch destroyed; a caller arriving while a
 * batch runs sleeps on its entry, and the batch's end hands the lead to one sleeper whose request
 * is pending; submitters blocked by the budget sleep until a destroy releases a charge; a
 * background thread (its timer) runs requests nobody waits for. The ref drain: an object still
 * held when its batch drains is parked (PARK, the default: the batch goes on) and the holder's last
 * put() hands it back (READY) to be destroyed by the next batch's leader or the background thread;
 * or (-DDRAIN_WAITS=1, the design on main cdc8a2b/4ec65a2) the batch's drain sleeps until that put
 * tells it.
 *
 * Which code each process stands for (include/rcubatch/, main 4ec65a2; r35-core splits
 * async_unregister.hpp — see the README for the mapping to its files):
 *   syncer     async_unregister::unregister(obj) / a registry call through the combiner:
 *              reserve() (the budget), submit_locked() (the request), wait_until_completed()
 *              (the wait: lead or sleep).
 *   submitter  async_unregister::submit(obj) (submit-only: no entry) and later
 *              async_unregister::wait(ticket) (an entry on the caller's stack).
 *   background async_unregister::reclaimer_loop() (reclaim_mode::background; its age timer).
 *   holder     ref_count::put() of the last reference -> ref_drain::released() (wakes the drain),
 *              or, with parking, the hand-back of a parked object to the reclaimer.
 *   run_batch  async_unregister::run_claimed() / run_batch_unlocked() (take every pending request,
 *              grace periods, detail::run_specs' drain: ref_drain::wait()); end_batch its last
 *              critical section of m_ (completed_, charged_bytes_, done_cv_.notify_all()).
 * Every atomic block is one critical section of the reclaimer's mutex m_ (or of the drain's lock);
 * a sleep is a condition-variable wait: the sleeper sets its own flag under the lock, a waker
 * clears it under the lock, and nothing else wakes it (spurious wake-ups only add re-checks).
 *
 * Mutants (-DMUTANT=n), each must make a check fail (tests/CMakeLists: model.mutant.*):
 *   1  the batch's end does not hand the lead to a sleeping follower (a dropped wake-up)
 *   2  the last put() does not wake the drain / hand the parked object back (a dropped wake-up)
 *   3  the batch's end completes the entries of every object it took, parked ones too
 *      (ticket done before the object is destroyed: issue 35's item 1)
 *   4  a destroy does not wake the submitters blocked by the budget (a dropped wake-up)
 */

#define NC 3     /* callers: syncer 0 (its object held), syncer 1, submitter 2 */
#define NOBJ 3   /* object i is caller i's */

#ifndef BUDGET
#define BUDGET 1 /* objects charged (submitted, not destroyed) at most; one always fits alone */
#endif
#ifndef BACKGROUND
#define BACKGROUND 1 /* 0: reclaim_mode::manual (no background thread, no timer) */
#endif
#ifndef DRAIN_WAITS
#define DRAIN_WAITS 0
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

mtype = { REG, PENDING, TAKEN, PARKED, READY, DESTROYED };

mtype st[NOBJ];   /* each object's place in the protocol */
byte ref[NOBJ];   /* references held by holders */
byte charged;     /* the budget's charge: objects submitted and not destroyed */
byte pending;     /* requests submitted, not taken by a batch (pending_) */
byte ready;       /* parked objects whose last put came: to destroy */
bool running;     /* a batch runs (running_) */

/* The per-caller wait entries (on each caller's stack in the code). */
bool linked[NC];  /* linked: waiting for its object's destroy */
byte eobj[NC];
bool done[NC];    /* completed by whoever destroyed its object */
bool lead[NC];    /* handed the lead of the next batch */
bool asleep[NC];  /* asleep on its entry */
bool bsleep[NC];  /* asleep on the budget */

bool bg_asleep;   /* the background thread waits on work_cv_ */
bool drain_asleep;/* DRAIN_WAITS: the batch's drain waits for a put (ref_drain::wait) */
byte drain_obj;
byte returned;    /* callers back from their wait */

/* Wakes every submitter blocked by the budget (done_cv_.notify_all()). */
inline wake_budget() {
  k = 0;
  do
  :: k < NC -> bsleep[k] = false; k++
  :: else -> break
  od
}

/* Requires m_. Destroys object o: its charge is released and budget sleepers woken. */
inline destroy(o) {
  assert(ref[o] == 0);
  st[o] = DESTROYED;
  charged--;
#if MUTANT != 4
  wake_budget()
#else
  skip
#endif
}

/* Requires m_. Completes the entries whose objects are destroyed, and wakes them. */
inline complete_entries() {
  k = 0;
  do
  :: k < NC ->
     if
     :: linked[k] && st[eobj[k]] == DESTROYED ->
        done[k] = true; linked[k] = false; asleep[k] = false
#if MUTANT == 3
     :: linked[k] && st[eobj[k]] == PARKED ->
        done[k] = true; linked[k] = false; asleep[k] = false
#endif
     :: else -> skip
     fi;
     k++
  :: else -> break
  od
}

/* Requires m_, no batch running. Work is waiting (a pending request or a READY object): hand the
 * lead to one sleeping entry whose object waits for that batch; if none, the background thread
 * (manual mode: the budget sleepers, who run a batch themselves). */
inline hand_off() {
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
}

/* One batch (the caller has set running under m_). */
inline run_batch() {
  atomic {
    /* objects handed back by their last put: destroyed first */
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
       :: st[j] == PENDING -> st[j] = TAKEN
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
       :: st[j] == TAKEN && ref[j] == 0 -> destroy(j)
#if DRAIN_WAITS
       :: st[j] == TAKEN && ref[j] > 0 -> drain_obj = j; drain_asleep = true; slept = true
#else
       :: st[j] == TAKEN && ref[j] > 0 -> st[j] = PARKED
#endif
       :: else -> skip
       fi
     };
#if DRAIN_WAITS
     if
     :: slept -> (!drain_asleep); slept = false; goto drain_one /* told: rescan */
     :: else -> skip
     fi;
#endif
     j++
  :: else -> break
  od
}

inline end_batch() {
  running = false;
  complete_entries();
  hand_off()
}

/* reserve(): charges one object; over the budget, sleeps until a destroy (manual mode: runs the
 * batch itself when none runs and one is due). */
inline charge(c) {
  do
  :: atomic {
       if
       :: charged == 0 || charged + 1 <= BUDGET -> charged++; break
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
     :: mine -> run_batch(); atomic { end_batch() }; mine = false
     :: else -> atomic { !bsleep[c] }
     fi
  od
}

inline enqueue(o) {
  atomic { st[o] = PENDING; pending++ }
}

/* The wait on an entry on the caller's stack: completed by whoever destroys o; leads a batch
 * when none runs and its request (or its parked object, READY) waits for one, or when handed
 * the lead; else sleeps. */
inline wait_entry(c, w) {
  atomic {
    eobj[c] = w;
    if
    :: st[w] == DESTROYED -> done[c] = true
    :: else -> linked[c] = true
    fi
  };
  do
  :: atomic {
       if
       :: done[c] -> break
       :: else ->
          if
          :: !running && (lead[c] || st[w] == PENDING || st[w] == READY) ->
             running = true; mine = true; lead[c] = false
          :: else -> lead[c] = false; asleep[c] = true; mine = false
          fi
       fi
     };
     if
     :: mine -> run_batch(); atomic { end_batch() }; mine = false
     :: else -> atomic { !asleep[c] }
     fi
  od;
  assert(st[w] == DESTROYED); /* ticket done => destroyed */
  atomic { returned++ }
}

proctype syncer(byte me) {
  byte j, k; bool found, mine, slept;
  charge(me);
  enqueue(me);
  wait_entry(me, me)
}

proctype submitter(byte me) {
  byte j, k; bool found, mine, slept;
  charge(me);
  enqueue(me);
  /* the caller does other work; the background thread's timer may run its request */
  wait_entry(me, me)
}

/* The holder of object o's reference: its last put. */
proctype holder(byte o) {
  byte k; bool found;
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

#if BACKGROUND
proctype background() {
  byte j, k; bool found, mine, slept;
  do
  :: atomic {
       if
       :: !running && (pending > 0 || ready > 0) -> running = true; mine = true
       :: else -> bg_asleep = true; mine = false
       fi
     };
     if
     :: mine -> run_batch(); atomic { end_batch() }; mine = false
     :: else ->
        /* work_cv_.wait_until(age deadline): woken, or the timer of a pending request */
end_idle: atomic { !bg_asleep || (pending > 0 && !running) -> bg_asleep = false }
     fi
  od
}
#endif

init {
  byte i;
  atomic {
    i = 0;
    do
    :: i < NOBJ -> st[i] = REG; i++
    :: else -> break
    od;
    ref[0] = 1; /* object 0 is held: a packet queued to userspace */
    run syncer(0);
    run syncer(1);
    run submitter(2);
    run holder(0);
#if BACKGROUND
    run background();
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
