// sysmon: the runtime's watchdog thread (Go's sysmon in runtime/proc.go; docs/DESIGN.md "sysmon").
//
// sysmon runs on its own OS thread without a P, so it works even when every
// P is busy or stuck. Each cycle it:
//   - flags goroutines that have held their P for more than 10 ms without a
//     schedule (G::preempt; honoured at the next runtime entry);
//   - polls the network if nobody has for 10 ms (every P busy: the poller
//     would otherwise starve);
//   - re-reads the CPU limit at most once a second and resizes the Ps live
//     when it changed (unless maxprocs was set explicitly; procresize.cpp);
//   - prints the GORO_DEBUG=schedtrace line when due.
// Its sleep starts at 20 µs and doubles after 50 idle cycles (~1 ms of doing
// nothing) up to 10 ms, so a busy runtime is watched closely and a quiet one
// cheaply. When every P is idle (and no trace is requested) it sleeps until
// a P is taken again (pidleget wakes it), so an idle process burns no CPU.
//
// It also frees stacks idle for a period (StackPool::scavenge) and, every
// 10 s, the heap's free pages (malloc_trim, kHeapTrimPeriod), and carries
// out SIGQUIT the way a Go program does: a SIGQUIT (Ctrl-\) to a process
// whose SIGQUIT is at its default action prints "SIGQUIT: quit" and one line
// per goroutine (id, state or wait reason, spawn site) to stderr and exits
// with status 2. The handler only sets a flag and wakes sysmon (both
// async-signal-safe); sysmon, an ordinary thread, prints. A SIGQUIT handler
// installed before goro::run is left alone.
#include <fmt/core.h>
#include <malloc.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "scheduler/checkdead.hpp"
#include "scheduler/debug.hpp"
#include "scheduler/proc.hpp"

