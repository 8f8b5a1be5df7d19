// Deadlock detection (Go's checkdead, proc.go): "all goroutines are asleep".
//
// check_dead_locked() is called by an M that has given up its P, in stopm,
// in the same sched.lock critical section that puts it on the idle M list
// (Go calls checkdead from mput the same way). If at that moment nothing in
// the process can ever make a goroutine runnable again, the program is
// deadlocked: print every goroutine with its wait reason and exit with
// status 2, as Go does, instead of hanging silently.
//
// Why inside that critical section: the last M to go idle must be the one
// that sees every M idle. When the check ran just before stopm, under its
// own lock, two Ms going idle together could each check while the other was
// still outside midle, then both sleep: no report, a silent hang (seen in CI
// under TSan; Deadlock.ReportedWhenManyMsGoIdleAtOnce). With the insertion
// and the check atomic under sched.lock, whichever M inserts itself last
// counts all the others.
//
// "Nothing can" is checked conservatively, under sched.lock so that no P or M
// changes state underneath (startm, wakep and pidleget all take it):
//   - not shutting down; every M is idle (in midle, the caller included), so
//     none is running a goroutine, a park commit, a timer callback, or
//     blocked in the poller (an M there is not in midle) or in a syscall;
//   - every P is idle, the global queue and every local queue empty;
//   - no timer is pending on any P (a sleep, a deadline, after(), a select
//     timeout could wake someone);
//   - the poller has no waiters (a socket could wake someone);
//   - no thread outside the runtime exists that could still send, close or
//     unlock something (a std::thread feeding a channel with try_send): the
//     process has no more threads than the Ms plus sysmon and the signal
//     thread (signals.cpp; it only runs signal handlers) (plus the
//     sanitizer's own), and no sync operation ever came from outside
//     (note_foreign_sync);
//   - every live goroutine is kWaiting with a wait reason that only another
//     goroutine can end (channel, select, mutex, waitgroup, cond, ...): not
//     io wait, sleep or syscall. A goroutine in any other state (running,
//     runnable) means somebody is still at work.
// A false report kills a healthy program, a missed one only leaves a hang
// that Go would have reported, so every doubt returns "not dead". Known
// misses: a deadlock while an M is parked in the poller with no waiters left
// is reported only when that M next sleeps. GORO_DEBUG=checkdead=0 turns the
// check off.
#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "scheduler/checkdead.hpp"
#include "scheduler/debug.hpp"
#include "scheduler/proc.hpp"

