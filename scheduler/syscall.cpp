// Blocking calls and CPU hogs: handing the P to another thread.
//
// ## Syscall handoff (Go's entersyscall/exitsyscall in runtime/proc.go)
// enter_syscall leaves the P attached but marks it kSyscall and detaches it
// from the M (p->m = nullptr, m->oldp = p): a few plain stores and a release
// store of the status, no lock. sysmon (sysmon.cpp retake) watches kSyscall
// Ps: one that has stayed in the *same* syscall (P::syscalltick unchanged)
// for more than one sysmon tick is retaken with a CAS kSyscall -> kIdle when
// it has queued work or nobody else is idle or spinning, or unconditionally
// after 10 ms, and handed to another M (handoffp). exit_syscall takes the P
// back with the opposite CAS kSyscall -> kRunning; whichever CAS wins owns
// the P, so the two can never both think they hold it. If it lost, the M
// looks for an idle P, and failing that queues its goroutine on the global
// queue and parks itself.
//
// ## Hogs: goroutines that never reach a scheduling point
// C++ code cannot be stopped at an arbitrary instruction (allocator locks,
// thread-locals), so goro never switches a hog out. Its P moves instead:
// the hog is treated exactly like a goroutine in a syscall.
//   1. sysmon sees a P whose schedtick has not moved for 10 ms; it sets the
//      goroutine's preempt flag (honoured at the next runtime entry) and
//      sends SIGURG to the P's thread (as Go does; SIGURG is rarely used by
//      programs and harmless when spurious).
//   2. The handler runs on the hog's own thread, so it needs no memory
//      barrier against that thread, only compiler fences. If M::locks == 0
//      the thread is in goroutine code, which never touches m->p (every
//      runtime function that does holds locks > 0 for its whole duration, see
//      runtime_enter), so the handler performs enter_syscall's stores itself:
//      the P becomes kSyscall and the M has no P.
//      If locks > 0 it does nothing: the thread is inside the runtime, will
//      pass a preemption point, and sysmon re-signals on its next tick if not.
//   3. sysmon's next tick sees the kSyscall P and retakes it as above.
//   4. The hog keeps running without a P. At its next runtime entry,
//      runtime_enter notices m->p == nullptr and calls exit_syscall first.
// M::locks across switches: the count belongs to the execution context. A
// goroutine keeps it in its switching frame (sched.hpp ThreadState) and
// restores it on the M it resumes on; g0 runs at 0 and sets 1 before it sets curg, so
// the handler never sees a goroutine on the M with a zero count until that
// goroutine is back in its own code (schedule_loop, g_main, switch_away).
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>

#include "goro/detail/syscall.hpp"
#include "scheduler/debug.hpp"
#include "scheduler/proc.hpp"
#include "scheduler/switch.hpp"

namespace goro::detail {
namespace {

struct sigaction g_old_sigurg;
bool g_sigurg_installed = false;

// Gives up the P held by m (which must hold one): enter_syscall's stores.
// Runs on m's thread, in goroutine context or in its signal handler.
inline void detach_p(M* m, G* g, const char* what) {
  P* p = m->p;
  g->syscall_what.store(what, std::memory_order_relaxed);
  p->syscalltick.store(p->syscalltick.load(std::memory_order_relaxed) + 1,
                       std::memory_order_relaxed);
  m->oldp = p;
  p->m.store(nullptr, std::memory_order_relaxed);
  p->owner_tid.store(0, std::memory_order_relaxed);
  m->p = nullptr;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  // release: sysmon (or the M it hands the P to) sees all of the above after
  // its CAS on the status.
  p->status.store(PStatus::kSyscall, std::memory_order_release);
}

void on_sigurg(int sig, siginfo_t* info, void* uctx) {
  int saved = errno;
  M* m = current_m();
  if (m != nullptr) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    G* g = m->curg;
    if (g != nullptr && m->p != nullptr && m->locks.load(std::memory_order_relaxed) == 0 &&
        m->nopreempt.load(std::memory_order_relaxed) == 0 &&
        g->preempt.load(std::memory_order_relaxed)) {
      g->syscall_since.store(coarse_now(), std::memory_order_relaxed);
      detach_p(m, g, "running without a scheduling point");
    }
  } else if (g_old_sigurg.sa_flags & SA_SIGINFO) {
    // Not one of ours: pass it on to whoever had SIGURG before us.
    if (g_old_sigurg.sa_sigaction != nullptr) g_old_sigurg.sa_sigaction(sig, info, uctx);
  } else if (g_old_sigurg.sa_handler != SIG_DFL && g_old_sigurg.sa_handler != SIG_IGN) {
    g_old_sigurg.sa_handler(sig);
  }
  errno = saved;
}

// The P was lost: queue the goroutine and park this M (Go's exitsyscall0).
void exit_syscall_slow(M* m, G* g) {
  g->status.store(GStatus::kRunnable, std::memory_order_relaxed);
  m->after = AfterSwitch::kGlobalPut;
  m->after_g = g;
  set_curg(m, nullptr);
  const ThreadState saved = save_thread_state(m);
  switch_context(m, &g->ctx, &m->g0, false);
  M* now = current_m();
  restore_locks(now, saved);
  finish_switch_sanitizers(now, &g->ctx);
  land(now);
  restore_thread_state(now, saved);
}

}  // namespace

