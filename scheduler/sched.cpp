// Goroutine scheduler
//
// goro multiplexes goroutines (G) onto OS threads (M) holding processors (P),
// the model and the algorithms of Go's runtime (docs/DESIGN.md "The scheduler";
// Go's proc.go "Goroutine scheduler" essay). Exactly maxprocs Ps exist; an M
// must hold a P to run goroutines; a P owns a local run queue (runq.hpp), a
// timer heap (timers.hpp) and caches of dead Gs and of free stacks.
//
// ## Where the scheduler runs
// Each M has a g0 context: the OS thread's own stack, where the scheduling
// loop (schedule_loop) and the slow search for work (find_runnable, in
// findrunnable.cpp) run, and where an M sleeps. A goroutine that yields,
// parks or exits does not always go through g0, though: if its own P has a
// goroutine ready (runnext or the ring), it switches straight to it, one
// switch instead of two. That is what keeps a yield or an unbuffered channel
// hand-off at a few nanoseconds (issue 3 targets ~16 ns per yield).
//
// ## Switching directly between goroutines
// The hazard of switching G1 -> G2 without passing through g0 is that G1 must
// not become visible to other Ms (in a run queue, in a channel's wait queue
// behind an unlocked lock) while its stack is still in use. So every switch
// carries an after-switch action (M::after, AfterSwitch) that the *landing*
// side runs, on the new stack, once G1's registers are saved: put G1 in the
// run queue (yield), run its park commit (park: e.g. unlock the channel),
// recycle it (exit). land() runs the action; every place that can resume
// after a switch (the end of switch_away, the start of g_main, the g0 loop)
// calls land() first.
//
// ## Time slices and fairness
// p->schedtick counts non-inherited schedules (a G taken from runnext shares
// its readier's slice, as in Go). Every 61st schedule looks at the global
// queue first, so two goroutines re-spawning each other through runnext
// cannot starve it. The direct-switch fast path steps aside for g0 on that
// tick and whenever the P's earliest timer is due, so timers and the global
// queue are served even on a P that never runs dry. 61 is Go's: a prime, so
// the check does not fall into step with periodic workloads.
//
// ## Preemption (cooperative)
// sysmon flags a goroutine that has held its P for 10 ms (G::preempt); the
// next runtime entry that can switch (yield, spawn, park, channel and socket
// fast paths via maybe_preempt) moves it to the global queue. A goroutine
// that never enters the runtime is handled by the hog protocol of the
// syscall-handoff work (sysmon.cpp).
#include "scheduler/sched.hpp"

#include <fmt/core.h>
#include <time.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "goro/runtime.hpp"
#include "scheduler/debug.hpp"
#include "scheduler/proc.hpp"
#include "scheduler/switch.hpp"

