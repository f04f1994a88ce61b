/* formal-model/gate.pml — a Promela model of the registry's combining gate (issue 35):
 * include/rcubatch/combining.hpp (combining_gate) and registry.hpp's "Combining" section.
 *
 * What it checks (formal-model/README.md, "The combining gate", says how to run it):
 *   - no deadlock: every process that stops stops at an end state (pan's invalid end states);
 *   - no lost wake-up: every caller returns (the LTL property all_return, under weak fairness; a
 *     follower asleep forever is also an invalid end state of the safety run) — each queued call
 *     is eventually done, made the next leader, or handed back to run alone;
 *   - a call is done only after its batch ended: an assertion where finish marks a call done
 *     and where each caller returns (its object destroyed by a batch that ended).
 *
 * NC callers, one call each (its own object), through a gate of MAX_BATCH calls per batch.
 * Which code each part stands for:
 *   caller      registry::through_gate (unregister / try_unregister / try_unregister<I>(key)):
 *               the alone path (gate_.idle() && mutex_.try_lock(): run_alone), else
 *               combining_gate::arrive, then lead_batch when it leads, then run_alone when its
 *               call was handed back.
 *   arrive      combining_gate::arrive: one critical section of the gate's mutex m_ (queue the
 *               call; lead if no leader waits; else sleep on the call's own condition variable,
 *               re-checking turn after each wake-up). With WORKER=1 caller NC-1 is a liburcu
 *               call_rcu worker (an unregister from a call_rcu callback): arrive returns alone at
 *               once (combining.hpp, "Alone").
 *   lead        registry::lead_batch: the writer lock (blocking), combining_gate::take (at most
 *               MAX_BATCH calls, the leader's first; the rest get a new leader, woken at once),
 *               run_calls (one registry batch: grace periods under the lock, then the ref drain
 *               and destroys with the lock released — the drain's relock is left out: it waits
 *               for nothing in the gate), then combining_gate::finish (each call done, or alone
 *               when a shared batch threw, and its caller woken if asleep). A batch of the
 *               leader's own call only is finished without the gate's mutex (combining.hpp,
 *               finish: nobody sleeps on that call; the listener, which the model leaves out,
 *               must be detached for it): its steps are not one atomic block here.
 *   drain       ref_drain::flush_and_recheck's barrier (an object of the batch held): liburcu's
 *               rcu_barrier, which returns only once the call_rcu worker finished its current
 *               callback — skipped on the worker itself (ref_drain.hpp, guarantee 5).
 *   holder      (HOLDER=1, the default) whoever holds the writer lock when the callers start:
 *               another batch, or the test holding writer_lock(); it releases it at any point.
 * THROWS=1: a shared batch (more than one call) may throw (validate): nothing destroyed, every
 * call handed back to run alone (a call's own exception, rethrown to its caller, is left out).
 * Every atomic block is one critical section of the gate's mutex (or a lock operation); a sleep
 * is a condition-variable wait: the sleeper sets its own flag under the mutex, a waker clears it
 * under the mutex (notify_one), and nothing else wakes it (a spurious wake-up only re-checks).
 *
 * Mutants (-DMUTANT=n), each must make a check fail (formal-model/CMakeLists.txt: model.gate_mutant_*):
 *   1  take does not wake the next leader when calls are left over (max_batch reached)
 *   2  finish does not wake a follower whose call it marked done (or alone)
 *   3  a caller on the call_rcu worker goes through the gate like any other (the seam
 *      combining.a_caller_on_a_call_rcu_worker_never_waits_in_the_gate_for_a_leader_whose_drain_needs_that_worker
 *      tests): it follows a leader whose drain waits for that worker
 *   4  the lone leader's finish without the mutex taken for a batch with followers too (its
 *      test: combining.a_lone_caller_takes_no_gate_mutex_and_no_sleep_and_a_lone_leader_takes_it_twice,
 *      by counts): the followers are marked done but never woken
 */

#ifndef NC
#define NC 3
#endif
#ifndef MAX_BATCH
#define MAX_BATCH 2
#endif
#ifndef THROWS
#define THROWS 0
#endif
#ifndef WORKER
#define WORKER 0
#endif
#ifndef HOLDER
#define HOLDER 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define NONE 255
#define QUEUED 0
#define LEAD 1
#define TAKEN 2
#define DONE 3
#define ALONE 4

chan queue = [NC] of { byte };  /* the gate's queue_, in arrival order */
bool leader_waiting;            /* combining_gate::leader_waiting_ */
byte turn[NC];                  /* combining_call::turn_ */
bool sleeping[NC];              /* the call's condition variable: its caller waits on it */
byte lock_owner = NONE;         /* the registry's writer lock */
bool destroyed[NC];             /* call i's object destroyed by a batch that ended */
byte returned;                  /* callers returned */
bool worker_in_callback;        /* WORKER: the call_rcu worker is running its callback (caller NC-1) */

#define is_worker(me) (WORKER && (me) == NC - 1)

/* The drain of a batch run on thread `me`: an object may be held, then the barrier waits for the
 * call_rcu worker to finish its callback (never on the worker itself). */