namespace goro::detail {
namespace {

constexpr std::int64_t kMinDelay = 20'000;          // 20 µs
constexpr std::int64_t kMaxDelay = 10'000'000;      // 10 ms
constexpr std::int64_t kForcePreempt = 10'000'000;  // Go's forcePreemptNS
constexpr std::int64_t kPollBackstop = 10'000'000;  // poll if nobody has for 10 ms
constexpr std::int64_t kDeepSleepMax = 60'000'000'000;
// The CPU limit is re-read at most once a second (Go's sysmonUpdateGOMAXPROCS);
// while updates are on, a deep sleep lasts at most that long.
constexpr std::int64_t kMaxprocsCheck = 1'000'000'000;
// Free goroutine stacks unused this long are returned to the kernel.
constexpr std::int64_t kScavengePeriod = 500'000'000;
// An idle P's hot stacks go back once it has been idle this long (galloc.cpp
// "Idle Ps' hot stacks"): a bursty server's Ps idle between bursts, and
// their next goroutines should find the pages their last ones committed.
constexpr std::int64_t kIdleStackAge = 1'000'000'000;
// How often free heap pages go back to the kernel (malloc_trim). glibc gives
// each thread an arena and returns a free page in the middle of one only when
// asked: goroutines allocate on whichever M runs them, so a server whose
// connections come and go spreads its peaks over every arena and its RSS
// climbed for as long as it ran (the soak: 45 -> 60 MB in 10 minutes of
// churn; flat with a single arena). Go's background scavenger does this job
// for its own heap. Each call walks every arena under its lock: 1.4-3.2 ms
// on a 30-50 MB heap under load (docs/DESIGN.md "Memory and failure model").
constexpr std::int64_t kHeapTrimPeriod = 10'000'000'000;

std::thread g_thread;
bool g_async_preempt = true;  // GORO_DEBUG=asyncpreemptoff=1 clears it (read at start)
// How long a P may run one goroutine before the hog protocol acts:
// kForcePreempt, or GORO_DEBUG=forcepreemptus=N (read at start, at least
// 50 µs; for stress runs by hand that want the protocol to act thousands of
// times a second: no test sets it yet).
std::int64_t g_force_preempt = kForcePreempt;

// ThreadSanitizer defers asynchronous signals to its own safe points (after a
// blocking call returns, at an intercepted function), so under TSan the hog
// handler does not run where the protocol assumes, and TSan's 5-20x slowdown
// makes ordinary goroutines look like hogs. TSan builds therefore default to
// no hog signal; tests of the protocol itself opt in (asyncpreemptoff=0).
#if defined(GORO_TSAN)
constexpr long kAsyncPreemptOffDefault = 1;
#else
constexpr long kAsyncPreemptOffDefault = 0;
#endif
Note g_note;
std::atomic<bool> g_stop{false};
std::atomic<bool> g_sigquit{false};
struct sigaction g_old_sigquit;
bool g_sigquit_installed = false;
std::atomic<bool> g_deep_sleep{false};   // Go's sched.sysmonwait (written under sched.lock)
std::atomic<bool> g_wake_urgent{false};  // the deep sleep was ended by a blocking call

// What sysmon compensated for, reported on stderr at most once a second
// (with a count of the similar events in between), so a service that blocks
// in file I/O all day does not drown its logs.
void report_handoff(G* g, std::int64_t since, std::int64_t now, bool hog) {
  static std::int64_t last_report = 0;  // sysmon thread only
  static std::uint64_t suppressed = 0;
  if (g == nullptr) return;
  if (now - last_report < 1'000'000'000) {
    ++suppressed;
    return;
  }
  last_report = now;
  const char* what = g->syscall_what.load(std::memory_order_relaxed);
  const std::source_location at = g->spawned_at.load(std::memory_order_relaxed);
  // `since` is 0 when unknown (a preempt flag sysmon did not set): no
  // duration then.
  const std::string how_long =
      since > 0 && since <= now
          ? fmt::format(" for {:.1f} ms", static_cast<double>(now - since) / 1e6)
          : std::string();
  std::string line = fmt::format(
      "goro: sysmon: goroutine {} (spawned at {}:{}) has been {}{}; its P was handed to another "
      "thread",
      g->id.load(std::memory_order_relaxed), at.file_name(), at.line(),
      hog ? "running without a scheduling point"
          : fmt::format("in a blocking call ({})", what != nullptr ? what : "?"),
      how_long);
  if (suppressed != 0) line += fmt::format(" (+{} similar since the last report)", suppressed);
  suppressed = 0;
  line += "\n";
  std::fputs(line.c_str(), stderr);
}

// Ps running the same goroutine for 10 ms: flag it and signal its thread
// (the hog protocol, syscall.cpp). Returns true if it acted.
bool retake_running(P* p, std::int64_t now) {
  std::uint32_t tick = p->schedtick.load(std::memory_order_relaxed);
  // sysmon_when 0: sysmon has not timed this P yet. Its tick may still
  // equal sysmon_tick's initial 0 (a P whose goroutines so far all came
  // from runnext, which does not bump schedtick), and the comparison alone
  // then flagged a goroutine that had just started as a hog running since
  // time 0: a premature handoff, reported without a duration
  // (Hog.SpinningGoroutinesDoNotStallSleepsOrEcho failed on that report
  // about one run in three under ASan).
  if (tick != p->sysmon_tick || p->sysmon_when == 0) {
    p->sysmon_tick = tick;
    p->sysmon_when = now;
    return false;
  }
  if (now - p->sysmon_when < g_force_preempt) return false;
  G* g = p->running_g.load(std::memory_order_acquire);
  if (g == nullptr) return false;
  g->hog_since = p->sysmon_when;
  if (!g->preempt.exchange(true, std::memory_order_relaxed)) {
    sched.preempt_requests.fetch_add(1, std::memory_order_relaxed);
  }
  if (g_async_preempt) signal_hog(p);  // again on every tick until the P moves
  return true;
}

// Ps whose M is in a blocking call (or lost them to the hog protocol): hand
// them to another M once the call has lasted more than one sysmon tick and
// there is work for them (the conditions of Go's retake, runtime/proc.go).
bool retake_syscall(P* p, std::int64_t now) {
  std::uint32_t t = p->syscalltick.load(std::memory_order_relaxed);
  if (t != p->sysmon_syscalltick) {
    p->sysmon_syscalltick = t;
    p->sysmon_syscallwhen = now;
    return false;
  }
  const int others = sched.nmspinning.load() + sched.npidle.load();
  if (p->runq.empty() && others > 0 && p->sysmon_syscallwhen + kForcePreempt > now) return false;
  PStatus expect = PStatus::kSyscall;
  if (!p->status.compare_exchange_strong(expect, PStatus::kIdle, std::memory_order_acq_rel)) {
    return false;  // its M came back first
  }
  G* g = p->running_g.load(std::memory_order_acquire);
  const bool hog = g != nullptr && g->status.load(std::memory_order_relaxed) == GStatus::kRunning;
  (hog ? sched.hog_handoffs : sched.syscall_handoffs).fetch_add(1, std::memory_order_relaxed);
  // A hog has been running since the start of the run sysmon flagged
  // (hog_since), not since this P's last schedule: the goroutine flagged on
  // one P may take the signal on another (its M moved on), whose
  // sysmon_when is its own and may never have been set (the report then
  // gave the uptime as the duration). A blocking call has lasted since it
  // entered the call. Calls under 100 ms are routine handoffs (file I/O)
  // and not reported.
  if (g != nullptr) {
    const std::int64_t since =
        hog ? g->hog_since : g->syscall_since.load(std::memory_order_relaxed);
    if (hog || now - since > 100'000'000) report_handoff(g, since, now, hog);
  }
  handoffp(p);
  return true;
}

// Every P that is not dead, including those a shrink doomed and whose owner
// has not retired them yet: a goroutine that blocks or hogs on one strands
// the work queued behind it (issue 16 item 2).
bool retake(std::int64_t now) {
  bool acted = false;
  for (P* p : sched.allp) {
    switch (p->status.load(std::memory_order_acquire)) {
      case PStatus::kRunning:
        acted |= retake_running(p, now);
        break;
      case PStatus::kSyscall:
        acted |= retake_syscall(p, now);
        break;
      default:
        break;
    }
  }
  return acted;
}

void poll_backstop(std::int64_t now) {
  Poller* poller = sched.poller;
  if (poller == nullptr || !poller->has_waiters()) return;
  std::int64_t last = sched.lastpoll.load(std::memory_order_relaxed);
  if (last == 0 || last + kPollBackstop > now) return;
  if (!sched.lastpoll.compare_exchange_strong(last, now)) return;
  GQueue q;
  poller->poll(0, q);
  if (!q.empty()) {
    sched.netpoll_wakes.fetch_add(static_cast<std::uint64_t>(q.size), std::memory_order_relaxed);
    inject_glist(q);
  }
}

void print_trace(std::int64_t since_start, bool detail);

void on_sigquit(int) {
  const int saved = errno;
  g_sigquit.store(true, std::memory_order_relaxed);
  g_note.wake();
  errno = saved;
}

void quit_if_asked() {
  if (g_sigquit.load(std::memory_order_relaxed)) exit_with_goroutine_dump("SIGQUIT: quit");
}

// Every live P idle, and no doomed P still running (a shrink leaves it to its
// owner, who may block or hog on it first: retake must still watch it).
bool all_idle() {
  const int live = sched.gomaxprocs.load();
  if (sched.npidle.load(std::memory_order_relaxed) != live) return false;
  for (int i = live; i < sched.allp.size(); ++i) {
    if (sched.allp[i]->status.load(std::memory_order_acquire) != PStatus::kDead) return false;
  }
  return true;
}

void loop() {
  const long trace_ms = debug_option_long("schedtrace", 0);
  const bool detail = debug_option_long("scheddetail", 0) == 1;
  const std::int64_t start = nanotime();
  std::int64_t last_trace = start - trace_ms * 1'000'000;
  std::int64_t delay = kMinDelay;
  std::int64_t last_maxprocs_check = start;
  std::int64_t last_scavenge = start;
  std::int64_t last_heap_trim = start;
  int idle = 0;
  while (!g_stop.load(std::memory_order_acquire)) {
    if (idle == 0) {
      delay = kMinDelay;
    } else if (idle > 50) {
      delay = std::min(delay * 2, kMaxDelay);
    }
    g_note.sleep(delay);
    if (g_stop.load(std::memory_order_acquire)) break;
    quit_if_asked();
    sched.sysmon_clock.store(coarse_now(), std::memory_order_relaxed);
    std::int64_t now = nanotime();
    // Before the idle check: a mostly idle process (a goroutine waking every
    // 50 ms) finds sysmon deep asleep nearly every time, and the limit must
    // still be followed within a second or two.
    if (now - last_maxprocs_check >= kMaxprocsCheck) {
      last_maxprocs_check = now;
      sysmon_update_maxprocs();
      sysmon_update_memory_limit();
    }
    if (now - last_scavenge >= kScavengePeriod) {
      last_scavenge = now;
      stack_pool().scavenge();              // free stacks unused for a period (stack.hpp)
      trim_idle_hot_stacks(kIdleStackAge);  // and idle Ps' deep ones (galloc.cpp)
    }
#if defined(__GLIBC__)
    if (now - last_heap_trim >= kHeapTrimPeriod) {
      last_heap_trim = now;
      ::malloc_trim(0);
    }
#endif
    if (trace_ms <= 0 && all_idle()) {
      // Nothing runs: what goroutines left deep in the caches of Ps idle
      // for kIdleStackAge goes back; the sleep ends in time for the others
      // (it may otherwise last a minute).
      const IdleStackTrim stacks = trim_idle_hot_stacks(kIdleStackAge);
      bool sleep = false;
      {
        std::lock_guard<SchedMutex> lock(sched.lock);
        if (all_idle()) {
          g_deep_sleep.store(true, std::memory_order_relaxed);
          sleep = true;
        }
      }
      if (sleep) {
        const bool follow_limit = !sched.maxprocs_explicit.load(std::memory_order_relaxed);
        const std::int64_t longest = follow_limit ? kMaxprocsCheck : kDeepSleepMax;
        g_note.sleep(stacks.pending ? std::min(longest, kScavengePeriod) : longest);
        g_deep_sleep.store(false, std::memory_order_relaxed);
        if (!g_stop.load(std::memory_order_acquire)) quit_if_asked();
        // As Go: only a goroutine entering a blocking call needs sysmon at
        // its quickest (to hand its P off). A P leaving the idle list also
        // wakes sysmon (hogs must still be caught), but keeps the backoff:
        // a 1-P server idles between bursts thousands of times a second,
        // and resetting to 20 us ticks each time cost it ~3% of its CPU.
        if (g_wake_urgent.exchange(false, std::memory_order_relaxed)) idle = 0;
        continue;
      }
    }
    bool acted = retake(now);
    poll_backstop(now);
    if (trace_ms > 0 && now - last_trace >= trace_ms * 1'000'000) {
      last_trace = now;
      print_trace(now - start, detail);
    }
    idle = acted ? 0 : idle + 1;
  }
}

void print_trace(std::int64_t since_start, bool detail) {
  std::string queues, ticks;
  for (P* p : sched.allp) {
    queues += fmt::format("{}{}", queues.empty() ? "" : " ", p->runq.size());
    ticks += fmt::format(" {}", p->schedtick.load(std::memory_order_relaxed));
  }
  int nmidle;
  {
    std::lock_guard<SchedMutex> lock(sched.lock);
    nmidle = sched.nmidle;
  }
  std::string line = fmt::format(
      "SCHED {}ms: gomaxprocs={} idleprocs={} threads={} spinningthreads={} needspinning={} "
      "idlethreads={} runqueue={} [{}] schedticks=[{} ]\n",
      since_start / 1'000'000, sched.gomaxprocs.load(), sched.npidle.load(), sched.mcount.load(),
      sched.nmspinning.load(), sched.needspinning.load(), nmidle, sched.runq_size(), queues, ticks);
  if (detail) {
    for (P* p : sched.allp) {
      M* m = p->m.load(std::memory_order_relaxed);
      line += fmt::format(
          "  P{}: status={} schedtick={} m={} runqsize={} gfreecnt={} timerslen={}\n", p->id,
          static_cast<int>(p->status.load()), p->schedtick.load(),
          m != nullptr ? static_cast<long long>(m->id.load(std::memory_order_relaxed)) : -1LL,
          p->runq.size(), p->ngfree.load(std::memory_order_relaxed),
          p->timers.next_when.load() == kNever ? 0 : 1);
    }
    std::lock_guard<std::mutex> lock(sched.allg_lock);
    for (G* g = sched.allg; g != nullptr; g = g->alllink) {
      // acquire: as in dump_goroutines (checkdead.cpp).
      GStatus st = g->status.load(std::memory_order_acquire);
      if (st == GStatus::kIdle || st == GStatus::kDead) continue;
      const std::source_location at = g->spawned_at.load(std::memory_order_relaxed);
      line += fmt::format("  G{}: status={}({}) spawned at {}:{}\n",
                          g->id.load(std::memory_order_relaxed), static_cast<int>(st),
                          st == GStatus::kWaiting
                              ? wait_reason_string(g->wait_reason.load(std::memory_order_relaxed))
                              : gstatus_string(st),
                          at.file_name(), at.line());
    }
  }
  std::fputs(line.c_str(), stderr);
}

}  // namespace

void sysmon_start() {
  g_stop.store(false);
  sched.sysmon_clock.store(coarse_now(), std::memory_order_relaxed);
  g_async_preempt = debug_option_long("asyncpreemptoff", kAsyncPreemptOffDefault) != 1;
  g_force_preempt = std::max<std::int64_t>(
      debug_option_long("forcepreemptus", kForcePreempt / 1000) * 1000, 50'000);
  g_thread = std::thread(loop);
  struct sigaction cur {};
  if (sigaction(SIGQUIT, nullptr, &cur) == 0 && cur.sa_handler == SIG_DFL) {
    struct sigaction sa {};
    sa.sa_handler = on_sigquit;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    g_sigquit_installed = sigaction(SIGQUIT, &sa, &g_old_sigquit) == 0;
  }
}

void sysmon_stop() {
  if (g_sigquit_installed) {
    sigaction(SIGQUIT, &g_old_sigquit, nullptr);
    g_sigquit_installed = false;
  }
  g_stop.store(true, std::memory_order_release);
  g_note.wake();
  if (g_thread.joinable()) g_thread.join();
}

void wake_sysmon() {
  g_note.wake();
}

void wake_sysmon_if_sleeping() {
  if (g_deep_sleep.load(std::memory_order_relaxed)) {
    g_wake_urgent.store(true, std::memory_order_relaxed);
    g_note.wake();
  }
}

void wake_sysmon_locked() {
  if (g_deep_sleep.load(std::memory_order_relaxed)) {
    g_deep_sleep.store(false, std::memory_order_relaxed);
    g_note.wake();
  }
}

}  // namespace goro::detail