namespace goro::detail {

Sched sched;
std::atomic<int> foreign_calls{0};

namespace {

// Picks the next G for a direct switch from a goroutine, or nullptr when the
// slow path (g0, find_runnable) is due. See "Time slices and fairness".
__attribute__((always_inline)) inline G* fast_next(M* m, P* p, bool* inherit) {
  // One P-local flag covers shutdown and a pending retirement.
  if (p->leave_fast_path.load(std::memory_order_relaxed)) return nullptr;
  // One load covers the global queue and the Ms waiting for a P (Sched::gate).
  const std::uint64_t gate = sched.gate.load(std::memory_order_relaxed);
  if (__builtin_expect(gate != 0, 0)) {
    if (Sched::gate_npwait(gate) > 0) return nullptr;  // donate the P at g0
    // Otherwise the global queue holds Gs: serve it on every 61st schedule.
    if (p->schedtick.load(std::memory_order_relaxed) % 61 == 0) return nullptr;
  }
  // Is a timer due? The coarse clock (~4 ns, jiffy resolution) is read on
  // every 4th fast switch only: a P always busy with short goroutines still
  // notices a due timer within a few switches, and the common case of a P
  // with pending deadlines pays one clock read per 4 switches.
  std::int64_t due = p->timers.next_when.load(std::memory_order_relaxed);
  if (due != kNever && (++m->switches & 3) == 0 && due <= coarse_now()) return nullptr;
#if defined(GORO_SCHED_PERTURB)
  if (fastrandn(8) == 0) return nullptr;  // debug: take the slow path at random
#endif
  return p->runq.get(inherit);
}

}  // namespace

static inline void mark_running(M* m, P* p, G* g, bool inherit) {
  if (!inherit) {
    p->schedtick.store(p->schedtick.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  if (g->ctx.sp == nullptr) bind_stack(p, g);  // first run (galloc.cpp "Late stack binding")
  // A flag left from an earlier slice (set before a blocking call, say, and
  // the goroutine queued after it) is not about this one (Go's execute).
  g->preempt.store(false, std::memory_order_relaxed);
  g->status.store(GStatus::kRunning, std::memory_order_relaxed);
  set_curg(m, g);
  p->running_g.store(g, std::memory_order_release);
}

// land()'s out-of-line part: every action but a yield's (proc.hpp).
void land_general(M* m) {
  AfterSwitch action = m->after;
  if (action == AfterSwitch::kNone) return;
  m->after = AfterSwitch::kNone;
  G* prev = m->after_g;
  switch (action) {
    case AfterSwitch::kRunqPut:
      runq_put(m->p, prev, false);
      break;
    case AfterSwitch::kGlobalPut:
      global_put(prev);
      wakep();
      break;
    case AfterSwitch::kCommit:
      if (!m->after_commit(prev, m->after_arg)) {
        // The park was cancelled: the G runs again next.
        prev->status.store(GStatus::kRunnable, std::memory_order_relaxed);
        runq_put(m->p, prev, true);
      }
      break;
    case AfterSwitch::kFree:
      gfree_put(m->p, prev);
      break;
    case AfterSwitch::kNone:
      break;
  }
}

// Leaves the running goroutine `g` (whose after-switch action is already set)
// for the next runnable one on this P, or for g0. Returns when g is resumed,
// with the M it resumed on (callers use it instead of calling current_m()
// again: one opaque call less per switch on the yield and park paths).
//
// Inlined into goro::yield (the switch_away below serves everyone else): a
// yield then makes no call at all on its fast path and keeps its runtime
// entry count in a local. kCallerKeepsState: the caller saves and restores
// the thread state itself (errno and M::locks, in a register across the
// switch) and has checked that the exception globals are clean (sched.hpp
// "clean exception globals"), so nothing is saved or restored here. Leaving
// M::locks alone until the caller stores it is safe because a goroutine
// always lands with M::locks >= 1: whoever switched to it was inside the
// runtime (the check below; schedule_loop raises the count to 1 before it
// switches), so land() runs inside the runtime either way.
template <bool kCallerKeepsState>
__attribute__((returns_nonnull, always_inline)) static inline M* switch_away_inl(M* m, G* g,
                                                                                 bool exiting) {
  P* p = m->p;
  GORO_CHECK(p != nullptr && p->m.load(std::memory_order_relaxed) == m,
             "sched: switch_away without owning a P");
  GORO_CHECK(m->locks.load(std::memory_order_relaxed) > 0,
             "sched: switch_away outside the runtime");
  GORO_CHECK(m->thread_locks == 0,
             "sched: goroutine switched away holding a thread mutex (goro/detail/thread_lock.hpp)");
  if (StackPool::canary_smashed(g->stack)) report_stack_overflow(g);
  ThreadState saved;
  if (!kCallerKeepsState) saved = save_thread_state(m);
  bool inherit = false;
  G* next = fast_next(m, p, &inherit);
  Context* to;
  if (__builtin_expect(next != nullptr, 1)) {
    mark_running(m, p, next, inherit);
    to = &next->ctx;
  } else {
    set_curg(m, nullptr);
    p->running_g.store(nullptr, std::memory_order_relaxed);
    to = &m->g0;
  }
  switch_context(m, &g->ctx, to, exiting);
  // Resumed, possibly on another M.
  M* now = current_m();
  if (!kCallerKeepsState) restore_locks(now, saved);
  finish_switch_sanitizers(now, &g->ctx);
  land(now);
  if (!kCallerKeepsState) restore_thread_state(now, saved);
  return now;
}

__attribute__((returns_nonnull, noinline)) static M* switch_away(M* m, G* g, bool exiting) {
  return switch_away_inl<false>(m, g, exiting);
}

// The yielding goroutine g (m->curg, inside a runtime_enter) goes to the
// tail of its P's queue once it is off its stack (land).
static inline void begin_yield(M* m, G* g) {
  g->preempt.store(false, std::memory_order_relaxed);
  g->status.store(GStatus::kRunnable, std::memory_order_relaxed);
  m->after = AfterSwitch::kRunqPut;
  m->after_g = g;
}

void preempt_current() {
  M* m = runtime_enter();
  G* g = m->curg;
  g->preempt.store(false, std::memory_order_relaxed);
  g->status.store(GStatus::kRunnable, std::memory_order_relaxed);
  m->after = AfterSwitch::kGlobalPut;
  m->after_g = g;
  switch_away(m, g, false);
  runtime_leave();
}

void park(WaitReason reason, ParkCommit commit, void* arg) {
  M* m = runtime_enter();
  G* g = m->curg;
  GORO_CHECK(g != nullptr, "sched: park outside a goroutine");
  g->preempt.store(false, std::memory_order_relaxed);
  g->wait_reason.store(reason, std::memory_order_relaxed);
  g->park_time.store(sched.sysmon_clock.load(std::memory_order_relaxed),
                     std::memory_order_relaxed);  // dumps: minutes
  g->status.store(GStatus::kWaiting, std::memory_order_relaxed);
  P* pp = m->p;
  pp->parks.store(pp->parks.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  m->after = AfterSwitch::kCommit;
  m->after_g = g;
  m->after_commit = commit;
  m->after_arg = arg;
  runtime_leave(switch_away(m, g, false));
}

[[noreturn]] void exit_current() {
  M* m = runtime_enter();  // never left: the landing side inherits the count
  G* g = m->curg;
  P* p = m->p;
  // release pairs with num_goroutines()'s acquire: a caller that sees the
  // count drop also sees everything this goroutine did.
  p->exited.store(p->exited.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  g->status.store(GStatus::kDead, std::memory_order_relaxed);
  m->after = AfterSwitch::kFree;
  m->after_g = g;
  switch_away(m, g, true);
  fatal("sched: a dead goroutine was resumed");
}

void ready(G* g) noexcept {
  GORO_CHECK(g->status.load(std::memory_order_relaxed) == GStatus::kWaiting,
             "sched: ready of a goroutine that is not waiting");
  M* m = runtime_enter();
  if (m == nullptr) {
    // A thread outside the runtime (a resolver, a signal thread). Once the G
    // is queued it may run, finish, and let goro::run tear the runtime down
    // while we are still in wakep(); teardown waits for this count to drain.
    foreign_calls.fetch_add(1, std::memory_order_acq_rel);
    g->status.store(GStatus::kRunnable, std::memory_order_relaxed);
    global_put(g);
    wakep();
    foreign_calls.fetch_sub(1, std::memory_order_acq_rel);
    return;
  }
  g->status.store(GStatus::kRunnable, std::memory_order_relaxed);
  if (m->p != nullptr) {
    bool next = true;
#if defined(GORO_SCHED_PERTURB)
    next = fastrandn(2) == 0;  // debug: do not always favour the readied G
#endif
    runq_put(m->p, g, next);
    // g is on the P this M owns and will run. When this is the only P there
    // is no other P to run it sooner, and wakep's StoreLoad fence was 4% of
    // a 1-P ping-pong. "Only P" means maxprocs is 1 and this P is the live
    // one: a P that a shrink doomed is still ours until our next scheduling
    // point, and if our goroutine now blocks or spins, g must move to P0
    // (issue 16 item 2). (A concurrent grow wakes Ms for its new Ps itself.)
    const int live = sched.gomaxprocs.load(std::memory_order_relaxed);
    if (live > 1 || m->p->id >= live) wakep();
  } else {
    global_put(g);
    wakep();
  }
  runtime_leave();
}

G* current_g() noexcept {
  M* m = current_m();
  return m != nullptr ? m->curg : nullptr;
}

std::uint64_t goroutine_id(const G* g) noexcept {
  return g != nullptr ? g->id.load(std::memory_order_relaxed) : 0;
}

// Entry of every goroutine: the trampoline calls it on the fresh stack.
void g_main() {
  M* m = current_m();
  G* g = m->curg;
  m->locks.store(1, std::memory_order_relaxed);  // runtime code until the body starts
  finish_switch_sanitizers(m, &g->ctx);
  reset_thread_state(m);
  land(m);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  m->locks.store(0, std::memory_order_relaxed);
  try {
    g->task->invoke(g->task_storage);
  } catch (const std::exception& e) {
    goroutine_panic(g, e.what());
  } catch (...) {
    goroutine_panic(g, "unknown exception (not derived from std::exception)");
  }
  g->task->destroy(g->task_storage);
  if (task_on_heap(g)) ::operator delete (g->task_storage, std::align_val_t{kHeapTaskAlign});
  exit_current();
}

void goroutine_panic(G* g, const char* what) {
  std::fflush(stdout);
  const std::source_location at = g->spawned_at.load(std::memory_order_relaxed);
  std::fprintf(stderr, "panic: %s\n\ngoroutine %llu [running]:\n\tspawned at %s:%u (%s)\n", what,
               static_cast<unsigned long long>(g->id.load(std::memory_order_relaxed)),
               at.file_name(), static_cast<unsigned>(at.line()), at.function_name());
  std::fprintf(stderr, "exit status 2\n");
  std::fflush(stderr);
  std::_Exit(2);
}

// The g0 loop of every M: find work, run it, repeat; returns at shutdown.
#if defined(GORO_SCHED_PERTURB)
// Debug: now and then, hand g and the P to another M instead of running g
// here, so every test keeps moving goroutines between threads (even at
// maxprocs 1). Code that caches a thread-local across a switch, or a lock
// owned by the thread, then breaks in the debug run of the suite instead of
// rarely in production. This M goes idle (find_runnable finds no P: stopm).
static bool perturb_migrate(M* m, G* g) {
  if (fastrandn(8) != 0 || sched.stopping.load(std::memory_order_relaxed)) return false;
  P* p = m->p;
  runq_put(p, g, true);  // runnext: the next M runs it first
  m->p = nullptr;
  p->m.store(nullptr, std::memory_order_relaxed);
  p->running_g.store(nullptr, std::memory_order_relaxed);
  startm(p, false);  // an idle M, or a new one
  return true;
}
#endif

void schedule_loop(M* m) {
  for (;;) {
    bool inherit = false;
    G* g = find_runnable(m, &inherit);
    if (g == nullptr) return;
    if (m->spinning) reset_spinning(m);
#if defined(GORO_SCHED_PERTURB)
    if (perturb_migrate(m, g)) continue;
#endif
    P* p = m->p;
    // Raise the count before curg is set: from then on the hog signal
    // handler sees a goroutine on this M, and it must see locks > 0 until the
    // goroutine has landed and restored its own count.
    m->locks.store(1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    mark_running(m, p, g, inherit);
    switch_context(m, &m->g0, &g->ctx, false);
    finish_switch_sanitizers(m, &m->g0);
    land(m);
    m->locks.store(0, std::memory_order_relaxed);  // g0 runs at 0 (curg is null)
  }
}

}  // namespace goro::detail

namespace goro {

void yield() {
  using namespace detail;
  M* m = current_m();
  if (m == nullptr) return;
  G* g = m->curg;
  if (g == nullptr) return;
  // runtime_enter, with the count kept in a local: switch_away_inl<true>
  // neither saves nor restores M::locks, and the count is stored once more
  // after the switch.
  const int locks = raise_locks(m);
  if (__builtin_expect(m->p == nullptr || !eh_globals_clean(m), 0)) {
    // No P (reacquire it first; may change M, g stays ours), or inside a
    // catch block or an unwind: the general switch, which saves everything.
    if (m->p == nullptr) m = reacquire_p(m);
    begin_yield(m, g);
    runtime_leave(switch_away(m, g, false));
    return;
  }
  begin_yield(m, g);
  // errno and the count cross the switch packed in one 64-bit local, which
  // the compiler keeps in rbp, the one register the switch preserves: with
  // errno in a frame slot instead (as switch_away keeps its ThreadState), the
  // store before the switch and the load after it cost a yield 12% (the
  // frames of the two goroutines alternate; docs/benchmarks.md). The
  // exception globals are clean (checked above), so they need no saving.
  const std::uint64_t kept = static_cast<std::uint64_t>(static_cast<std::uint32_t>(*m->errno_slot))
                                 << 32 |
                             static_cast<std::uint32_t>(locks);
  m = switch_away_inl<true>(m, g, false);
  GORO_CHECK(eh_globals_clean(m),
             "sched: a yield landed on a thread holding another goroutine's exception state");
  *m->errno_slot = static_cast<int>(static_cast<std::uint32_t>(kept >> 32));
  std::atomic_signal_fence(std::memory_order_seq_cst);
  m->locks.store(static_cast<int>(static_cast<std::uint32_t>(kept)) - 1,
                 std::memory_order_relaxed);  // runtime_leave
}

void sleep_for(std::chrono::nanoseconds d) {
  sleep_until(std::chrono::steady_clock::now() + d);
}

void sleep_until(std::chrono::steady_clock::time_point t) {
  using namespace detail;
  std::int64_t when =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  if (when <= nanotime()) {
    yield();
    return;
  }
  G* g = current_g();
  GORO_CHECK(g != nullptr, "sched: sleep outside a goroutine");
  Timer timer;
  timer.when = when;
  timer.arg = g;
  timer.detached = true;  // ready() below ends the frame holding it
  timer.fn = [](void* arg, std::uint64_t) { ready(static_cast<G*>(arg)); };
  // The timer is started in the commit, once we are off our stack: it may fire
  // on another M at once, and ready() requires us to be parked.
  park(
      WaitReason::kSleep,
      [](G*, void* t) {
        timer_start(static_cast<Timer*>(t));
        return true;
      },
      &timer);
}

}  // namespace goro