namespace goro::detail {

namespace {

std::atomic<bool> g_foreign_sync{false};

bool is_sync_wait(WaitReason r) {
  switch (r) {
    case WaitReason::kChanReceive:
    case WaitReason::kChanSend:
    case WaitReason::kChanReceiveNilChan:
    case WaitReason::kSelect:
    case WaitReason::kSelectNoCases:
    case WaitReason::kMutex:
    case WaitReason::kRWMutexRead:
    case WaitReason::kRWMutexWrite:
    case WaitReason::kWaitGroup:
    case WaitReason::kCond:
    case WaitReason::kSemaphore:
    case WaitReason::kOnce:
    case WaitReason::kContext:
    case WaitReason::kForever:
      return true;
    case WaitReason::kNone:
    case WaitReason::kSleep:
    case WaitReason::kIOWait:
    case WaitReason::kSyscall:
      return false;
  }
  return false;
}

// Threads the sanitizer runtime may run beside ours (TSan's background
// thread); a foreign thread hidden by this allowance is still caught by
// note_foreign_sync once it touches a goro primitive.
#if defined(GORO_TSAN)
constexpr long kSanitizerThreads = 1;
#else
constexpr long kSanitizerThreads = 0;
#endif

// Threads in this process (/proc/self/status), or -1 if unknown.
long process_threads() {
  std::FILE* f = std::fopen("/proc/self/status", "re");
  if (f == nullptr) return -1;
  char line[256];
  long n = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "Threads:", 8) == 0) {
      n = std::strtol(line + 8, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return n;
}

bool enabled() {
  static const bool on = debug_option_long("checkdead", 1) != 0;
  return on;
}

// sched.lock held.
bool anything_can_wake_locked() {
  if (sched.stopping.load(std::memory_order_relaxed)) return true;
  if (g_foreign_sync.load(std::memory_order_relaxed)) return true;
  if (sched.nmidle < sched.mcount.load(std::memory_order_relaxed)) return true;
  if (sched.npidle.load(std::memory_order_relaxed) != sched.gomaxprocs.load()) return true;
  if (sched.runq_size() != 0) return true;
  if (sched.lastpoll.load(std::memory_order_relaxed) == 0) return true;  // an M polls
  if (sched.poller != nullptr && sched.poller->has_waiters()) return true;
  for (P* p : sched.allp) {
    if (!p->runq.empty()) return true;
    if (p->timers.next_when.load(std::memory_order_relaxed) != kNever) return true;
  }
  // Ms (M0 included) + sysmon + the signal thread: any other thread could be
  // a waker.
  const long threads = process_threads();
  if (threads < 0 || threads > sched.mcount.load() + 2 + kSanitizerThreads) return true;
  return false;
}

}  // namespace

void note_foreign_sync() noexcept {
  if (!g_foreign_sync.load(std::memory_order_relaxed)) {
    g_foreign_sync.store(true, std::memory_order_relaxed);
  }
}

// Prints one line per live goroutine (Go's traceback header, without frames:
// where it was spawned stands in for the stack).
void dump_goroutines(std::FILE* out) {
  const std::int64_t now = nanotime();
  std::lock_guard<std::mutex> lock(sched.allg_lock);
  for (G* g = sched.allg; g != nullptr; g = g->alllink) {
    // acquire pairs with start_g's release: the id and spawn site written
    // before the G became runnable are visible (the SIGQUIT dump runs while
    // goroutines are being spawned).
    const GStatus st = g->status.load(std::memory_order_acquire);
    if (st == GStatus::kIdle || st == GStatus::kDead) continue;
    std::string state = st == GStatus::kWaiting
                            ? wait_reason_string(g->wait_reason.load(std::memory_order_relaxed))
                            : gstatus_string(st);
    if (st == GStatus::kWaiting) {
      const std::int64_t minutes =
          (now - g->park_time.load(std::memory_order_relaxed)) / 60'000'000'000;
      if (minutes > 0) state += fmt::format(", {} minutes", minutes);
    }
    const std::source_location at = g->spawned_at.load(std::memory_order_relaxed);
    fmt::print(out, "goroutine {} [{}]:\n\tspawned at {}:{} ({})\n\n",
               g->id.load(std::memory_order_relaxed), state, at.file_name(), at.line(),
               at.function_name());
  }
}

void check_dead_locked() {
  if (!enabled()) return;
  // Cheap filter first: this runs every time an M goes to sleep, usually
  // while other Ps are busy.
  if (sched.npidle.load(std::memory_order_relaxed) != sched.gomaxprocs.load()) return;
  if (anything_can_wake_locked()) return;
  std::size_t asleep = 0;
  {
    std::lock_guard<std::mutex> allg(sched.allg_lock);
    for (G* g = sched.allg; g != nullptr; g = g->alllink) {
      const GStatus st = g->status.load(std::memory_order_relaxed);
      if (st == GStatus::kIdle || st == GStatus::kDead) continue;
      if (st != GStatus::kWaiting || !is_sync_wait(g->wait_reason.load(std::memory_order_relaxed)))
        return;
      ++asleep;
    }
  }
  if (asleep == 0) return;
  exit_with_goroutine_dump("fatal error: all goroutines are asleep - deadlock!");
}

void exit_with_goroutine_dump(const char* header) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s\n\n", header);
  dump_goroutines(stderr);
  std::fputs("exit status 2\n", stderr);
  std::fflush(stderr);
  std::_Exit(2);
}

}  // namespace goro::detail