inline drain(me) {
  if
  :: true -> skip                                   /* nothing held: no barrier */
  :: !is_worker(me) -> (!worker_in_callback)         /* held: rcu_barrier */
  fi
}

/* A batch of only `me`'s call, writer lock taken blocking (run_alone). */
inline run_alone(me) {
  atomic { lock_owner == NONE -> lock_owner = me }
  lock_owner = NONE;  /* grace periods done; the lock released for the drain */
  drain(me);
  destroyed[me] = true
}

/* combining_gate::arrive for `me`: queue, lead or sleep until a turn other than queued/taken. */
inline arrive(me) {
  atomic {
    queue!me;
    if
    :: !leader_waiting -> leader_waiting = true; turn[me] = LEAD
    :: else -> sleeping[me] = true
    fi
  }
  do  /* cv_.wait(lock, pred): woken only by a waker clearing sleeping; then re-checks turn */
  :: atomic {
       !sleeping[me] ->
       if
       :: turn[me] != QUEUED && turn[me] != TAKEN -> break
       :: else -> sleeping[me] = true
       fi
     }
  od
}

/* registry::lead_batch for leader `me`. */
inline lead(me) {
  atomic { lock_owner == NONE -> lock_owner = me }
  /* combining_gate::take */
  atomic {
    n = 0;
    do
    :: n < MAX_BATCH && len(queue) > 0 ->
       queue?c;
       assert(n > 0 || c == me);  /* the leader's own call first */
       turn[c] = TAKEN;
       taken[c] = true;
       n++
    :: else -> break
    od;
    if
    :: len(queue) == 0 -> leader_waiting = false
    :: else ->
       queue?<c>;
       turn[c] = LEAD;
#if MUTANT != 1
       sleeping[c] = false
#endif
    fi
  }
  /* run_calls: the batch (grace periods under the lock; may throw when shared) */
  threw = false;
  if
  :: THROWS && n > 1 -> threw = true
  :: true -> skip
  fi;
  lock_owner = NONE;
  if
  :: !threw ->
     drain(me);
     c = 0;
     do
     :: c < NC -> if :: taken[c] -> destroyed[c] = true :: else -> skip fi; c++
     :: else -> break
     od
  :: else -> skip
  fi;
  /* combining_gate::finish. A batch of the leader's own call only: marked outside the gate's
   * mutex (nobody sleeps on it, nobody else reads it). Otherwise one critical section. */
  if
#if MUTANT == 4
  :: n >= 1 ->  /* the shortcut taken with followers too: marked, never woken */
     c = 0;
     do
     :: c < NC ->
        if
        :: taken[c] -> taken[c] = false; if :: threw -> turn[c] = ALONE :: else -> turn[c] = DONE fi
        :: else -> skip
        fi;
        c++
     :: else -> break
     od
#else
  :: n == 1 ->
     taken[me] = false;
     if
     :: threw -> turn[me] = ALONE
     :: else -> assert(destroyed[me]); turn[me] = DONE
     fi
#endif
  :: else ->
     atomic {
       c = 0;
       do
       :: c < NC ->
          if
          :: taken[c] ->
             taken[c] = false;
             if
             :: threw -> turn[c] = ALONE
             :: else -> assert(destroyed[c]); turn[c] = DONE  /* done only after its batch ended */
             fi;
#if MUTANT == 2
             if :: c == me -> sleeping[c] = false :: else -> skip fi
#else
             if :: sleeping[c] -> sleeping[c] = false :: else -> skip fi  /* notify only a caller asleep */
#endif
          :: else -> skip
          fi;
          c++
       :: else -> break
       od
     }
  fi
}

proctype caller(byte me) {
  byte c, n;
  bool threw;
  bool taken[NC];
  if :: is_worker(me) -> worker_in_callback = true :: else -> skip fi;
  if
  :: atomic { !leader_waiting && lock_owner == NONE -> lock_owner = me }  /* idle() && try_lock: alone */
     lock_owner = NONE;
     drain(me);
     destroyed[me] = true
  :: else ->
#if MUTANT != 3
     if
     :: is_worker(me) -> turn[me] = ALONE  /* arrive: a call_rcu worker never queues */
     :: else -> arrive(me)
     fi;
#else
     arrive(me);
#endif
     if :: turn[me] == LEAD -> lead(me) :: else -> skip fi;
     if :: turn[me] == ALONE -> run_alone(me) :: else -> skip fi
  fi;
  assert(destroyed[me]);  /* a call returns only after its batch ended */
  if :: is_worker(me) -> worker_in_callback = false :: else -> skip fi;
  returned++
}

/* HOLDER=1: the writer lock held at the start and released at any point — by another batch
 * (add, a batch of its own) or, in tests/combining_test.cpp, by the test (writer_lock()) — so that
 * callers queue behind a leader that waits for it. */
proctype holder() {
  lock_owner = NONE
}

init {
  atomic {
    byte i = 0;
    if :: HOLDER -> lock_owner = NC; run holder() :: else -> skip fi;
    do
    :: i < NC -> run caller(i); i++
    :: else -> break
    od
  }
}

ltl all_return { <> (returned == NC) }
