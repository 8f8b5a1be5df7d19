// Internal entry points shared by the scheduler's files (sched.cpp,
// findrunnable.cpp, galloc.cpp, proc.cpp, sysmon.cpp). Not a public interface.
#pragma once

#include "scheduler/sched.hpp"

namespace goro::gomaxprocs {
struct Resolution;
class MemoryLimitReader;
}  // namespace goro::gomaxprocs

namespace goro::detail {

// sched.cpp
void land_general(M* m);  // see land() below
void schedule_loop(M* m);
void g_main();
[[noreturn]] void goroutine_panic(G* g, const char* what);
[[noreturn]] void exit_current();
void preempt_current();

// syscall.cpp
M* reacquire_p(M* m);
void handoffp(P* p);
void install_preempt_signal();
void uninstall_preempt_signal();
void signal_hog(P* p);

// Runtime entry and exit for code running on a goroutine (or on a plain
// thread: both return quietly when there is no M). Between them M::locks > 0,
// so the hog protocol leaves the P alone; on entry an M whose P was taken
// (hog, or a blocking call) gets one back first. See syscall.cpp "Hogs".
// locks is written only by its own thread (plain load + store, no RMW);
// compiler fences order it against m->p for the thread's signal handler.
// The count belongs to the execution context, not the thread: a goroutine
// saves it when it switches away (sched.hpp ThreadState) and puts it back on
// whatever M it resumes on; g0 runs at 0 and raises it to 1 before handing
// the thread to a goroutine.
// The overloads taking an M are for callers that already hold current_m()
// (read on this thread, after the last possible switch).
// raise_locks is runtime_enter's count update alone, returning the new
// count: for goro::yield, which keeps the count to store it back itself and
// handles a missing P on its own.
inline int raise_locks(M* m) {
  const int n = m->locks.load(std::memory_order_relaxed) + 1;
  m->locks.store(n, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  return n;
}
inline M* runtime_enter(M* m) {
  if (m == nullptr) return nullptr;
  raise_locks(m);
  if (__builtin_expect(m->p == nullptr, 0) && m->curg != nullptr) m = reacquire_p(m);
  return m;
}
inline M* runtime_enter() {
  return runtime_enter(current_m());
}
inline void runtime_leave(M* m) {
  if (m == nullptr) return;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  m->locks.store(m->locks.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
}
inline void runtime_leave() {
  runtime_leave(current_m());
}
// Cooperative preemption point: runtime entries that do not otherwise switch
// call this; it yields to the global queue when sysmon asked (G::preempt).
inline void maybe_preempt(G* g) {
  if (__builtin_expect(g->preempt.load(std::memory_order_relaxed), 0)) preempt_current();
}

// signals.cpp: the calling thread's signal stack, for M m (at thread start and
// exit, on the thread itself).
std::size_t signal_stack_size();
void signal_stack_install(M* m);
void signal_stack_release(M* m);
// The SIGSEGV/SIGBUS handler that reports stack overflows ("Fatal faults").
void install_fault_handlers();
void uninstall_fault_handlers();
// Prints "goroutine N: stack overflow (S KiB), spawned at FILE:LINE" and
// exits with status 2. Async-signal-safe.
[[noreturn]] void report_stack_overflow(const G* g) noexcept;
// The signal thread ("The signal thread"): started on M0 before any other
// runtime thread, stopped after every M has been joined.
void signal_thread_start();
void signal_thread_stop();
// Blocks SIGTERM, SIGINT, SIGHUP and SIGQUIT on the calling thread (each M).
void block_process_signals();

// findrunnable.cpp
G* find_runnable(M* m, bool* inherit);
void reset_spinning(M* m);
void global_put_spill(const RunQueue::Spill& spill);
// Puts g on p's run queue (runnext if next), spilling half a full ring to the
// global queue. The caller owns p. Inline: a yield and a ready run it.
void runq_put_general(P* p, G* g, bool next);
inline void runq_put(P* p, G* g, bool next) {
  GORO_CHECK(p->m.load(std::memory_order_relaxed) == current_m(),
             "sched: runq_put on a P this M does not own");
  if (__builtin_expect(!p->runq.try_put(g, next), 0)) runq_put_general(p, g, next);
}

// Runs the after-switch action left by whoever switched to us (sched.cpp
// "Switching directly between goroutines"). Inline for a yield's action, the
// one on the hot path: an out-of-line dispatch per switch was measurable in
// the yield benchmark.
inline void land(M* m) {
  if (__builtin_expect(m->after == AfterSwitch::kRunqPut, 1)) {
    m->after = AfterSwitch::kNone;
    G* prev = m->after_g;
    runq_put(m->p, prev, false);
    return;
  }
  if (m->after != AfterSwitch::kNone) land_general(m);
}
void global_put(G* g);
void global_put_batch(GQueue& q);
void startm(P* p, bool spinning);
void acquirep(M* m, P* p);
P* pidleget_locked();
// pidleget_locked for a caller that found work it cannot take: when no P is
// idle it sets needspinning (findrunnable.cpp essay). sched.lock held.
P* pidleget_spinning_locked();
// newm could not start a thread for p: gives p back (its queue goes global),
// undoes the spinning count if the M was to spin, and makes sure queued work
// is not left without a spinner (findrunnable.cpp).
void startm_failed(P* p, bool spinning);
void pidleput_locked(P* p);
void stop_the_world_wake_all();

// galloc.cpp
// Callables too large for the top of the stack are heap-allocated with this
// alignment (g_main frees them after the body ends).
inline constexpr std::size_t kHeapTaskAlign = 64;
inline bool task_on_heap(const G* g) {
  auto at = reinterpret_cast<const char*>(g->task_storage);
  if (at == reinterpret_cast<const char*>(g->task_buf)) return false;
  return at < g->stack.lo || at >= g->stack.hi();
}
// The stack size (GORO_STACK_SIZE or the default when 0) and the stack pool;
// galloc_free_all releases the pool, the G slabs and the dead-G lists.
void galloc_init(std::size_t stack_size);
void galloc_free_all();
G* alloc_g();  // a new G, in sched.allg
void attach_stack(G* g, const Stack& s);
void gfree_put(P* p, G* g);
// Late stack binding (galloc.cpp): gives g, which holds a stack credit and has
// no stack yet, a stack from p's cache or the pool, with its first frame.
void bind_stack(P* p, G* g);
// p's cached stacks and unspent credits back to the pool (p retires).
void stack_cache_flush(P* p);
// Idle Ps' hot stacks that a goroutine ran on since their last probe, out of
// their caches, probed and back to the pool (galloc.cpp "Idle Ps' hot
// stacks"), from Ps idle for at least `min_idle` ns (as far as the calls
// saw: a P counts as idle since the first call that found it idle at its
// current schedtick). Takes sched.lock: never under it.
struct IdleStackTrim {
  int taken = 0;         // stacks given back
  bool pending = false;  // such stacks left (not idle for long enough, or over a batch)
};
IdleStackTrim trim_idle_hot_stacks(std::int64_t min_idle);
StackPool& stack_pool();

// proc.cpp
// Creates an M (an OS thread) that starts with P p. Reports and gives the P
// back when the thread limit or the OS refuses.
void newm(P* p, bool spinning);

// procresize.cpp
bool p_is_doomed(const P* p);  // beyond gomaxprocs: to be retired
// If m's P is still asked to retire (checked under sched.lock), retires it
// and leaves m without a P; false if a grow cancelled the request.
bool retire_owned_p(M* m);
void retire_idle_locked(P* p);  // sched.lock held; p is not on the idle list
void flush_moved_timers();      // after a retirement, sched.lock not held (procresize.cpp)
int resize_procs(int n);        // returns the previous count
void sysmon_update_maxprocs();
// sysmon, at most once a second: re-read the cgroup memory limit.
void sysmon_update_memory_limit();
// Reads the memory limit with `reader` and publishes it (limit, directory).
void publish_memory_limit(goro::gomaxprocs::MemoryLimitReader& reader);
// The MaxprocsSource (as int) a resolution stands for.
int maxprocs_source_of(const goro::gomaxprocs::Resolution& r);
void gfree_spill_locked(P* p);  // galloc.cpp: p's dead-G cache to the global one

// sysmon.cpp
void sysmon_start();
void sysmon_stop();
void wake_sysmon();
void wake_sysmon_locked();  // sched.lock held
void wake_sysmon_if_sleeping();

}  // namespace goro::detail