M* nopreempt_reacquire(M* m) noexcept {
  // Called with the hold counted and no P: get one back before taking the
  // lock (the holder must never wait for a P while others wait for it).
  for (;;) {
    if (m->p != nullptr || m->curg == nullptr) return m;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    m->nopreempt.store(m->nopreempt.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    runtime_enter();
    runtime_leave();
    m = current_m();
    m->nopreempt.store(m->nopreempt.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
}

void install_preempt_signal() {
  struct sigaction sa {};
  sa.sa_sigaction = on_sigurg;
  // SA_ONSTACK: on the M's signal stack, never the goroutine's (signals.cpp
  // "Signal stacks"): the goroutine may be close to its stack bottom.
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  g_sigurg_installed = sigaction(SIGURG, &sa, &g_old_sigurg) == 0;
}

void uninstall_preempt_signal() {
  if (g_sigurg_installed) sigaction(SIGURG, &g_old_sigurg, nullptr);
  g_sigurg_installed = false;
}

// A goroutine that lost its P during a blocking call (or to the hog
// protocol) and takes another starts a new time slice on it: the P's
// schedtick moves, so sysmon restarts its clock for the P (retake_running)
// instead of measuring from the tick it last saw there, before the call,
// and flagging the goroutine as a hog at its next look, microseconds after
// the call returned (a signal and a handoff for nothing). The P's own
// goroutine returning to it keeps its slice, as in Go: a loop of short
// calls that never parks is still preempted after 10 ms.
static void acquire_for_new_slice(M* m, P* p) {
  acquirep(m, p);
  p->schedtick.store(p->schedtick.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void signal_hog(P* p) {
  int tid = p->owner_tid.load(std::memory_order_relaxed);
  if (tid != 0) syscall(SYS_tgkill, getpid(), tid, SIGURG);
}

// The hog protocol took this M's P while its goroutine ran its own code; the
// goroutine is now entering the runtime. It may hold locks at this point
// (goro's own, such as a channel's or a poll descriptor's, or the user's), so
// unlike exit_syscall it must not be descheduled: threads that hold Ps could
// be blocked on those very locks. The thread waits for a P instead, with the
// goroutine still on it, and Ps are donated to waiting Ms first
// (pidleput_locked; find_runnable and the fast path step aside for them).
// A P-holder blocked on such a lock looks like a hog to sysmon and loses its
// P the same way, so the wait always ends.
M* reacquire_p(M* m) {
  G* g = m->curg;
  if (g->status.load(std::memory_order_relaxed) == GStatus::kSyscall) {
    fatal(
        "a function run by goro::blocking (or inside a SyscallScope) called into the goro "
        "runtime; blocking code must not use channels, spawns or goro I/O");
  }
  P* oldp = m->oldp;
  PStatus expect = PStatus::kSyscall;
  P* p = nullptr;
  if (oldp != nullptr &&
      oldp->status.compare_exchange_strong(expect, PStatus::kRunning, std::memory_order_acquire)) {
    p = oldp;
  } else {
    std::unique_lock<SchedMutex> lock(sched.lock);
    if (sched.stopping.load(std::memory_order_relaxed)) {
      lock.unlock();
      exit_syscall();  // shutting down: the ordinary path (goroutines are abandoned)
      return current_m();
    }
    p = pidleget_locked();
    if (p == nullptr) {
      m->schedlink = sched.pwait;
      sched.pwait = m;
      sched.add_npwait_locked(1);
      lock.unlock();
      m->park.sleep();
      p = m->nextp;
      m->nextp = nullptr;
      if (p == nullptr) {  // woken by shutdown
        exit_syscall();
        return current_m();
      }
    }
    p->status.store(PStatus::kIdle, std::memory_order_relaxed);  // acquirep makes it running
  }
  m->oldp = nullptr;
  if (p == oldp && p->m.load(std::memory_order_relaxed) != nullptr)
    p->m.store(nullptr, std::memory_order_relaxed);
  if (p == oldp) {
    acquirep(m, p);
  } else {
    acquire_for_new_slice(m, p);
  }
  g->syscall_what.store(nullptr, std::memory_order_relaxed);
  p->running_g.store(g, std::memory_order_release);
  return m;
}

void enter_syscall(const char* what) noexcept {
  M* m = current_m();
  if (m == nullptr || m->curg == nullptr) return;  // a plain thread: nothing to hand off
  m = runtime_enter(m);  // gets a P back first if the hog protocol took it
  G* g = m->curg;
  g->syscall_since.store(coarse_now(), std::memory_order_relaxed);
  g->status.store(GStatus::kSyscall, std::memory_order_relaxed);
  detach_p(m, g, what);
  wake_sysmon_if_sleeping();
  runtime_leave(m);
}

void exit_syscall() noexcept {
  M* m = current_m();
  G* g = m != nullptr ? m->curg : nullptr;
  if (g == nullptr || m->p != nullptr) return;
  m->locks.fetch_add(1, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  P* oldp = m->oldp;
  m->oldp = nullptr;
  g->syscall_what.store(nullptr, std::memory_order_relaxed);
  // Fast path: our P is still waiting for us.
  PStatus expect = PStatus::kSyscall;
  if (oldp != nullptr &&
      oldp->status.compare_exchange_strong(expect, PStatus::kRunning, std::memory_order_acquire)) {
    oldp->m.store(m, std::memory_order_relaxed);
    oldp->owner_tid.store(m->tid, std::memory_order_relaxed);
    m->p = oldp;
  } else {
    // Any idle P.
    P* p = nullptr;
    if (sched.npidle.load(std::memory_order_relaxed) > 0) {
      std::lock_guard<SchedMutex> lock(sched.lock);
      p = pidleget_locked();
    }
    if (p != nullptr) {
      acquire_for_new_slice(m, p);
    } else {
      exit_syscall_slow(m, g);  // resumes later with a P, maybe on another M
      m = current_m();
    }
  }
  g->status.store(GStatus::kRunning, std::memory_order_relaxed);
  m->p->running_g.store(g, std::memory_order_release);
  runtime_leave();
}

// Hands a P taken from a blocked or hogging M to another M (Go's handoffp).
// The caller (sysmon) owns p transiently: its status is kIdle, not on the
// idle list.
void handoffp(P* p) {
  p->running_g.store(nullptr, std::memory_order_relaxed);
  if (!p->runq.empty() || sched.runq_size() > 0) {
    startm(p, false);
    return;
  }
  // Nobody is looking for work: make this P's M a spinner.
  int zero = 0;
  if (sched.nmspinning.load() + sched.npidle.load() == 0 &&
      sched.nmspinning.compare_exchange_strong(zero, 1)) {
    sched.needspinning.store(0, std::memory_order_relaxed);
    startm(p, true);
    return;
  }
  bool start = false;
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    // Work queued, or the last running P while nobody polls the network.
    start = sched.runq_size() > 0 ||
            (sched.npidle.load() == sched.gomaxprocs.load() - 1 && sched.lastpoll.load() != 0 &&
             sched.poller != nullptr && sched.poller->has_waiters());
    if (!start) pidleput_locked(p);
  }
  if (start) {
    startm(p, false);
    return;
  }
  flush_moved_timers();  // pidleput_locked may have retired p
  std::int64_t when = p->timers.next_when.load(std::memory_order_relaxed);
  if (when != kNever) wake_netpoller(when);
}

}  // namespace goro::detail
